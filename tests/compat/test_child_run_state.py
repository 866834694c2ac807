"""``get_state`` shows the child run of a node whose code invokes a compiled graph."""

from __future__ import annotations

from typing import TypedDict

from flowcore.compat.langgraph import START, Command, InMemorySaver, StateGraph, interrupt


class Inner(TypedDict, total=False):
    bar: str
    baz: str


class Outer(TypedDict):
    foo: str


def test_a_paused_child_runs_state_is_the_tasks_state() -> None:
    child_builder: StateGraph[Inner] = StateGraph(Inner)
    child_builder.add_node("ask", lambda s: {"baz": interrupt("baz?")})
    child_builder.add_edge(START, "ask")
    child = child_builder.compile(checkpointer=True)

    def run_child(state: Outer) -> Outer:
        out = child.invoke({"bar": state["foo"]})
        return {"foo": out["bar"] + out["baz"]}

    builder: StateGraph[Outer] = StateGraph(Outer)
    builder.add_node("run_child", run_child)
    builder.add_edge(START, "run_child")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "child-state"}}
    graph.invoke({"foo": "a"}, config)

    (deep,) = graph.get_state(config, subgraphs=True).tasks
    (shallow,) = graph.get_state(config).tasks

    assert deep.state.values == {"bar": "a"}
    assert shallow.state["configurable"]["checkpoint_ns"] == f"run_child:{deep.id}"
    assert graph.invoke(Command(resume="z"), config) == {"foo": "az"}
