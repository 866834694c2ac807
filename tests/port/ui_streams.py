"""Real flowcore runs recorded as AI SDK UI message streams, for the `ai` package to check.

Four runs through the executor port, on scripted models (no network):

- ``text_run``: one LLM block streams an answer;
- ``tool_loop``: an LLM block calls the ``lookup`` tool over two model
  calls (three tool calls, one refused by the tool's input schema), then
  answers; a plain node summarizes;
- ``interrupted_run``: an LLM block drafts, then a node asks for approval
  (``interrupt``) and the run pauses;
- ``failed_run``: the model fails mid-answer with a secret in its error;
  the port's redactor removes it.

``write_streams(await record_texts(), directory)`` writes ``<name>.sse`` (the exact bytes a
client would receive) for each; ``python -m port.ui_streams DIR`` (from
``tests/``) does the same by hand.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from flowcore import END, START, Graph, interrupt
from flowcore.blocks import BlockDefinition, BlockExecutor, add_block
from flowcore.checkpoint import InMemoryCheckpointer
from flowcore.graph.compiled import CompiledGraph
from flowcore.llm import LLMResponse, ProviderRegistry, ScriptedProvider, ToolCall, Usage
from flowcore.port import Caller, InProcExecutor, RunOptions, RunRequest
from flowcore.port.ui_stream import ui_message_stream
from flowcore.secrets import SecretRedactor
from flowcore.tools import ToolRunner

from .graphs import ChatState, ChunkedProvider, lookup_tool, research_block

SECRET = "sk-live-ui-stream-0123456789abcdef"
ANSWER = (
    "Ducks paddle with webbed feet, keep dry under a coat of oiled feathers, "
    "and sleep with one eye open while half of their brain rests."
)
STREAMS = ("text_run", "tool_loop", "interrupted_run", "failed_run")


def _llm_block(block_id: str, prompt: str, tools: list[str] | None = None) -> BlockDefinition:
    return BlockDefinition(
        id=block_id,
        name=block_id.title(),
        description=f"{block_id} with a model",
        kind="llm",
        input_keys=["question"],
        output_keys=["answer"],
        prompt_template=prompt,
        metadata={"tools": tools} if tools else {},
    )


def text_graph() -> CompiledGraph:
    """``answer``: one model call streaming a sentence word by word."""
    model = ScriptedProvider(
        [LLMResponse(json.dumps({"answer": ANSWER}), usage=Usage(9, 40), model="m1")]
    )
    executor = BlockExecutor(providers=ProviderRegistry.single(model), retry_wait=0)
    graph = Graph(ChatState, name="text")
    block = _llm_block("answer", "Answer: {{ question }}")
    add_block(graph, "answer", block, executor, inputs={"question": "<<state.question>>"})
    graph.add_edge(START, "answer")
    return graph.compile(version="1")


def tool_loop_graph() -> CompiledGraph:
    """``research`` (model -> tools -> model -> tools -> model) then ``summarize``."""
    model = ScriptedProvider(
        [
            LLMResponse(
                "Let me check.",
                tool_calls=(ToolCall("call-1", "lookup", {"topic": "life"}),),
                usage=Usage(12, 3),
                model="m1",
            ),
            LLMResponse(
                "Two more lookups.",
                tool_calls=(
                    ToolCall("call-2", "lookup", {"topic": "ducks"}),
                    ToolCall("call-3", "lookup", {"subject": "geese"}),  # refused: no topic
                ),
                usage=Usage(30, 4),
                model="m1",
            ),
            LLMResponse('{"answer": "life is 42, ducks are 42"}', usage=Usage(50, 8), model="m1"),
        ]
    )
    executor = BlockExecutor(
        providers=ProviderRegistry.single(model),
        tools=ToolRunner([lookup_tool()]),
        retry_wait=0,
    )
    graph = Graph(ChatState, name="tool_loop")
    add_block(
        graph, "research", research_block(), executor, inputs={"question": "<<state.question>>"}
    )

    def summarize(state: dict[str, Any]) -> dict[str, Any]:
        return {"summary": f"summary: {state['results']['research']['answer']}"}

    graph.add_node("summarize", summarize)
    graph.add_edge(START, "research").add_edge("research", "summarize").add_edge("summarize", END)
    return graph.compile(version="1")


def interrupted_graph() -> CompiledGraph:
    """``draft`` (model) then ``approve``, which asks a person and pauses the run."""
    model = ScriptedProvider(
        [LLMResponse('{"answer": "Ship on Friday."}', usage=Usage(8, 5), model="m1")]
    )
    executor = BlockExecutor(providers=ProviderRegistry.single(model), retry_wait=0)
    graph = Graph(ChatState, name="approval")
    block = _llm_block("draft", "Draft a plan for {{ question }}")
    add_block(graph, "draft", block, executor, inputs={"question": "<<state.question>>"})

    def approve(state: dict[str, Any]) -> dict[str, Any]:
        plan = state["results"]["draft"]["answer"]
        return {"summary": interrupt({"question": "Approve this plan?", "plan": plan})}

    graph.add_node("approve", approve)
    graph.add_edge(START, "draft").add_edge("draft", "approve").add_edge("approve", END)
    return graph.compile(checkpointer=InMemoryCheckpointer(), version="1")


def failed_graph() -> CompiledGraph:
    """``answer``: the model streams two pieces, then fails with a secret in its message."""
    failure = ConnectionError(f"upstream refused key {SECRET}")
    # Longer than what the redactor holds back, so part of the answer is sent before the failure.
    pieces: list[Any] = [f"{word} " for word in ANSWER.split()]
    model = ChunkedProvider([[*pieces, failure]])
    executor = BlockExecutor(providers=ProviderRegistry.single(model), retry_wait=0)
    graph = Graph(ChatState, name="failing_answer")
    block = _llm_block("answer", "Answer: {{ question }}")
    add_block(graph, "answer", block, executor, inputs={"question": "<<state.question>>"})
    graph.add_edge(START, "answer")
    return graph.compile(version="1")


def executor() -> InProcExecutor:
    """One executor serving the four graphs, redacting :data:`SECRET`."""
    return InProcExecutor(
        graphs={
            "text_run": text_graph(),
            "tool_loop": tool_loop_graph(),
            "interrupted_run": interrupted_graph(),
            "failed_run": failed_graph(),
        },
        redactor=SecretRedactor([SECRET]),
    )


def request(name: str) -> RunRequest:
    """The request that records stream ``name`` (the interrupted run uses a thread)."""
    options = RunOptions(thread_id="thread-1") if name == "interrupted_run" else RunOptions()
    return RunRequest(name, {"question": "ducks"}, Caller(f"req-{name}", f"trace-{name}"), options)


async def stream_text(runner: InProcExecutor, name: str) -> AsyncIterator[str]:
    """The SSE lines of one recorded run, as a client would receive them."""
    async for line in ui_message_stream(runner.run(request(name)), message_id=f"msg-{name}"):
        yield line


async def record_texts() -> dict[str, str]:
    """Run the four graphs; the UI message stream text of each, by name."""
    async with executor() as runner:
        return {
            name: "".join([line async for line in stream_text(runner, name)]) for name in STREAMS
        }


def write_streams(texts: dict[str, str], directory: Path) -> dict[str, Path]:
    """Write ``<name>.sse`` for each recorded stream into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {name: directory / f"{name}.sse" for name in texts}
    for name, path in paths.items():
        path.write_text(texts[name], encoding="utf-8")
    return paths


if __name__ == "__main__":  # pragma: no cover - a convenience for looking at the files
    for written in write_streams(asyncio.run(record_texts()), Path(sys.argv[1])).values():
        print(written)
