"""Spec: dataflow mode starts a node as soon as its own predecessors are done.

A slow branch never holds up an unrelated one (unlike supersteps mode, where
a step waits for its slowest node). A node sees the pass-start state plus the
writes of its executed ancestors only, so what it sees does not depend on
timing, and the final state equals supersteps mode's.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypedDict

import pytest

from flowcore import END, START, Graph, append, merge

from .helpers import guarded, loop_turns, wait


class State(TypedDict):
    log: Annotated[list[str], append]
    total: Annotated[int, operator.add]
    facts: Annotated[dict[str, str], merge]
    x: str
    y: str


class TwoBranches:
    """Branch A: a1 (blocks until released) -> a2. Branch B: b1 -> b2 -> b3.

    ``order`` records starts and ends of every node as they happen.
    """

    def __init__(self) -> None:
        self.order: list[str] = []
        self.a1_started = asyncio.Event()
        self.release_a1 = asyncio.Event()
        self.b1_done = asyncio.Event()
        self.b3_done = asyncio.Event()
        graph = Graph(State)
        graph.add_node("a1", self._a1).add_node("a2", self._plain("a2"))
        graph.add_node("b1", self._plain("b1", self.b1_done))
        graph.add_node("b2", self._plain("b2"))
        graph.add_node("b3", self._plain("b3", self.b3_done))
        graph.add_edge(START, "a1").add_edge("a1", "a2")
        graph.add_edge(START, "b1").add_edge("b1", "b2").add_edge("b2", "b3")
        self.compiled = graph.compile()

    async def _a1(self, state: Any) -> dict[str, Any]:
        self.order.append("a1:start")
        self.a1_started.set()
        await wait(self.release_a1, "the test to release a1")
        self.order.append("a1:end")
        return {"log": ["a1"]}

    def _plain(self, name: str, done: asyncio.Event | None = None) -> Callable[..., Any]:
        async def node(state: Any) -> dict[str, Any]:
            self.order.append(f"{name}:start")
            await asyncio.sleep(0)
            self.order.append(f"{name}:end")
            if done is not None:
                done.set()
            return {"log": [name]}

        return node


async def test_dataflow_slow_branch_does_not_hold_up_an_unrelated_branch() -> None:
    g = TwoBranches()
    run = asyncio.create_task(g.compiled.run({}, mode="dataflow"))

    await wait(g.b3_done, "branch B to finish while a1 is blocked")
    # All of branch B finished while a1 was still blocked and a2 not started.
    assert "a1:end" not in g.order
    assert "a2:start" not in g.order
    assert g.order.index("a1:start") < g.order.index("b3:end")

    g.release_a1.set()
    result = await guarded(run)

    assert result.status == "completed", result.errors
    assert g.order.index("b3:end") < g.order.index("a1:end") < g.order.index("a2:start")
    # Writes are folded by (level, declaration), not by completion time.
    assert result.state["log"] == ["a1", "b1", "a2", "b2", "b3"]


async def test_supersteps_next_step_waits_for_the_slowest_node_of_the_step() -> None:
    g = TwoBranches()
    run = asyncio.create_task(g.compiled.run({}, mode="supersteps"))

    await wait(g.b1_done, "b1 to finish")
    # Give a wrongly eager scheduler every chance to start b2 early.
    for _ in range(10):
        await asyncio.sleep(0)
    assert "b2:start" not in g.order

    g.release_a1.set()
    result = await guarded(run)

    assert result.status == "completed", result.errors
    assert g.order.index("a1:end") < g.order.index("b2:start")
    assert result.state["log"] == ["a1", "b1", "a2", "b2", "b3"]


async def test_a_node_sees_only_the_writes_of_its_ancestors() -> None:
    # b (a sibling of a) writes y and finishes before a does; c, downstream
    # of a only, must still not see b's write. d joins both and sees both.
    b_done = asyncio.Event()
    seen: dict[str, tuple[str, str]] = {}

    async def a(state: Any) -> dict[str, Any]:
        await wait(b_done, "b to finish")
        await loop_turns()  # let the scheduler absorb b's result first
        return {"x": "from-a"}

    async def b(state: Any) -> dict[str, Any]:
        b_done.set()
        return {"y": "from-b"}

    async def c(state: Any) -> None:
        seen["c"] = (state["x"], state["y"])

    async def d(state: Any) -> None:
        seen["d"] = (state["x"], state["y"])

    graph = Graph(State)
    graph.add_node("a", a).add_node("b", b).add_node("c", c).add_node("d", d)
    graph.add_edge(START, "a").add_edge(START, "b").add_edge("a", "c")
    graph.add_edge(["c", "b"], "d")

    result = await graph.compile().run({"x": "x0", "y": "y0"}, mode="dataflow")

    assert result.status == "completed", result.errors
    assert seen["c"] == ("from-a", "y0")
    assert seen["d"] == ("from-a", "from-b")
    assert (result.state["x"], result.state["y"]) == ("from-a", "from-b")


async def test_a_node_does_not_see_a_deeper_siblings_write_in_dataflow() -> None:
    # b1 -> b2 is deeper than a; b2 writing before c starts must not leak into c.
    b2_done = asyncio.Event()
    seen: list[str] = []

    async def a(state: Any) -> dict[str, Any]:
        await wait(b2_done, "b2 to finish")
        await loop_turns()
        return {"log": ["a"]}

    async def b2(state: Any) -> dict[str, Any]:
        b2_done.set()
        return {"x": "from-b2"}

    async def c(state: Any) -> None:
        seen.append(state["x"])

    graph = Graph(State)
    graph.add_node("a", a).add_node("b1", lambda s: None).add_node("b2", b2)
    graph.add_node("c", c)
    graph.add_edge(START, "a").add_edge(START, "b1").add_edge("b1", "b2").add_edge("a", "c")

    result = await graph.compile().run({"x": "x0"}, mode="dataflow")

    assert result.status == "completed", result.errors
    assert seen == ["x0"]
    assert result.state["x"] == "from-b2"


# ------------------------------------------------------------ same final state
def uneven_diamond() -> Graph:
    """Branches of different depth writing the same replace-key at different levels."""
    graph = Graph(State)
    graph.add_node("a1", lambda s: {"log": ["a1"], "x": "a1", "total": 1})
    graph.add_node("b1", lambda s: {"log": ["b1"], "facts": {"k": "b1"}, "total": 2})
    graph.add_node("b2", lambda s: {"log": [f"b2:{s['facts']}"], "x": "b2", "total": 3})
    graph.add_node("b3", lambda s: {"log": ["b3"], "facts": {"k": "b3", "j": "b3"}})
    graph.add_node("join", lambda s: {"log": [f"join:{s['x']}:{s['total']}"], "y": "join"})
    graph.add_edge(START, "a1").add_edge(START, "b1")
    graph.add_edge("b1", "b2").add_edge("b2", "b3")
    graph.add_edge(["a1", "b3"], "join")
    return graph


def counter(name: str) -> Callable[[Any], dict[str, Any]]:
    def node(state: Any) -> dict[str, Any]:
        return {"log": [name], "total": len(state["log"])}

    return node


def routed_fan_out() -> Graph:
    def route(state: Any) -> list[Literal["p", "q", "r"]]:
        return ["r", "p"]

    graph = Graph(State)
    graph.add_node("src", lambda s: {"log": ["src"], "total": 10})
    for name in ("p", "q", "r"):
        graph.add_node(name, counter(name))
    graph.add_node("sink", lambda s: {"log": [f"sink:{s['total']}"]})
    graph.add_edge(START, "src")
    graph.add_conditional_edges("src", route)
    graph.add_edge("p", "sink").add_edge("q", "sink").add_edge("r", "sink")
    return graph


def wide_then_deep() -> Graph:
    graph = Graph(State)
    names = [f"w{i}" for i in range(5)]
    for name in names:
        graph.add_node(name, counter(name))
        graph.add_edge(START, name)
    graph.add_node("d1", lambda s: {"log": ["d1"], "x": "d1"})
    graph.add_node("d2", lambda s: {"log": [f"d2:{s['x']}"], "x": "d2"})
    graph.add_edge("w0", "d1").add_edge("d1", "d2")
    graph.add_conditional_edges("w4", lambda s: END, [END, "d2"])
    return graph


@pytest.mark.parametrize(
    "build",
    [uneven_diamond, routed_fan_out, wide_then_deep],
    ids=["uneven-diamond", "routed-fan-out", "wide-then-deep"],
)
async def test_dataflow_final_state_equals_supersteps(build: Callable[[], Graph]) -> None:
    compiled = build().compile()

    steps = await compiled.run({"x": "x0", "y": "y0"}, mode="supersteps")
    flow = await compiled.run({"x": "x0", "y": "y0"}, mode="dataflow")

    assert steps.status == "completed", steps.errors
    assert flow.status == "completed", flow.errors
    assert flow.state == steps.state
    assert flow.outputs == steps.outputs


async def test_uneven_diamond_state_is_folded_by_level_then_declaration() -> None:
    result = await uneven_diamond().compile().run({"x": "x0", "y": "y0"}, mode="dataflow")

    assert result.state["log"] == ["a1", "b1", "b2:{'k': 'b1'}", "b3", "join:b2:6"]
    assert result.state["x"] == "b2"  # level 2 beats level 1
    assert result.state["facts"] == {"k": "b3", "j": "b3"}


async def test_modes_differ_only_for_a_node_reading_a_non_ancestors_write() -> None:
    # b2 reads x, which only a1 (not an ancestor of b2) writes. In supersteps
    # mode a1's write is committed before step 2, so b2 sees it; in dataflow
    # mode b2 sees only its ancestors' writes. Graphs whose nodes read only
    # what their ancestors wrote end in the same state in both modes.
    graph = Graph(State)
    graph.add_node("a1", lambda s: {"x": "a1"})
    graph.add_node("b1", lambda s: None)
    graph.add_node("b2", lambda s: {"y": f"b2 saw {s['x']}"})
    graph.add_edge(START, "a1").add_edge(START, "b1").add_edge("b1", "b2")
    compiled = graph.compile()

    steps = await compiled.run({"x": "x0"}, mode="supersteps")
    flow = await compiled.run({"x": "x0"}, mode="dataflow")

    assert steps.state["y"] == "b2 saw a1"
    assert flow.state["y"] == "b2 saw x0"
