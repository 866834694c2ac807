"""Graphs run inside a node: a child run of that node, whose pause pauses the parent.

Two ways to nest a graph: add it as a node, or invoke it from a node's code.
Either way a pause inside it (an ``interrupt()`` or a breakpoint compiled
into it) pauses the node that runs it, and the parent's resume goes on in the
child, as in LangGraph.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import START, Command, InMemorySaver, StateGraph, interrupt


class Inner(TypedDict, total=False):
    bar: str
    baz: str


class Outer(TypedDict):
    foo: str


def _asking_child() -> Any:
    def ask(state: Inner) -> Inner:
        return {"baz": interrupt("Provide baz")}

    def join(state: Inner) -> Inner:
        return {"bar": state["bar"] + state["baz"]}

    child: StateGraph[Inner] = StateGraph(Inner)
    child.add_node("ask", ask)
    child.add_node("join", join)
    child.add_edge(START, "ask")
    child.add_edge("ask", "join")
    return child.compile(checkpointer=True)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_interrupt_in_a_graph_invoked_by_a_node_pauses_the_parent(kind: str) -> None:
    child = _asking_child()
    calls: list[str] = []

    def sync_node(state: Outer) -> Outer:
        calls.append("node")
        return {"foo": child.invoke({"bar": state["foo"]})["bar"]}

    async def async_node(state: Outer) -> Outer:
        calls.append("node")
        return {"foo": (await child.ainvoke({"bar": state["foo"]}))["bar"]}

    builder: StateGraph[Outer] = StateGraph(Outer)
    builder.add_node("node", sync_node if kind == "sync" else async_node)
    builder.add_edge(START, "node")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"nested-{kind}"}}

    paused = graph.invoke({"foo": "hi "}, config)
    assert paused["foo"] == "hi "
    assert [i.value for i in paused["__interrupt__"]] == ["Provide baz"]
    assert graph.get_state(config).next == ("node",)
    assert graph.invoke(Command(resume="there"), config) == {"foo": "hi there"}
    assert calls == ["node", "node"]


def test_a_graph_invoked_on_a_thread_of_its_own_is_a_run_of_its_own() -> None:
    def ask(state: Inner) -> Inner:
        return {"baz": interrupt("Provide baz")}

    child_builder: StateGraph[Inner] = StateGraph(Inner)
    child_builder.add_node("ask", ask)
    child_builder.add_edge(START, "ask")
    child = child_builder.compile(checkpointer=InMemorySaver())

    def node(state: Outer) -> Outer:
        out = child.invoke({"bar": state["foo"]}, {"configurable": {"thread_id": "own"}})
        return {"foo": "child paused" if "__interrupt__" in out else "child done"}

    builder: StateGraph[Outer] = StateGraph(Outer)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    graph = builder.compile(checkpointer=InMemorySaver())
    # The child's pause is its own thread's: the parent gets it as a result and finishes.
    assert graph.invoke({"foo": "x"}, {"configurable": {"thread_id": "parent"}}) == {
        "foo": "child paused"
    }
    assert child.get_state({"configurable": {"thread_id": "own"}}).next == ("ask",)


class Summed(TypedDict):
    my_key: Annotated[str, operator.add]


def _graph_with_a_breakpoint_in_a_subgraph() -> Any:
    def first(state: Summed) -> Summed:
        return {"my_key": "a"}

    def second(state: Summed) -> Summed:
        return {"my_key": "b"}

    inner: StateGraph[Summed] = StateGraph(Summed)
    inner.add_node("first", first)
    inner.add_node("second", second)
    inner.add_edge(START, "first")
    inner.add_edge("first", "second")
    outer: StateGraph[Summed] = StateGraph(Summed)
    outer.add_node("inner", inner.compile(interrupt_before=["second"]))
    outer.add_node("side", lambda s: {"my_key": "s"})
    outer.add_node("last", lambda s: {"my_key": "z"})
    outer.add_edge(START, "inner")
    outer.add_edge(START, "side")
    outer.add_edge(["inner", "side"], "last")
    return outer.compile(checkpointer=InMemorySaver())


def test_a_breakpoint_in_a_subgraph_pauses_its_node_without_a_question() -> None:
    app = _graph_with_a_breakpoint_in_a_subgraph()
    config = {"configurable": {"thread_id": "bp"}}
    # Nothing was asked: no __interrupt__ in the output, but the node is still pending.
    assert app.invoke({"my_key": ""}, config) == {"my_key": "s"}
    assert app.get_state(config).next == ("inner",)
    assert app.invoke(None, config) == {"my_key": "absz"}


def test_values_stream_shows_no_empty_pause_and_updates_mark_saved_tasks_cached() -> None:
    app = _graph_with_a_breakpoint_in_a_subgraph()
    config = {"configurable": {"thread_id": "bp-stream"}}
    assert list(app.stream({"my_key": ""}, config, stream_mode="values")) == [
        {"my_key": ""},
        {"my_key": "s"},
    ]
    resumed = list(app.stream(None, config, stream_mode="updates"))
    assert resumed[0] == {"side": {"my_key": "s"}, "__metadata__": {"cached": True}}
    assert resumed[1:] == [{"inner": {"my_key": "ab"}}, {"last": {"my_key": "z"}}]


class Kept(TypedDict, total=False):
    seen: Annotated[list[str], operator.add]
    counter: int


def _graph_with_a_stateful_subgraph(calls: list[str]) -> Any:
    def remember(state: Kept) -> Kept:
        calls.append(f"child saw {len(state.get('seen', []))}")
        return {"seen": ["x"]}

    child: StateGraph[Kept] = StateGraph(Kept)
    child.add_node("remember", remember)
    child.add_edge(START, "remember")
    stateful = child.compile(checkpointer=True)

    def call_child(state: Kept) -> Kept:
        stateful.invoke({"seen": []})
        return {"counter": state.get("counter", 0) + 1}

    def again(state: Kept) -> Command[Any]:
        return Command(goto="call_child" if state["counter"] < 2 else "__end__")

    parent: StateGraph[Kept] = StateGraph(Kept)
    parent.add_node("call_child", call_child)
    parent.add_node("again", again)
    parent.add_edge(START, "call_child")
    parent.add_edge("call_child", "again")
    return parent.compile(checkpointer=InMemorySaver())


def test_a_checkpointer_true_subgraph_goes_on_from_its_last_entry() -> None:
    calls: list[str] = []
    app = _graph_with_a_stateful_subgraph(calls)
    app.invoke({"counter": 0}, {"configurable": {"thread_id": "kept"}})
    # One history per thread: the second entry sees what the first one wrote.
    assert calls == ["child saw 0", "child saw 1"]


def test_replaying_the_parent_loads_the_stateful_subgraph_as_it_was_then() -> None:
    calls: list[str] = []
    app = _graph_with_a_stateful_subgraph(calls)
    config = {"configurable": {"thread_id": "kept-replay"}}
    app.invoke({"counter": 0}, config)
    first_entry = next(
        s
        for s in app.get_state_history(config)
        if s.next == ("call_child",) and s.values.get("counter", 0) == 0
    )
    calls.clear()
    app.invoke(None, first_entry.config)
    # Before the first entry the subgraph had no state: the replay starts it afresh.
    assert calls == ["child saw 0", "child saw 1"]


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


class Result(TypedDict):
    seen: Annotated[list[str], operator.add]


def _keeper(tag: str) -> Any:
    return (
        StateGraph(Log)
        .add_node("keep", lambda state: {"log": [f"{tag}{len(state['log'])}"]})
        .add_edge(START, "keep")
        .compile(checkpointer=True)
    )


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_each_stateful_graph_a_node_invokes_keeps_a_history_of_its_own(kind: str) -> None:
    first, second = _keeper("f"), _keeper("s")

    def sync_node(state: Result) -> Result:
        a = first.invoke({"log": []})
        b = second.invoke({"log": []})
        return {"seen": [",".join(a["log"]), ",".join(b["log"])]}

    async def async_node(state: Result) -> Result:
        a = await first.ainvoke({"log": []})
        b = await second.ainvoke({"log": []})
        return {"seen": [",".join(a["log"]), ",".join(b["log"])]}

    parent = (
        StateGraph(Result)
        .add_node("both", sync_node if kind == "sync" else async_node)
        .add_edge(START, "both")
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "t"}}
    parent.invoke({"seen": []}, config)

    # The second run goes on from each graph's own last entry, never the other's.
    assert parent.invoke({"seen": []}, config)["seen"] == ["f0", "s0", "f0,f1", "s0,s1"]
