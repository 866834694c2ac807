"""Spec: declaring where ``Command(goto=...)`` may go, and what compile() says about it."""

from __future__ import annotations

from typing import TypedDict

import pytest

from flowcore import END, START, Command, Graph, GraphDefinitionError, Send


class S(TypedDict):
    x: int


def noop(state: S) -> None:
    return None


def test_send_and_command_are_frozen_values() -> None:
    send = Send("work", {"item": 1})
    assert (send.node, send.arg) == ("work", {"item": 1})
    with pytest.raises(AttributeError):
        send.node = "other"  # type: ignore[misc]
    assert Command(goto="a").targets() == ["a"]
    assert Command(goto=["a", send]).targets() == ["a", send]
    assert Command(update={"x": 1}).targets() == []


def test_a_send_names_its_node_with_a_string() -> None:
    with pytest.raises(TypeError, match="node must be a node name"):
        Send(3, "arg")  # type: ignore[arg-type]


def test_destinations_must_name_nodes_of_the_graph() -> None:
    g = (
        Graph(S)
        .add_node("a", noop, destinations=["b", "nope", END])
        .add_node("b", noop)
        .add_edge(START, "a")
    )
    with pytest.raises(GraphDefinitionError) as info:
        g.compile()
    (problem,) = info.value.problems
    assert "node 'a': destinations names unknown node 'nope'" in problem


def test_destinations_are_a_list_of_names() -> None:
    g = Graph(S).add_node("a", noop, destinations=[1]).add_edge(START, "a")  # type: ignore[list-item]
    with pytest.raises(GraphDefinitionError, match="destinations must be a list of node names"):
        g.compile()


def test_start_is_not_a_destination() -> None:
    g = Graph(S).add_node("a", noop, destinations=[START]).add_edge(START, "a")
    with pytest.raises(GraphDefinitionError, match="START cannot be a goto destination"):
        g.compile()


def test_a_node_reached_only_by_goto_is_reachable_once_declared() -> None:
    undeclared = Graph(S).add_node("a", noop).add_node("b", noop).add_edge(START, "a")
    with pytest.raises(GraphDefinitionError, match="'b' is unreachable from START"):
        undeclared.compile()
    declared = (
        Graph(S).add_node("a", noop, destinations=("b",)).add_node("b", noop).add_edge(START, "a")
    )
    assert set(declared.compile().nodes) == {"a", "b"}


def test_destinations_change_the_structural_version_only_when_declared() -> None:
    def build(**kw: object) -> str:
        g = Graph(S).add_node("a", noop, **kw).add_node("b", noop)  # type: ignore[arg-type]
        return g.add_edge(START, "a").add_edge("a", "b").compile().version

    assert build() == build(destinations=None)
    assert build() != build(destinations=["b"])


def test_mermaid_draws_destinations_as_goto_edges() -> None:
    g = (
        Graph(S)
        .add_node("a", noop, destinations=["b", END])
        .add_node("b", noop, destinations=["a"])
        .add_edge(START, "a")
        .compile()
    )
    text = g.to_mermaid()
    assert 'n_a -.->|"goto"| n_b' in text
    assert 'n_a -.->|"goto"| __end__' in text
    assert 'n_b -.->|"goto (loop)"| n_a' in text
    assert '__end__(["END"])' in text
