"""Spec: a graph called in a node with a config naming its own checkpoint is a run of its own.

Called from a node with a config that names a thread (even the caller's
thread), a namespace or a checkpoint, a graph addresses its own history at
the thread's root, as in LangGraph: it is not a child run of the node, its
events are not nested under the node, and its pause is its result. Called
with the node's own config handed on, or with no config, it stays a child run
of the node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from flowcore.compat.langgraph import START, InMemorySaver, StateGraph, interrupt

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


class State(TypedDict, total=False):
    foo: str


def _child(*, asks: bool = False, saver: Any = None) -> Any:
    def step(state: State) -> State:
        if asks:
            return {"foo": interrupt("more?")}
        return {"foo": state.get("foo", "") + "!"}

    builder: StateGraph[State] = StateGraph(State)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    return builder.compile(checkpointer=saver)


def _parent(node: Any) -> Any:
    builder: StateGraph[State] = StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    return builder.compile(checkpointer=InMemorySaver())


def _namespaces(graph: Any) -> list[tuple[str, ...]]:
    config = {"configurable": {"thread_id": "parent"}}
    parts = graph.stream({"foo": "x"}, config, stream_mode="updates", subgraphs=True)
    return [tuple(part.split(":")[0] for part in ns) for ns, _ in parts]


def test_a_config_naming_the_caller_s_thread_makes_a_run_of_its_own() -> None:
    child = _child()

    def node(state: State) -> State:
        child.invoke(state, {"configurable": {"thread_id": "parent"}})
        return {"foo": "done"}

    assert _namespaces(_parent(node)) == [()]


def test_the_node_s_own_config_handed_on_keeps_a_child_run() -> None:
    child = _child()

    def node(state: State, config: RunnableConfig) -> State:
        child.invoke(state, config)
        return {"foo": "done"}

    assert _namespaces(_parent(node)) == [("node",), ()]


def test_a_call_without_config_keeps_a_child_run() -> None:
    child = _child()

    def node(state: State) -> State:
        child.invoke(state)
        return {"foo": "done"}

    assert _namespaces(_parent(node)) == [("node",), ()]


def test_a_pause_in_a_run_of_its_own_is_its_result() -> None:
    child = _child(asks=True, saver=InMemorySaver())

    def node(state: State) -> State:
        out = child.invoke(state, {"configurable": {"thread_id": "parent"}})
        return {"foo": "paused" if "__interrupt__" in out else "done"}

    graph = _parent(node)
    assert graph.invoke({"foo": "x"}, {"configurable": {"thread_id": "parent"}}) == {
        "foo": "paused"
    }
