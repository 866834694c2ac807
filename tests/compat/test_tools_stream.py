"""Spec: LangChain tools in ToolNode, ToolRuntime, stream_mode="tools", runnables as nodes.

``ToolNode`` calls a LangChain tool with the whole tool call and the node's
config, filling in a ``runtime: ToolRuntime`` parameter; its ``ToolMessage``
is the answer. ``stream_mode="tools"`` reports each call's start, its
``emit_output_delta`` chunks, its end or its error. A LangChain runnable
added as a node runs through its own ``ainvoke``.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest

import flowcore.compat.langgraph as compat
from flowcore.compat.langgraph import (
    END,
    START,
    StateGraph,
    ToolNode,
    add_messages,
)

messages = pytest.importorskip("langchain_core.messages")
tools = pytest.importorskip("langchain_core.tools")
# Asked for once LangChain is loaded: then ToolRuntime is what LangChain's tools treat
# as an injected argument (flowcore never loads LangChain itself).
ToolRuntime = compat.ToolRuntime


class State(TypedDict):
    messages: Annotated[list[Any], add_messages]


def test_tool_runtime_is_langchain_injected_once_langchain_is_loaded() -> None:
    base = tools.base._DirectlyInjectedToolArg
    assert issubclass(ToolRuntime, base)
    assert "runtime" not in shout.tool_call_schema.model_fields


def _graph(tool_list: list[Any], calls: list[dict[str, Any]]) -> Any:
    def caller(state: State) -> dict[str, Any]:
        return {"messages": [messages.AIMessage("", tool_calls=calls)]}

    return (
        StateGraph(State)
        .add_node("caller", caller)
        .add_node("tools", ToolNode(tool_list))
        .add_edge(START, "caller")
        .add_edge("caller", "tools")
        .add_edge("tools", END)
        .compile()
    )


@tools.tool
def shout(text: str, runtime: ToolRuntime) -> str:
    """Shout the text, streaming it letter by letter."""
    for letter in text:
        runtime.emit_output_delta(letter.upper())
    return f"{text.upper()}! ({runtime.tool_call_id})"


@tools.tool
def fail(text: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot {text}")


def test_a_langchain_tool_answers_its_call() -> None:
    out = _graph([shout], [{"name": "shout", "args": {"text": "hi"}, "id": "c1"}]).invoke(
        {"messages": []}
    )
    answer = out["messages"][-1]
    assert isinstance(answer, messages.ToolMessage)
    assert (answer.content, answer.tool_call_id) == ("HI! (c1)", "c1")


def test_tools_mode_reports_start_deltas_and_end() -> None:
    graph = _graph([shout], [{"name": "shout", "args": {"text": "ab"}, "id": "c1"}])
    chunks = [p for mode, p in graph.stream({"messages": []}, stream_mode=["tools"])]
    assert [c["event"] for c in chunks] == [
        "tool-started",
        "tool-output-delta",
        "tool-output-delta",
        "tool-finished",
    ]
    assert chunks[0]["tool_name"] == "shout"
    assert chunks[0]["input"] == {"text": "ab"}
    assert [c["delta"] for c in chunks[1:3]] == ["A", "B"]
    assert {c["tool_call_id"] for c in chunks} == {"c1"}


async def test_a_failing_tool_reports_an_error_and_fails_the_run() -> None:
    graph = _graph([fail], [{"name": "fail", "args": {"text": "go"}, "id": "c9"}])
    seen: list[dict[str, Any]] = []

    async def consume() -> None:
        async for _, payload in graph.astream({"messages": []}, stream_mode=["tools"]):
            seen.append(payload)

    with pytest.raises(ValueError, match="cannot go"):
        await consume()
    assert [(p["event"], p["tool_call_id"]) for p in seen] == [
        ("tool-started", "c9"),
        ("tool-error", "c9"),
    ]
    assert seen[1]["message"] == "cannot go"


def test_no_tools_chunks_without_the_mode_and_no_writer_outside_a_tool() -> None:
    graph = _graph([shout], [{"name": "shout", "args": {"text": "x"}, "id": "c1"}])
    modes = {mode for mode, _ in graph.stream({"messages": []}, stream_mode=["values"])}
    assert modes == {"values"}
    runtime = ToolRuntime(
        state={}, context=None, config={}, stream_writer=print, tool_call_id=None, store=None
    )
    runtime.emit_output_delta("nobody listens")  # a no-op, not an error


def test_a_langchain_runnable_runs_as_a_node() -> None:
    runnables = pytest.importorskip("langchain_core.runnables")

    class Count(TypedDict):
        n: int

    step = runnables.RunnableLambda(lambda state: {"n": state["n"] + 1}).with_config(
        run_name="bump"
    )
    graph = StateGraph(Count).add_node("bump", step).add_edge(START, "bump").compile()
    assert graph.invoke({"n": 1}) == {"n": 2}


def test_a_drained_tool_is_not_a_tool_error() -> None:
    from flowcore.compat.langgraph import GraphDrained, RunControl

    control = RunControl()

    def drain(state: State) -> dict[str, Any]:
        control.request_drain()
        return {}

    inner = (
        StateGraph(State)
        .add_node("drain", drain)
        .add_node("after", lambda state: {})
        .add_edge(START, "drain")
        .add_edge("drain", "after")
        .compile()
    )

    @tools.tool
    def drained() -> str:
        """Runs a graph that drains under its own control."""
        inner.invoke({"messages": []}, control=control)
        return "unreachable"

    graph = _graph([drained], [{"name": "drained", "args": {}, "id": "d1"}])
    seen: list[str] = []

    def consume() -> None:
        for _, payload in graph.stream({"messages": []}, stream_mode=["tools"]):
            seen.append(payload["event"])

    with pytest.raises(GraphDrained):
        consume()
    assert seen == ["tool-started"]


def test_a_graph_invoked_in_a_tool_can_hand_off_to_the_tools_graph() -> None:
    class Flow(TypedDict):
        messages: Annotated[list[Any], add_messages]
        done: bool

    def hand_off(state: Flow) -> Any:
        from flowcore.compat.langgraph import Command

        return Command(graph=Command.PARENT, goto="finish", update={"done": True})

    inner = StateGraph(Flow).add_node("hand_off", hand_off).add_edge(START, "hand_off").compile()

    @tools.tool
    def handoff() -> str:
        """Hands off to the graph that runs this tool."""
        inner.invoke({"messages": [], "done": False})
        return "unreachable"

    def caller(state: Flow) -> dict[str, Any]:
        call = {"name": "handoff", "args": {}, "id": "h1"}
        return {"messages": [messages.AIMessage("", tool_calls=[call])]}

    visited: list[str] = []
    graph = (
        StateGraph(Flow)
        .add_node("caller", caller)
        .add_node("tools", ToolNode([handoff]))
        .add_node("finish", lambda state: visited.append("finish") or {})
        .add_edge(START, "caller")
        .add_edge("caller", "tools")
        .add_edge("tools", END)
        .compile()
    )
    events = [
        p["event"] for _, p in graph.stream({"messages": [], "done": False}, stream_mode=["tools"])
    ]
    assert events == ["tool-started", "tool-error"]
    assert visited == ["finish"]
