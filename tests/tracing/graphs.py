"""A tool-loop graph for the tracing specs, importing nothing of OpenTelemetry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from flowcore import END, START, Graph
from flowcore.blocks import BlockDefinition, BlockExecutor, BlockState, add_block
from flowcore.llm import LLMResponse, ProviderRegistry, ScriptedProvider, ToolCall, Usage
from flowcore.tools import Tool, ToolRunner


class Query(BaseModel):
    topic: str


class Found(BaseModel):
    facts: list[str]


async def lookup(args: Query) -> Found:
    if args.topic == "broken":
        raise ConnectionError("archive unreachable")
    return Found(facts=[f"{args.topic}: ok"])


TOOLS = ToolRunner([Tool("lookup", "Look up", Query, Found, lookup, allowlist={"facts"})])


def asks(*ids_and_topics: tuple[str, str]) -> LLMResponse:
    calls = tuple(ToolCall(i, "lookup", {"topic": t}) for i, t in ids_and_topics)
    return LLMResponse(
        tool_calls=calls, usage=Usage(30, 7), model="m-2024", finish_reason="tool_calls"
    )


def answers(text: str) -> LLMResponse:
    return LLMResponse(text=text, usage=Usage(50, 5), model="m-2024", finish_reason="stop")


def agent_block(block_id: str) -> BlockDefinition:
    return BlockDefinition(
        id=block_id,
        name=block_id,
        description="an agent",
        kind="llm",
        input_keys=["question"],
        output_keys=["answer"],
        prompt_template="{{ question }}",
        model="m",
        metadata={"tools": ["lookup"]},
        max_retries=0,
    )


class S(BlockState, total=False):
    question: str
    done: bool


def tool_loop_graph(scripts: dict[str, Sequence[LLMResponse]], **compile_args: Any) -> Any:
    """One LLM-with-tools node per script, all in parallel from START, then ``join``."""
    graph = Graph(S, name="traced")
    for name, script in scripts.items():
        executor = BlockExecutor(
            providers=ProviderRegistry.single(ScriptedProvider(list(script))),
            tools=TOOLS,
            retry_wait=0.0,
        )
        add_block(
            graph, name, agent_block(name), executor, inputs={"question": "<<state.question>>"}
        )
        graph.add_edge(START, name).add_edge(name, "join")
    graph.add_node("join", lambda state: {"done": True}).add_edge("join", END)
    return graph.compile(**compile_args)
