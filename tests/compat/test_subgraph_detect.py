"""Which graph a node runs: declared subgraphs, graphs its function reaches, get_subgraphs."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import START, InMemorySaver, StateGraph
from flowcore.compat.langgraph._subgraph_detect import reachable_values


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _leaf(tag: str, **compile_options: Any) -> Any:
    graph = (
        StateGraph(State)
        .add_node(tag, lambda state: {"log": [tag]})
        .add_edge(START, tag)
        .compile(**compile_options)
    )
    graph.name = tag
    return graph


class _Box:
    def __init__(self, payload: Any) -> None:
        self.payload = payload


GLOBAL_GRAPH = _leaf("global")


def _found(node: Any) -> Any:
    graph = StateGraph(State).add_node("n", node).add_edge(START, "n").compile()
    subgraphs = graph.nodes["n"].subgraphs
    return subgraphs[0].name if subgraphs else None


def test_a_graph_added_as_a_node_is_its_subgraph() -> None:
    assert _found(_leaf("direct")) == "direct"


def test_a_graph_the_function_closes_over_or_names_globally_is_found() -> None:
    captured = _leaf("captured")

    def closure(state: State) -> Any:
        return captured.invoke(state)

    def global_name(state: State) -> Any:
        return GLOBAL_GRAPH.invoke(state)

    assert _found(closure) == "captured"
    assert _found(global_name) == "global"


def test_an_attribute_path_from_a_captured_value_is_followed() -> None:
    holder = _Box(_Box(_leaf("deep")))

    def node(state: State) -> Any:
        return holder.payload.payload.invoke(state)

    assert _found(node) == "deep"


def test_subscripts_locals_and_opted_out_graphs_are_not_subgraphs() -> None:
    graphs = [_leaf("listed")]
    opted_out = _leaf("off", checkpointer=False)

    def subscript(state: State) -> Any:
        return graphs[0].invoke(state)

    def plain(state: State) -> Any:
        return {"log": ["x"]}

    assert _found(subscript) is None
    assert _found(plain) is None
    assert _found(opted_out) is None


def test_callables_without_code_reach_nothing() -> None:
    assert reachable_values(len) == []


def test_get_subgraphs_lists_nested_namespaces_matching_whole_segments() -> None:
    inner = _leaf("inner")
    middle = StateGraph(State).add_node("inner", inner).add_edge(START, "inner").compile()
    other = _leaf("middle_x")
    parent = (
        StateGraph(State)
        .add_node("middle", middle)
        .add_node("middle_x", other)
        .add_edge(START, "middle")
        .add_edge("middle", "middle_x")
        .compile()
    )

    assert list(parent.get_subgraphs()) == [("middle", middle), ("middle_x", other)]
    assert list(parent.get_subgraphs(recurse=True)) == [
        ("middle", middle),
        ("middle|inner", inner),
        ("middle_x", other),
    ]
    assert list(parent.get_subgraphs(namespace="middle|inner", recurse=True)) == [
        ("middle|inner", inner)
    ]
    assert list(parent.get_subgraphs(namespace="middle_x")) == [("middle_x", other)]


def test_updating_a_namespace_that_names_no_subgraph_raises() -> None:
    parent = (
        StateGraph(State)
        .add_node("plain", lambda state: {"log": ["p"]})
        .add_edge(START, "plain")
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": "plain:abc"}}

    with pytest.raises(ValueError, match="Subgraph plain not found"):
        parent.update_state(config, {"log": ["edit"]})
