"""``graph_data``: a compiled graph's nodes and edges for the viewer, as its Mermaid drawing has."""

from __future__ import annotations

from typing import Any, TypedDict

from flowcore import END, START, Graph
from flowcore.server.graph_view import graph_data


class S(TypedDict, total=False):
    n: int


async def _step(state: S) -> dict[str, Any]:
    return {"n": state.get("n", 0) + 1}


def _again(state: S) -> str:
    return "more" if state.get("n", 0) < 3 else "stop"


async def test_plain_edges_joins_routes_and_loops_are_told_apart() -> None:
    graph = Graph(S)
    for name in ("a", "b", "c", "check"):
        graph.add_node(name, _step)
    graph.add_edge(START, "a").add_edge(START, "b")
    graph.add_edge(["a", "b"], "c").add_edge("c", "check")
    graph.add_conditional_edges("check", _again, {"more": "c", "stop": END})
    nodes, edges = await graph_data(graph.compile())
    assert [(n.id, n.kind) for n in nodes] == [
        ("__start__", "start"),
        ("a", "node"),
        ("b", "node"),
        ("c", "node"),
        ("check", "node"),
        ("__end__", "end"),
    ]
    shown = {(e.source, e.target): (e.kind, e.label, e.loop) for e in edges}
    assert shown[("__start__", "a")] == ("edge", "", False)
    assert shown[("a", "c")] == ("join", "", False)
    assert shown[("b", "c")] == ("join", "", False)
    assert shown[("check", "c")] == ("route", "more", True)
    assert shown[("check", "__end__")] == ("route", "stop", False)


async def test_something_that_is_not_a_graph_draws_nothing() -> None:
    assert await graph_data(object()) == ([], [])
