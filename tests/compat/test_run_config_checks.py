"""Spec: what a run checks of its config and graph, and what its nodes and routers see.

- a graph with a checkpointer refuses a run whose config has no configurable keys;
- a mock (or any object answering every attribute) is a node, not a subgraph;
- a TypedDict whose one key is ``__root__`` declares a root state; ``__root__``
  beside other keys is a plain key;
- ``update_state`` hands the router the update's own keys, as a run hands it the
  node's return value;
- a node's config names its task's ``checkpoint_ns``;
- a subgraph's breakpoint is shown once, by the top graph, in ``updates``.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict
from unittest import mock

import pytest

from flowcore.compat.langgraph import END, START, InMemorySaver, StateGraph
from flowcore.compat.langgraph._savers import RunnableConfig

CONFIG = {"configurable": {"thread_id": "t"}}


class State(TypedDict):
    value: str


def test_checkpointer_without_configurable_is_refused() -> None:
    builder = StateGraph(State)
    builder.add_node("a", lambda s: {"value": s["value"] + "!"})
    builder.add_edge(START, "a")
    app = builder.compile(checkpointer=InMemorySaver())
    with pytest.raises(ValueError, match="thread_id"):
        app.invoke({"value": "x"})
    assert app.invoke({"value": "x"}, CONFIG) == {"value": "x!"}


def test_graph_without_checkpointer_needs_no_config() -> None:
    builder = StateGraph(State)
    builder.add_node("a", lambda s: {"value": s["value"] + "!"})
    builder.add_edge(START, "a")
    assert builder.compile().invoke({"value": "x"}) == {"value": "x!"}


def test_mock_node_is_called_not_run_as_subgraph() -> None:
    node = mock.Mock(side_effect=lambda _: 1)
    builder: StateGraph[Any] = StateGraph(Annotated[int, operator.add])
    builder.add_node("add_one", node)
    builder.add_edge(START, "add_one")
    app = builder.compile()
    assert app.invoke(1) == 2
    assert node.call_count == 1


class RootOnly(TypedDict):
    __root__: Annotated[list[str], operator.add]


def test_typeddict_with_only_root_key_is_a_root_state() -> None:
    builder = StateGraph(RootOnly)
    builder.add_node("a", lambda items: ["a"])
    builder.add_edge(START, "a")
    assert builder.compile().invoke(["start"]) == ["start", "a"]


class RootAndMore(TypedDict):
    __root__: Annotated[list[str], operator.add]
    other: str


def test_root_key_beside_others_is_a_plain_key() -> None:
    builder = StateGraph(RootAndMore)
    builder.add_node("a", lambda state: {"__root__": ["a"], "other": state["other"] + "!"})
    builder.add_edge(START, "a")
    result = builder.compile().invoke({"__root__": ["start"], "other": "o"})
    assert result == {"__root__": ["start", "a"], "other": "o!"}


def test_update_state_router_sees_the_updates_extra_keys() -> None:
    seen: list[dict[str, Any]] = []

    def route(state: dict[str, Any]) -> str:
        seen.append(dict(state))
        return END

    builder = StateGraph(State)
    builder.add_node("a", lambda s: {"value": s["value"]})
    builder.add_edge(START, "a")
    builder.add_conditional_edges("a", route)
    app = builder.compile(checkpointer=InMemorySaver())
    app.invoke({"value": "x"}, CONFIG)
    app.update_state(CONFIG, {"value": "y", "extra": 1}, as_node="a")
    assert seen[-1] == {"value": "y", "extra": 1}
    assert app.get_state(CONFIG).values == {"value": "y"}


def test_node_config_names_its_task_namespace() -> None:
    seen: list[dict[str, Any]] = []

    def node(state: State, config: RunnableConfig) -> State:
        seen.append(config)
        return state

    builder = StateGraph(State)
    builder.add_node("a", node)
    builder.add_edge(START, "a")
    builder.compile().invoke({"value": "x"})
    (config,) = seen
    ns = config["configurable"]["checkpoint_ns"]
    assert ns.startswith("a:")
    assert ns == config["metadata"]["langgraph_checkpoint_ns"]


def test_subgraph_breakpoint_is_shown_once_at_the_top() -> None:
    inner = StateGraph(State)
    inner.add_node("one", lambda s: {"value": s["value"] + "1"})
    inner.add_node("two", lambda s: {"value": s["value"] + "2"})
    inner.add_edge(START, "one")
    inner.add_edge("one", "two")
    outer = StateGraph(State)
    outer.add_node("child", inner.compile(interrupt_before=["two"]))
    outer.add_edge(START, "child")
    app = outer.compile(checkpointer=InMemorySaver())
    chunks = list(app.stream({"value": "x"}, CONFIG, subgraphs=True))
    pauses = [(ns, c) for ns, c in chunks if "__interrupt__" in c]
    assert pauses == [((), {"__interrupt__": ()})]
