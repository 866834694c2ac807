"""Small real flowcore graphs the port tests run: LLM blocks on a ScriptedProvider, stub tools."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel

from flowcore import END, START, Graph, interrupt
from flowcore.blocks import BlockDefinition, BlockExecutor, BlockState, add_block
from flowcore.checkpoint.protocol import Checkpointer
from flowcore.graph.compiled import CompiledGraph
from flowcore.llm import (
    LLMRequest,
    LLMResponse,
    ProviderRegistry,
    ScriptedProvider,
    StreamEvent,
    ToolCall,
    Usage,
)
from flowcore.tools import Tool, ToolRunner


class ChatState(BlockState, total=False):
    question: str
    summary: str
    answer: str
    waited: bool


class ChunkedProvider:
    """Streams each answer in the given chunks; an exception in a script fails that call there.

    A script is a list of text chunks, optionally ending with an exception
    raised after the chunks before it were streamed.
    """

    def __init__(self, scripts: list[list[Any]], *, name: str = "chunked") -> None:
        self.name = name
        self.scripts = list(scripts)
        self.requests: list[LLMRequest] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        raise NotImplementedError("ChunkedProvider only streams")

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        script = self.scripts.pop(0)
        text = ""
        for piece in script:
            if isinstance(piece, BaseException):
                raise piece
            text += piece
            yield StreamEvent(kind="text", text=piece)
        response = LLMResponse(text=text, usage=Usage(5, len(script)), model="chunky")
        yield StreamEvent(kind="done", response=response)


def answer_graph(provider: Any, *, name: str = "answer") -> CompiledGraph:
    """One LLM block, ``answer``, on ``provider``."""
    executor = BlockExecutor(providers=ProviderRegistry.single(provider), retry_wait=0)
    block = BlockDefinition(
        id="answer",
        name="Answer",
        description="Answer a question",
        kind="llm",
        input_keys=["question"],
        output_keys=["answer"],
        prompt_template="Answer: {{ question }}",
    )
    graph = Graph(ChatState, name=name)
    add_block(graph, "answer", block, executor, inputs={"question": "<<state.question>>"})
    graph.add_edge(START, "answer")
    return graph.compile(version="1")


class LookupArgs(BaseModel):
    topic: str


class LookupResult(BaseModel):
    fact: str
    internal_score: float


def lookup_tool() -> Tool:
    async def lookup(args: LookupArgs) -> LookupResult:
        return LookupResult(fact=f"{args.topic} is 42", internal_score=0.93)

    return Tool("lookup", "Look a topic up", LookupArgs, LookupResult, lookup, allowlist={"fact"})


def research_block() -> BlockDefinition:
    return BlockDefinition(
        id="research",
        name="Research",
        description="Answer a question, looking things up",
        kind="llm",
        input_keys=["question"],
        output_keys=["answer"],
        prompt_template="Answer: {{ question }}",
        metadata={"tools": ["lookup"]},
    )


def chat_replies(cost: float | None = None) -> list[Any]:
    """Two model calls: one asks for the lookup tool, one answers (streamed word by word)."""

    def usage(i: int, o: int) -> Usage:
        return Usage(i, o) if cost is None else Usage(i, o, cost_usd=cost)

    return [
        LLMResponse(
            text="Let me check.",
            tool_calls=(ToolCall("call-1", "lookup", {"topic": "life"}),),
            usage=usage(12, 3),
            model="small-model",
        ),
        LLMResponse(text='{"answer": "forty two"}', usage=usage(30, 4), model="small-model"),
    ]


def chat_graph(
    *,
    cost: float | None = None,
    checkpointer: Checkpointer | None = None,
    name: str = "chat",
    version: str = "7",
) -> tuple[CompiledGraph, ScriptedProvider]:
    """research (LLM block + tool) -> summarize (plain node)."""
    model = ScriptedProvider(chat_replies(cost))
    executor = BlockExecutor(
        providers=ProviderRegistry.single(model, model="small-model"),
        tools=ToolRunner([lookup_tool()]),
        retry_wait=0,
    )
    graph = Graph(ChatState, name=name)
    add_block(
        graph, "research", research_block(), executor, inputs={"question": "<<state.question>>"}
    )

    def summarize(state: dict[str, Any]) -> dict[str, Any]:
        return {"summary": f"summary: {state['results']['research']['answer']}"}

    graph.add_node("summarize", summarize)
    graph.add_edge(START, "research").add_edge("research", "summarize").add_edge("summarize", END)
    return graph.compile(checkpointer=checkpointer, version=version), model


def gated_graph(gate: asyncio.Event, *, name: str = "gated") -> CompiledGraph:
    """``first`` returns at once; ``wait`` blocks until ``gate`` is set."""
    graph = Graph(ChatState, name=name)

    async def first(state: dict[str, Any]) -> dict[str, Any]:
        return {"answer": "first"}

    async def wait(state: dict[str, Any]) -> dict[str, Any]:
        await gate.wait()
        return {"waited": True}

    graph.add_node("first", first).add_node("wait", wait)
    graph.add_edge(START, "first").add_edge("first", "wait")
    return graph.compile(version="1")


class Explosion(RuntimeError):
    pass


def failing_graph(message: str = "the reactor melted") -> CompiledGraph:
    graph = Graph(ChatState, name="failing")

    def prepare(state: dict[str, Any]) -> dict[str, Any]:
        return {"answer": "prepared"}

    def explode(state: dict[str, Any]) -> dict[str, Any]:
        raise Explosion(message)

    graph.add_node("prepare", prepare).add_node("explode", explode)
    graph.add_edge(START, "prepare").add_edge("prepare", "explode")
    return graph.compile(version="1")


def pausing_graph(checkpointer: Checkpointer) -> CompiledGraph:
    graph = Graph(ChatState, name="pausing")

    def ask(state: dict[str, Any]) -> dict[str, Any]:
        return {"answer": interrupt({"question": "Ship it?", "token": state.get("question")})}

    def finish(state: dict[str, Any]) -> dict[str, Any]:
        return {"summary": f"shipped: {state['answer']}"}

    graph.add_node("ask", ask).add_node("finish", finish)
    graph.add_edge(START, "ask").add_edge("ask", "finish")
    return graph.compile(checkpointer=checkpointer, version="1")


def chatty_graph(calls: int, words: int) -> tuple[CompiledGraph, ScriptedProvider]:
    """``calls`` LLM nodes in a chain, each streaming ``words`` words: many events."""
    replies = [
        LLMResponse(
            text='{"answer": "' + " ".join(f"w{i}.{j}" for j in range(words)) + '"}',
            usage=Usage(10 + i, words),
            model="small-model",
        )
        for i in range(calls)
    ]
    model = ScriptedProvider(replies)
    executor = BlockExecutor(providers=ProviderRegistry.single(model), retry_wait=0)
    block = BlockDefinition(
        id="talk",
        name="Talk",
        description="Say many words",
        kind="llm",
        input_keys=["question"],
        output_keys=["answer"],
        prompt_template="Talk about {{ question }}",
    )
    graph = Graph(ChatState, name="chatty")
    previous = START
    for i in range(calls):
        add_block(graph, f"talk{i}", block, executor, inputs={"question": "ducks"})
        graph.add_edge(previous, f"talk{i}")
        previous = f"talk{i}"
    return graph.compile(version="1"), model
