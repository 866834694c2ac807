"""Spec: loops run through back edges and are capped by ``recursion_limit``.

A back edge (found by a DFS from START in edge-declaration order) starts a
new pass; a router picks between going round again and leaving. Each
superstep counts towards ``recursion_limit``; going past it fails the run
with :class:`GraphRecursionError`. The default limit only ever stops loops,
never an acyclic graph, however long.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore import (
    END,
    START,
    FlowcoreError,
    Graph,
    GraphRecursionError,
    append,
)

from .helpers import MODES, runs_of


class State(TypedDict):
    n: Annotated[int, operator.add]
    log: Annotated[list[str], append]
    last: str


def counting_loop(times: int) -> Graph:
    """START -> a -> b -> (router) back to a, until a has run ``times`` times, then exit."""
    graph = Graph(State, name="loop")
    graph.add_node("a", lambda s: {"n": 1, "log": ["a"]})
    graph.add_node("b", lambda s: {"log": ["b"], "last": f"b{s['n']}"})
    graph.add_node("exit", lambda s: {"log": ["exit"]})
    graph.add_edge(START, "a").add_edge("a", "b")
    graph.add_conditional_edges(
        "b",
        lambda s: "again" if s["n"] < times else "done",
        {
            "again": "a",
            "done": "exit",
        },
    )
    return graph


def endless_loop() -> Graph:
    graph = Graph(State, name="endless")
    graph.add_node("a", lambda s: {"n": 1})
    graph.add_node("b", lambda s: None)
    graph.add_edge(START, "a").add_edge("a", "b")
    graph.add_conditional_edges("b", lambda s: "a", ["a", END])
    return graph


@pytest.mark.parametrize("mode", MODES)
async def test_loop_runs_until_its_router_takes_the_exit(mode: str) -> None:
    result = await counting_loop(4).compile().run({}, mode=mode)  # type: ignore[arg-type]

    assert result.status == "completed", result.errors
    assert result.state["n"] == 4
    assert result.state["log"] == ["a", "b"] * 4 + ["exit"]
    assert result.state["last"] == "b4"
    assert [r.pass_index for r in runs_of(result, "a", "completed")] == [1, 2, 3, 4]
    assert len(runs_of(result, "exit", "completed")) == 1
    # Until the last pass, the exit is a branch the router did not take.
    assert [r.skip_reason for r in runs_of(result, "exit", "skipped")] == ["not_triggered"] * 3
    assert result.supersteps == 9


@pytest.mark.parametrize("mode", MODES)
async def test_plain_back_edge_with_a_router_exit_on_the_loop_head(mode: str) -> None:
    # a decides: continue to b or stop; b -> a is a plain back edge.
    graph = Graph(State)
    graph.add_node("a", lambda s: {"n": 1, "log": ["a"]})
    graph.add_node("b", lambda s: {"log": ["b"]})
    graph.add_edge(START, "a")
    graph.add_conditional_edges("a", lambda s: "b" if s["n"] < 3 else END, ["b", END])
    graph.add_edge("b", "a")

    result = await graph.compile().run({}, mode=mode)  # type: ignore[arg-type]

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["a", "b", "a", "b", "a"]


@pytest.mark.parametrize("mode", MODES)
async def test_exceeding_recursion_limit_fails_with_graph_recursion_error(mode: str) -> None:
    result = (
        await endless_loop()
        .compile()
        .run(
            {},
            recursion_limit=10,
            mode=mode,  # type: ignore[arg-type]
        )
    )

    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, GraphRecursionError)
    assert isinstance(error, RecursionError)
    assert isinstance(error, FlowcoreError)
    assert error.limit == 10
    message = str(error)
    assert "10" in message
    assert "'endless'" in message
    assert "recursion_limit" in message  # says how to fix it
    # Exactly the allowed supersteps ran, no more.
    assert sum(1 for r in result.node_runs if r.status == "completed") == 10
    assert result.state["n"] == 5


async def test_recursion_error_is_raised_by_raise_for_status() -> None:
    result = await endless_loop().compile().run({}, recursion_limit=3)

    with pytest.raises(RecursionError, match="recursion_limit"):
        result.raise_for_status()


@pytest.mark.parametrize("mode", MODES)
async def test_default_limit_never_stops_a_long_acyclic_chain(mode: str) -> None:
    graph = Graph(State)
    prev = START
    for i in range(300):
        graph.add_node(f"n{i}", lambda s: {"n": 1})
        graph.add_edge(prev, f"n{i}")
        prev = f"n{i}"

    result = await graph.compile().run({}, mode=mode)  # type: ignore[arg-type]

    assert result.status == "completed", result.errors
    assert result.state["n"] == 300
    assert result.supersteps == 300


@pytest.mark.parametrize("mode", MODES)
async def test_thirty_iteration_loop_completes_under_the_default_limit(mode: str) -> None:
    result = await counting_loop(30).compile().run({}, mode=mode)  # type: ignore[arg-type]

    assert result.status == "completed", result.errors
    assert result.state["n"] == 30
    assert len(runs_of(result, "b", "completed")) == 30
    assert result.supersteps == 61


async def test_recursion_limit_is_set_per_run_on_the_same_compiled_graph() -> None:
    compiled = counting_loop(10).compile()  # needs 21 supersteps

    tight = await compiled.run({}, recursion_limit=5)
    roomy = await compiled.run({}, recursion_limit=100)
    exact = await compiled.run({}, recursion_limit=21)
    one_short = await compiled.run({}, recursion_limit=20)

    assert tight.status == "failed"
    assert isinstance(tight.errors[0], GraphRecursionError)
    assert tight.errors[0].limit == 5
    assert roomy.status == "completed", roomy.errors
    assert roomy.state["n"] == 10
    assert exact.status == "completed", exact.errors
    assert one_short.status == "failed"
    assert isinstance(one_short.errors[0], GraphRecursionError)


def fan_out_loop() -> Graph:
    """A loop whose body fans out to two parallel nodes and joins again."""
    graph = Graph(State)
    graph.add_node("head", lambda s: {"n": 1, "log": [f"head{s['n']}"]})
    graph.add_node("left", lambda s: {"log": ["left"], "last": "left"})
    graph.add_node("right", lambda s: {"log": ["right"]})
    graph.add_node("join", lambda s: {"log": [f"join:{s['last']}"], "last": "join"})
    graph.add_node("done", lambda s: {"log": ["done"]})
    graph.add_edge(START, "head")
    graph.add_edge("head", "left").add_edge("head", "right")
    graph.add_edge(["left", "right"], "join")
    graph.add_conditional_edges(
        "join", lambda s: "head" if s["n"] < 3 else "done", ["head", "done"]
    )
    return graph


def self_loop() -> Graph:
    graph = Graph(State)
    graph.add_node("tick", lambda s: {"n": 1, "log": [f"t{s['n']}"]})
    graph.add_node("side", lambda s: {"log": ["side"]})
    graph.add_edge(START, "tick").add_edge(START, "side")
    graph.add_conditional_edges("tick", lambda s: "tick" if s["n"] < 5 else END, ["tick", END])
    return graph


def nested_loops() -> Graph:
    """An outer loop around an inner one; the inner resets via the outer head."""
    graph = Graph(State)
    graph.add_node("outer", lambda s: {"log": ["outer"], "last": "outer"})
    graph.add_node("inner", lambda s: {"n": 1, "log": ["inner"]})
    graph.add_node("tail", lambda s: {"log": ["tail"]})
    graph.add_edge(START, "outer").add_edge("outer", "inner")
    graph.add_conditional_edges(
        "inner", lambda s: "inner" if s["n"] % 3 else "tail", ["inner", "tail"]
    )
    graph.add_conditional_edges("tail", lambda s: "outer" if s["n"] < 9 else END, ["outer", END])
    return graph


@pytest.mark.parametrize(
    "build",
    [lambda: counting_loop(6), fan_out_loop, self_loop, nested_loops],
    ids=["counting", "fan-out", "self", "nested"],
)
async def test_loops_end_in_the_same_state_in_both_modes(build: Any) -> None:
    compiled = build().compile()

    steps = await compiled.run({}, mode="supersteps")
    flow = await compiled.run({}, mode="dataflow")

    assert steps.status == flow.status == "completed", (steps.errors, flow.errors)
    assert flow.state == steps.state
    assert [r.node for r in flow.node_runs if r.status == "completed"] == [
        r.node for r in steps.node_runs if r.status == "completed"
    ]
