"""Spec for the compiled graph's topology: back edges and pass plans.

A depth-first walk from START, taking edges in the order they were declared,
marks every edge that closes a cycle as a back edge; the rest is a DAG. A
pass runs the part of that DAG reachable from the pass's roots.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any, TypedDict

from flowcore import END, START, CompiledGraph, Graph
from flowcore.graph.topology import Topology


class State(TypedDict):
    n: int


def noop(state: dict[str, Any]) -> None:
    return None


def build(
    nodes: list[str],
    edges: list[tuple[str | list[str], str]],
    routes: list[tuple[str, list[str]]] = (),  # type: ignore[assignment]
) -> CompiledGraph:
    """Compile a graph from node names, plain/join edges and (source, targets) routers."""
    g = Graph(State)
    for name in nodes:
        g.add_node(name, noop)
    for src, dst in edges:
        g.add_edge(src, dst)
    for src, targets in routes:
        g.add_conditional_edges(src, lambda s: END, targets)
    return g.compile()


def topo(*args: Any) -> Topology:
    return build(*args).topology


# ------------------------------------------------------------ back edges
def test_an_acyclic_graph_has_no_back_edges() -> None:
    t = topo(["a", "b"], [(START, "a"), ("a", "b"), ("b", END)])

    assert t.back_edges == frozenset()


def test_a_diamond_has_no_back_edges() -> None:
    # b -> d and c -> d meet at d, but neither closes a cycle.
    t = topo(
        ["a", "b", "c", "d"],
        [(START, "a"), ("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
    )

    assert t.back_edges == frozenset()


def test_a_self_loop_is_a_back_edge() -> None:
    t = topo(["a"], [(START, "a"), ("a", "a")])

    assert t.back_edges == {("a", "a")}
    assert t.is_back_edge("a", "a")


def test_a_routed_self_loop_is_a_back_edge() -> None:
    t = topo(["a"], [(START, "a")], [("a", ["a", END])])

    assert t.back_edges == {("a", "a")}


def test_in_a_two_node_loop_the_edge_back_to_the_first_node_is_the_back_edge() -> None:
    t = topo(["a", "b"], [(START, "a"), ("a", "b"), ("b", "a")])

    assert t.back_edges == {("b", "a")}
    assert not t.is_back_edge("a", "b")


def test_a_loop_with_an_exit_has_one_back_edge_and_a_forward_exit() -> None:
    t = topo(
        ["plan", "act", "check", "report"],
        [(START, "plan"), ("plan", "act"), ("act", "check"), ("report", END)],
        [("check", ["act", "report"])],
    )

    assert t.back_edges == {("check", "act")}
    assert not t.is_back_edge("check", "report")
    assert t.triggers["report"].routed_by == ("check",)
    # A back edge is not a DAG predecessor: act waits only for plan.
    assert t.triggers["act"].preds == ("plan",)
    assert t.back_targets == {}  # the loop is routed, not a plain edge


def test_a_plain_back_edge_is_recorded_as_a_back_target() -> None:
    t = topo(["a", "b"], [(START, "a"), ("a", "b"), ("b", "a")])

    assert t.back_targets == {"b": ("a",)}
    assert t.triggers["a"].preds == ()


def test_declaration_order_of_edges_decides_which_edge_is_the_back_edge() -> None:
    # The same two-node cycle a <-> b, entered from START at both nodes.
    nodes = ["a", "b"]
    cycle = [("a", "b"), ("b", "a")]

    a_first = topo(nodes, [(START, "a"), (START, "b"), *cycle])
    b_first = topo(nodes, [(START, "b"), (START, "a"), *cycle])

    assert a_first.back_edges == {("b", "a")}
    assert b_first.back_edges == {("a", "b")}


def test_order_of_a_nodes_outgoing_edges_decides_which_cycle_edge_is_the_back_edge() -> None:
    # fork -> a, fork -> b, and the cycle a <-> b: the walk enters the cycle
    # through fork's first-declared edge, so the edge back to that node is back.
    nodes = ["fork", "a", "b"]
    cycle = [("a", "b"), ("b", "a")]

    a_first = topo(nodes, [(START, "fork"), ("fork", "a"), ("fork", "b"), *cycle])
    b_first = topo(nodes, [(START, "fork"), ("fork", "b"), ("fork", "a"), *cycle])

    assert a_first.back_edges == {("b", "a")}
    assert b_first.back_edges == {("a", "b")}
    assert a_first.triggers["b"].preds == ("fork", "a")
    assert b_first.triggers["a"].preds == ("fork", "b")


def test_an_edge_into_an_already_finished_node_is_not_a_back_edge() -> None:
    # a -> c is declared after the whole a -> b -> c path was walked.
    t = topo(["a", "b", "c"], [(START, "a"), ("a", "b"), ("b", "c"), ("a", "c")])

    assert t.back_edges == frozenset()
    assert t.triggers["c"].preds == ("b", "a")


def test_two_independent_loops_each_get_their_own_back_edge() -> None:
    t = topo(
        ["a", "b", "c", "d"],
        [(START, "a"), ("a", "b"), ("b", "a"), ("b", "c"), ("c", "d"), ("d", "c")],
    )

    assert t.back_edges == {("b", "a"), ("d", "c")}


def test_every_node_reached_from_start_is_reachable() -> None:
    t = topo(
        ["a", "b", "c"],
        [(START, "a"), ("a", "b")],
        [("b", ["c", END])],
    )

    assert t.reachable == {"a", "b", "c"}
    assert t.entry == ("a",)


# ------------------------------------------------------------ pass plans
def test_first_pass_plan_covers_every_node_reachable_from_the_entry() -> None:
    t = topo(
        ["a", "b", "c", "d"],
        [(START, "a"), ("a", "b"), ("a", "c"), (["b", "c"], "d")],
    )

    plan = t.pass_plan(t.entry)

    assert plan.roots == {"a"}
    assert plan.nodes == ("a", "b", "c", "d")
    assert plan.preds == {"a": (), "b": ("a",), "c": ("a",), "d": ("b", "c")}


def test_pass_plan_nodes_are_in_declaration_order() -> None:
    t = topo(["z", "y", "x"], [(START, "x"), ("x", "y"), ("y", "z")])

    assert t.pass_plan(["x"]).nodes == ("z", "y", "x")


def test_pass_plan_does_not_cross_back_edges() -> None:
    t = topo(
        ["a", "b", "c"],
        [(START, "a"), ("a", "b"), ("b", "a"), ("b", "c")],
    )

    plan = t.pass_plan(["a"])

    assert plan.nodes == ("a", "b", "c")
    assert plan.preds["a"] == ()  # the back edge b -> a is not an in-pass pred


def test_a_later_pass_runs_only_what_its_roots_reach() -> None:
    # prep -> body -> check -(back)-> body ; check -> done
    t = topo(
        ["prep", "body", "check", "done"],
        [(START, "prep"), ("prep", "body"), ("body", "check"), ("done", END)],
        [("check", ["body", "done"])],
    )

    plan = t.pass_plan(["body"])

    assert "prep" not in plan.nodes
    assert plan.nodes == ("body", "check", "done")
    # prep is a DAG pred of body, but not in this pass, so body has no in-pass preds.
    assert t.triggers["body"].preds == ("prep",)
    assert plan.preds["body"] == ()
    assert plan.preds["check"] == ("body",)
    assert plan.preds["done"] == ("check",)


def test_in_pass_preds_leave_out_predecessors_outside_the_pass() -> None:
    t = topo(
        ["a", "x", "b"],
        [(START, "a"), (START, "x"), ("a", "b"), ("x", "b")],
    )

    assert t.pass_plan(["a"]).preds == {"a": (), "b": ("a",)}
    assert t.pass_plan(["a", "x"]).preds == {"a": (), "x": (), "b": ("a", "x")}


def test_pass_plan_with_several_roots_is_the_union_of_what_they_reach() -> None:
    t = topo(
        ["a", "b", "c", "d"],
        [(START, "a"), (START, "c"), ("a", "b"), ("c", "d")],
    )

    assert t.pass_plan(["a"]).nodes == ("a", "b")
    assert t.pass_plan(["c"]).nodes == ("c", "d")
    assert t.pass_plan(["c", "a"]).nodes == ("a", "b", "c", "d")


def test_triggers_separate_plain_edges_joins_and_routers() -> None:
    t = topo(
        ["a", "b", "c", "d"],
        [(START, "a"), ("a", "b"), (["a", "b"], "c"), ("b", "d")],
        [("a", ["d", END])],
    )

    assert t.triggers["c"].plain == ()
    assert t.triggers["c"].joins == (("a", "b"),)
    assert t.triggers["c"].preds == ("a", "b")
    assert t.triggers["d"].plain == ("b",)
    assert t.triggers["d"].routed_by == ("a",)
    assert t.triggers["d"].preds == ("b", "a")


def test_pass_plans_are_cached_per_root_set() -> None:
    t = topo(["a", "b"], [(START, "a"), ("a", "b"), ("b", "a")])

    assert t.pass_plan(["a"]) is t.pass_plan(("a",))
    assert t.pass_plan(["a"]) is not t.pass_plan(["b"])


def test_ancestors_follow_every_edge_including_back_edges() -> None:
    t = topo(
        ["a", "b", "c", "side"],
        [(START, "a"), (START, "side"), ("a", "b"), ("b", "c"), ("c", "a")],
    )

    assert t.ancestors("b") == {"a", "b", "c"}
    assert t.ancestors("side") == frozenset()
    assert t.ancestors("a") == {"a", "b", "c"}


# ------------------------------------------------------------- large graphs
def long_chain(size: int, *, loop: bool = False, ref: bool = False) -> Graph:
    names = [f"n{i}" for i in range(size)]
    g = Graph(State)
    for name in names[:-1]:
        g.add_node(name, noop)
    last_inputs = {"first": f"<<{names[0]}.x>>"} if ref else None
    g.add_node(names[-1], noop, inputs=last_inputs)
    g.add_edge(START, names[0])
    for src, dst in itertools.pairwise(names):
        g.add_edge(src, dst)
    if loop:
        g.add_edge(names[-1], names[0])
    return g


def test_a_10000_node_chain_compiles_without_hitting_the_recursion_limit() -> None:
    size = 10_000
    assert sys.getrecursionlimit() < size  # a recursive walk would blow up

    compiled = long_chain(size, ref=True).compile()

    t = compiled.topology
    assert len(t.reachable) == size
    assert t.back_edges == frozenset()
    plan = t.pass_plan(t.entry)
    assert len(plan.nodes) == size
    assert plan.preds[f"n{size - 1}"] == (f"n{size - 2}",)


def test_a_10000_node_loop_finds_its_single_back_edge() -> None:
    size = 10_000

    t = long_chain(size, loop=True).compile().topology

    assert t.back_edges == {(f"n{size - 1}", "n0")}


async def test_a_1000_node_chain_runs_to_the_end() -> None:
    size = 1_000
    g = Graph(State)
    for i in range(size):

        async def step(state: dict[str, Any]) -> dict[str, Any]:
            return {"n": state["n"] + 1}

        g.add_node(f"n{i}", step)
        g.add_edge(START if i == 0 else f"n{i - 1}", f"n{i}")

    result = await g.compile().run({"n": 0})

    assert result.status == "completed"
    assert result.state["n"] == size
    assert result.supersteps == size
