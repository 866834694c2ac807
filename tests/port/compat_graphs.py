"""The conformance kit's four targets, rebuilt as LangGraph-style graphs on flowcore's compat layer.

Each does what its native twin in :mod:`flowcore.testing.graphs` does, with
``flowcore.compat.langgraph`` code: ``simple`` answers through two model
calls of a ``ScriptedProvider`` (the first asks for a tool, whose result is
a ``ToolMessage``) and ``summarize`` writes a summary; ``slow`` waits for a
gate file; ``failing`` raises in its second node; ``pausing`` asks with
``interrupt()`` and finishes with the answer (on an ``InMemorySaver``: the
kit resumes it in the same process).
"""

from __future__ import annotations

import asyncio
import os
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import (
    END,
    START,
    AnyMessage,
    CompiledStateGraph,
    InMemorySaver,
    StateGraph,
    ToolMessage,
    add_messages,
    ask_provider,
    get_stream_writer,
    interrupt,
)
from flowcore.compat.langgraph._prebuilt import from_llm_response, to_llm_messages
from flowcore.llm import LLMRequest, LLMResponse, ScriptedProvider, ToolCall, Usage
from flowcore.testing.graphs import (
    FAILING,
    GATE_TIMEOUT,
    PAUSING,
    RESUME_VALUE,
    SIMPLE,
    SIMPLE_DATA,
    SIMPLE_OUTPUT,
    SLOW,
    KitFailure,
    KitTarget,
    KitTargets,
)

MODEL_USAGE = ((12, 5), (20, 4))
"""(input, output) tokens of simple's two model calls."""


class SimpleState(TypedDict, total=False):
    question: str
    messages: Annotated[list[AnyMessage], add_messages]
    answer: str
    summary: str


def _script() -> list[LLMResponse | str]:
    (in1, out1), (in2, out2) = MODEL_USAGE
    return [
        LLMResponse(
            text="Let me look that up",
            tool_calls=(ToolCall("kit-call-1", "kit_lookup", {"topic": "the answer"}),),
            usage=Usage(in1, out1),
            model="kit-model",
            finish_reason="tool_calls",
        ),
        LLMResponse(text="forty two", usage=Usage(in2, out2), model="kit-model"),
    ]


async def _research(state: SimpleState) -> dict[str, Any]:
    # A fresh scripted model per execution keeps the graph reusable for many runs.
    model = ScriptedProvider(_script(), name="kit")
    # ask_provider bills each request to the node (model.complete alone would not).
    first = from_llm_response(await ask_provider(model, LLMRequest(messages=())))
    call = first.tool_calls[0]
    looked_up = ToolMessage('{"facts": 3}', tool_call_id=call["id"], name=call["name"])
    messages = [first, looked_up]
    second = from_llm_response(
        await ask_provider(model, LLMRequest(messages=to_llm_messages(messages)))
    )
    return {"messages": [*messages, second], "answer": second.text}


def _summarize(state: SimpleState) -> dict[str, Any]:
    get_stream_writer()(dict(SIMPLE_DATA))
    return {"summary": f"summary: {state['answer']}"}


def simple_graph() -> CompiledStateGraph:
    graph = StateGraph(SimpleState)
    graph.add_node("research", _research)
    graph.add_node("summarize", _summarize)
    graph.add_edge(START, "research")
    graph.add_edge("research", "summarize")
    graph.add_edge("summarize", END)
    compiled: CompiledStateGraph = graph.compile(name=SIMPLE)
    return compiled


class SlowState(TypedDict, total=False):
    gate: str
    gate_opened: bool


async def _wait_for_gate(state: SlowState) -> dict[str, Any]:
    gate = state.get("gate")
    if not gate:
        raise KitFailure("the compat kit.slow needs input {'gate': '<path of a file>'}")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + GATE_TIMEOUT
    while not await asyncio.to_thread(os.path.exists, gate):
        if loop.time() > deadline:
            raise KitFailure(f"the compat kit.slow waited {GATE_TIMEOUT:g} s for its gate")
        await asyncio.sleep(0.01)
    return {"gate_opened": True}


def slow_graph() -> CompiledStateGraph:
    graph = StateGraph(SlowState)
    graph.add_node("wait", _wait_for_gate)
    graph.add_edge(START, "wait")
    graph.add_edge("wait", END)
    compiled: CompiledStateGraph = graph.compile(name=SLOW)
    return compiled


class FailingState(TypedDict, total=False):
    prepared: bool


def _prepare(state: FailingState) -> dict[str, Any]:
    return {"prepared": True}


def _explode(state: FailingState) -> dict[str, Any]:
    raise KitFailure("the compat kit.failing failed on purpose in node 'explode'")


def failing_graph() -> CompiledStateGraph:
    graph = StateGraph(FailingState)
    graph.add_node("prepare", _prepare)
    graph.add_node("explode", _explode)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "explode")
    graph.add_edge("explode", END)
    compiled: CompiledStateGraph = graph.compile(name=FAILING)
    return compiled


class PausingState(TypedDict, total=False):
    draft: str
    answer: Any
    reply: str


def _ask(state: PausingState) -> dict[str, Any]:
    answer = interrupt({"question": "approve the draft?", "draft": state.get("draft", "")})
    return {"answer": answer}


def _finish(state: PausingState) -> dict[str, Any]:
    return {"reply": f"resumed with {state['answer']!r}"}


def pausing_graph(checkpointer: Any = None) -> CompiledStateGraph:
    graph = StateGraph(PausingState)
    graph.add_node("ask", _ask)
    graph.add_node("finish", _finish)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "finish")
    graph.add_edge("finish", END)
    saver = checkpointer if checkpointer is not None else InMemorySaver()
    compiled: CompiledStateGraph = graph.compile(checkpointer=saver, name=PAUSING)
    return compiled


def build_compat_kit_graphs() -> dict[str, CompiledStateGraph]:
    """The four compat kit graphs by the kit's registered names."""
    return {
        SIMPLE: simple_graph(),
        SLOW: slow_graph(),
        FAILING: failing_graph(),
        PAUSING: pausing_graph(),
    }


def compat_kit_targets(refs: dict[str, Any], graphs: dict[str, CompiledStateGraph]) -> KitTargets:
    """KitTargets naming ``refs[name]`` (a graph or its registered name) for each kit graph."""

    def target(name: str, **kw: Any) -> KitTarget:
        return KitTarget(refs[name], name, graphs[name].version, **kw)

    return KitTargets(
        simple=target(SIMPLE, input={"question": "what is the answer?"}, output=SIMPLE_OUTPUT),
        slow=target(SLOW, output={"gate_opened": True}),
        failing=target(FAILING),
        pausing=target(PAUSING, input={"draft": "kit draft"}, output={"answer": RESUME_VALUE}),
        resume_value=RESUME_VALUE,
    )
