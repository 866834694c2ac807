"""A node whose code invokes a compiled graph: its child run's state shows in ``get_state``."""

from __future__ import annotations

from typing import Any, TypedDict

from flowcore.compat.langgraph import START, Command, InMemorySaver, StateGraph, interrupt
from flowcore.compat.langgraph._subgraph_detection import find_subgraph, reachable_values


class Inner(TypedDict, total=False):
    bar: str
    baz: str


class Outer(TypedDict):
    foo: str


def _child(checkpointer: Any = None) -> Any:
    def ask(state: Inner) -> Inner:
        return {"baz": interrupt("baz?")}

    builder: StateGraph[Inner] = StateGraph(Inner)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=checkpointer)


def test_the_state_of_a_graph_run_by_node_code_is_in_the_snapshot() -> None:
    child = _child(checkpointer=True)

    def run_child(state: Outer) -> Outer:
        out = child.invoke({"bar": state["foo"]})
        return {"foo": out["bar"] + out["baz"]}

    builder: StateGraph[Outer] = StateGraph(Outer)
    builder.add_node("run_child", run_child)
    builder.add_edge(START, "run_child")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "detect"}}
    graph.invoke({"foo": "a"}, config)

    (task,) = graph.get_state(config, subgraphs=True).tasks
    (shallow,) = graph.get_state(config).tasks

    assert task.state.values == {"bar": "a"}
    assert shallow.state["configurable"]["checkpoint_ns"] == f"run_child:{task.id}"
    assert graph.invoke(Command(resume="z"), config) == {"foo": "az"}


def test_detection_follows_closures_globals_and_attributes_but_not_stateless_graphs() -> None:
    graph = _child()
    stateless = _child(checkpointer=False)

    class Holder:
        def __init__(self) -> None:
            self.graph = graph

    holder = Holder()

    def by_closure(state: Outer) -> Any:
        return graph.invoke(state)

    def by_attribute(state: Outer) -> Any:
        return holder.graph.invoke(state)

    def by_stateless(state: Outer) -> Any:
        return stateless.invoke(state)

    assert find_subgraph(by_closure) is graph
    assert find_subgraph(by_attribute) is graph
    assert find_subgraph(by_stateless) is None
    assert find_subgraph(lambda s: s) is None
    assert graph in reachable_values(by_closure)
