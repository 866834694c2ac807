"""``Command(graph=Command.PARENT)``: where a command for the parent graph goes.

From a subgraph node (or a graph a node's code invokes) it becomes the result of
the parent's node; from a root graph, which has no parent, it reaches the
caller as a ``ParentCommand``, as in LangGraph.
"""

from __future__ import annotations

from typing import TypedDict

import pytest

from flowcore.compat.langgraph import END, START, Command, ParentCommand, StateGraph


class Jump(TypedDict):
    jump: bool


class Route(TypedDict):
    visited: list[str]


def test_a_root_graph_hands_a_parent_command_to_the_caller() -> None:
    builder: StateGraph[Route] = StateGraph(Route)
    builder.add_node(
        "up", lambda s: Command(graph=Command.PARENT, goto="elsewhere", update={"a": 1})
    )
    builder.add_edge(START, "up")
    graph = builder.compile()

    with pytest.raises(ParentCommand) as raised:
        graph.invoke({"visited": []})

    assert (raised.value.command.goto, raised.value.command.update) == ("elsewhere", {"a": 1})


@pytest.mark.parametrize("jump", [True, False])
def test_a_graph_invoked_by_node_code_can_route_its_parent(jump: bool) -> None:
    child_builder: StateGraph[Jump] = StateGraph(Jump)
    child_builder.add_node(
        "node", lambda s: Command(graph=Command.PARENT, goto="second") if s["jump"] else s
    )
    child_builder.add_edge(START, "node")
    child = child_builder.compile()

    def first(state: Route) -> Route:
        child.invoke({"jump": jump})
        return {"visited": [*state["visited"], "first"]}

    def second(state: Route) -> Route:
        return {"visited": [*state["visited"], "second"]}

    builder: StateGraph[Route] = StateGraph(Route)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(START, "first")
    builder.add_edge("second", END)
    graph = builder.compile()

    # The child's command replaces what "first" would have returned.
    expected = ["second"] if jump else ["first"]
    assert graph.invoke({"visited": []}) == {"visited": expected}
