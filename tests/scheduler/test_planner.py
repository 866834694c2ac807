"""Spec: the graphlib planner decides without running anything.

``decide`` (runs or is skipped, and why), ``write_levels`` (the order writes
apply) and ``route_targets`` (what a router's value picks) are pure functions
of the pass so far, so they are tested here on compiled graphs with no run.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

import pytest

from flowcore import END, START, Graph, Send
from flowcore.errors import RoutingError
from flowcore.scheduler.planner import PassState, decide, route_targets, write_levels


class State(TypedDict, total=False):
    x: int


def diamond() -> Any:
    """START -> a -> (b, c) -> d, with d joining b and c; a also routes to e or END."""

    def route(state: State) -> Literal["e", "__end__"]:
        return "e"

    graph = Graph(State)
    for name in "abcde":
        graph.add_node(name, lambda s: None)
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("a", "c")
    graph.add_edge(["b", "c"], "d").add_edge("d", END).add_edge("e", END)
    graph.add_conditional_edges("a", route)
    return graph.compile()


def test_a_root_runs_and_a_node_nobody_triggered_is_skipped() -> None:
    app = diamond()
    topo = app.topology
    plan = topo.pass_plan(["a"])
    ps = PassState()

    assert decide("a", plan, ps, topo.triggers["a"]) is None
    assert decide("b", plan, ps, topo.triggers["b"]) == "not_triggered"


def test_a_join_runs_only_when_its_whole_group_ran() -> None:
    app = diamond()
    topo = app.topology
    plan = topo.pass_plan(["a"])
    ps = PassState()
    ps.executed.update({"a", "b"})
    assert decide("d", plan, ps, topo.triggers["d"]) == "not_triggered"
    ps.executed.add("c")
    assert decide("d", plan, ps, topo.triggers["d"]) is None


def test_below_a_failed_node_is_upstream_failed_and_names_the_failed_node() -> None:
    app = diamond()
    topo = app.topology
    plan = topo.pass_plan(["a"])
    ps = PassState()
    ps.executed.add("a")
    ps.poisoned["b"] = "b"

    assert decide("d", plan, ps, topo.triggers["d"]) == "upstream_failed"
    assert ps.poisoned["d"] == "b"


def test_a_routed_node_runs_only_when_its_router_picked_it() -> None:
    app = diamond()
    topo = app.topology
    plan = topo.pass_plan(["a"])
    ps = PassState()
    ps.executed.add("a")
    assert decide("e", plan, ps, topo.triggers["e"]) == "not_triggered"
    ps.selected["a"] = {"e"}
    assert decide("e", plan, ps, topo.triggers["e"]) is None


def test_writes_apply_level_by_level_in_declaration_order_and_send_order() -> None:
    writes = [
        (2, 0, "a", {"x": 1}),
        (1, 3, "map#0", {"x": 2}),
        (1, 1, "b", {"x": 3}),
        (1, 3, "map#1", {"x": 4}),
    ]

    assert write_levels(writes) == [
        (1, [("b", {"x": 3}), ("map#0", {"x": 2}), ("map#1", {"x": 4})]),
        (2, [("a", {"x": 1})]),
    ]
    assert write_levels([]) == []


def test_a_router_value_picks_declared_targets_sends_and_end() -> None:
    app = diamond()
    (router,) = app.routers_by_source["a"]

    assert route_targets(router, "e") == ["e"]
    assert route_targets(router, [END, "e"]) == [END, "e"]
    assert route_targets(router, [Send("e", 7)]) == [Send("e", 7)]
    with pytest.raises(RoutingError, match="not one of its declared targets"):
        route_targets(router, "b")
    with pytest.raises(RoutingError, match=r"Send\('b'"):
        route_targets(router, Send("b", 1))


def test_the_pass_state_survives_a_checkpoint_cursor() -> None:
    ps = PassState()
    ps.executed.update({"a", "b"})
    ps.poisoned["c"] = "c"
    ps.selected["a"] = {"e"}
    ps.res.update({"a": 1, "b": 2})
    ps.sends["map"] = [1, 2]

    back = PassState.from_cursor(ps.to_cursor())

    assert back.executed == ps.executed
    assert back.poisoned == ps.poisoned
    assert back.selected == ps.selected
    assert back.res == ps.res
    assert back.sends == ps.sends
    # A pass without Sends saves no Send fields (the cursor format before Send).
    assert "sends" not in PassState().to_cursor()
