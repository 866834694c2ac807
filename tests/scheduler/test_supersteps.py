"""Spec: supersteps mode runs ready nodes in parallel batches.

Every node of a batch sees the state as of the batch start; the batch's
writes are applied in node declaration order once all of it has finished.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any, TypedDict

import pytest

from flowcore import START, Graph, InvalidUpdateError, NodeContext, NodeStartEvent

from .helpers import GUARD, MODES, CountState, LogState, collect, runs_of, wait


class XY(TypedDict):
    x: str
    y: str
    seen: str


async def test_nodes_of_one_superstep_overlap_in_time() -> None:
    # Each node only finishes once the other has started: possible only if
    # both are in flight at the same time.
    a_in, b_in = asyncio.Event(), asyncio.Event()

    async def a(state: Any) -> dict[str, Any]:
        a_in.set()
        await wait(b_in, "b to start while a runs")
        return {"log": ["a"]}

    async def b(state: Any) -> dict[str, Any]:
        b_in.set()
        await wait(a_in, "a to start while b runs")
        return {"log": ["b"]}

    graph = Graph(LogState).add_node("a", a).add_node("b", b)
    graph.add_edge(START, "a").add_edge(START, "b")

    result = await graph.compile().run({})

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["a", "b"]
    assert [r.superstep for r in result.node_runs] == [1, 1]


async def test_every_node_of_a_step_sees_the_step_start_state() -> None:
    a_done = asyncio.Event()
    seen: dict[str, Any] = {}

    async def a(state: Any) -> dict[str, Any]:
        a_done.set()
        return {"x": "from-a"}

    async def b(state: Any) -> dict[str, Any]:
        # a has already returned by the time b looks at its state.
        await wait(a_done, "a to finish")
        await asyncio.sleep(0)
        seen["b"] = state["x"]
        return {"y": "from-b"}

    def c(state: Any) -> None:
        seen["c"] = (state["x"], state["y"])

    graph = Graph(XY).add_node("a", a).add_node("b", b).add_node("c", c)
    graph.add_edge(START, "a").add_edge(START, "b").add_edge("a", "c")

    result = await graph.compile().run({"x": "initial", "y": "initial"})

    assert result.status == "completed", result.errors
    assert seen["b"] == "initial"
    assert seen["c"] == ("from-a", "from-b")


@pytest.mark.parametrize("mode", MODES)
async def test_writes_are_applied_in_declaration_order_not_completion_order(mode: str) -> None:
    # "zeta" is declared first but finishes last; names are anti-alphabetical
    # so neither completion order nor name order could produce the result.
    alpha_done = asyncio.Event()
    finished: list[str] = []

    async def zeta(state: Any) -> dict[str, Any]:
        await wait(alpha_done, "alpha to finish")
        finished.append("zeta")
        return {"log": ["zeta"]}

    async def alpha(state: Any) -> dict[str, Any]:
        finished.append("alpha")
        alpha_done.set()
        return {"log": ["alpha"]}

    graph = Graph(LogState).add_node("zeta", zeta).add_node("alpha", alpha)
    graph.add_edge(START, "zeta").add_edge(START, "alpha")

    result = await graph.compile().run({"log": ["start"]}, mode=mode)  # type: ignore[arg-type]

    assert finished == ["alpha", "zeta"]
    assert result.state["log"] == ["start", "zeta", "alpha"]


async def test_superstep_numbers_in_node_runs_events_and_context() -> None:
    ctx_steps: dict[str, int] = {}

    def make(name: str) -> Any:
        async def node(state: Any, ctx: NodeContext) -> dict[str, Any]:
            ctx_steps[name] = ctx.superstep
            return {"log": [name]}

        return node

    graph = Graph(LogState)
    for name in ("a", "b", "c", "d"):
        graph.add_node(name, make(name))
    # a and c start together; b follows a; d follows b.
    graph.add_edge(START, "a").add_edge(START, "c").add_edge("a", "b").add_edge("b", "d")
    compiled = graph.compile()

    events = await collect(compiled.stream({}))
    result = await compiled.run({})

    expected = {"a": 1, "c": 1, "b": 2, "d": 3}
    assert {r.node: r.superstep for r in result.node_runs} == expected
    assert ctx_steps == expected
    assert {e.node: e.superstep for e in events if isinstance(e, NodeStartEvent)} == expected
    assert result.supersteps == 3
    assert events[-1].superstep == 3


async def test_sync_nodes_run_in_a_worker_thread() -> None:
    loop_thread = threading.get_ident()
    idents: list[int] = []

    def sync_node(state: Any) -> dict[str, Any]:
        idents.append(threading.get_ident())
        return {"log": ["sync"]}

    graph = Graph(LogState).add_node("sync_node", sync_node).add_edge(START, "sync_node")

    result = await graph.compile().run({})

    assert result.status == "completed", result.errors
    assert len(idents) == 1
    assert idents[0] != loop_thread


async def test_a_blocking_sync_node_does_not_block_the_event_loop() -> None:
    # The sync node blocks its thread until an async sibling, which needs the
    # loop to run, releases it. On the loop thread this would deadlock until
    # the guard expires and report False.
    released = threading.Event()
    got: list[bool] = []

    def blocker(state: Any) -> dict[str, Any]:
        got.append(released.wait(GUARD))
        return {"log": ["blocker"]}

    async def releaser(state: Any) -> dict[str, Any]:
        await asyncio.sleep(0)
        released.set()
        return {"log": ["releaser"]}

    graph = Graph(LogState).add_node("blocker", blocker).add_node("releaser", releaser)
    graph.add_edge(START, "blocker").add_edge(START, "releaser")

    result = await graph.compile().run({})

    assert got == [True]
    assert result.status == "completed", result.errors
    assert result.state["log"] == ["blocker", "releaser"]


@pytest.mark.parametrize("is_async", [True, False])
async def test_a_node_returning_none_leaves_the_state_unchanged(is_async: bool) -> None:
    if is_async:

        async def quiet(state: Any) -> None:
            return None

    else:

        def quiet(state: Any) -> None:  # type: ignore[misc]
            return None

    graph = Graph(LogState).add_node("quiet", quiet).add_node("after", lambda s: {"log": ["ok"]})
    graph.add_edge(START, "quiet").add_edge("quiet", "after")

    result = await graph.compile().run({"log": ["in"]})

    assert result.status == "completed", result.errors
    assert result.state == {"log": ["in", "ok"]}
    assert result.outputs["quiet"] is None
    (record,) = runs_of(result, "quiet")
    assert record.status == "completed"
    assert record.update is None


async def test_two_writes_to_a_replace_key_in_one_superstep_fail_the_run() -> None:
    after_ran: list[str] = []
    graph = Graph(CountState)
    graph.add_node("prep", lambda s: {"x": "prep", "count": 1})
    graph.add_node("left", lambda s: {"x": "left", "count": 10})
    graph.add_node("right", lambda s: {"x": "right", "count": 100})
    graph.add_node("after", lambda s: after_ran.append("after"))
    graph.add_edge(START, "prep").add_edge("prep", "left").add_edge("prep", "right")
    graph.add_edge("left", "after")

    result = await graph.compile().run({})

    assert result.status == "failed"
    assert len(result.errors) == 1
    error = result.errors[0]
    assert isinstance(error, InvalidUpdateError)
    assert error.key == "x"
    assert error.nodes == ("left", "right")
    message = str(error)
    assert "'left'" in message
    assert "'right'" in message
    assert "'x'" in message
    # The state is what the last committed superstep left: none of the
    # conflicting step's writes, not even the reducer-key ones.
    assert result.state == {"x": "prep", "count": 1}
    assert after_ran == []
    assert result.supersteps == 2


async def test_two_writes_to_a_replace_key_in_one_dataflow_level_fail_the_run() -> None:
    # Same conflict in dataflow mode: the run fails the same way, and the
    # completed levels before the conflict are kept, as supersteps mode keeps
    # its committed steps, so both modes end in the same state.
    graph = Graph(CountState)
    graph.add_node("prep", lambda s: {"x": "prep", "count": 1})
    graph.add_node("left", lambda s: {"x": "left", "count": 10})
    graph.add_node("right", lambda s: {"x": "right", "count": 100})
    graph.add_edge(START, "prep").add_edge("prep", "left").add_edge("prep", "right")
    compiled = graph.compile()

    result = await compiled.run({"x": "initial"}, mode="dataflow")
    steps = await compiled.run({"x": "initial"}, mode="supersteps")

    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, InvalidUpdateError)
    assert error.nodes == ("left", "right")
    assert error.key == "x"
    assert steps.state == {"x": "prep", "count": 1}
    assert result.state == steps.state


def at_most_three(old: list[str], new: list[str]) -> list[str]:
    """A reducer that refuses to grow a list past three items."""
    merged = [*old, *new]
    if len(merged) > 3:
        raise ValueError(f"{len(merged)} items, at most 3 allowed")
    return merged


class Capped(TypedDict):
    items: Annotated[list[str], at_most_three]


@pytest.mark.parametrize("chain", [True, False], ids=["chain", "join"])
async def test_a_write_a_reducer_rejects_fails_the_run_alike_in_both_modes(chain: bool) -> None:
    # one and two write at level 2; the reducer rejects the fourth item. The
    # level-1 write stays, nothing of level 2 or later is applied, in both modes.
    graph = Graph(Capped)
    graph.add_node("first", lambda s: {"items": ["a", "b"]})
    graph.add_node("one", lambda s: {"items": ["c"]})
    graph.add_node("two", lambda s: {"items": ["d"]})
    graph.add_node("last", lambda s: {"items": ["e"]})
    graph.add_edge(START, "first").add_edge("first", "one").add_edge("first", "two")
    if chain:
        graph.add_edge("two", "last")
    else:
        graph.add_edge(["one", "two"], "last")
    compiled = graph.compile()

    steps = await compiled.run({}, mode="supersteps")
    flow = await compiled.run({}, mode="dataflow")

    for result in (steps, flow):
        assert result.status == "failed"
        (error,) = result.errors
        assert isinstance(error, InvalidUpdateError)
        assert error.key == "items"
        assert "at most 3 allowed" in str(error)
    # Supersteps mode stops before level 3. In dataflow mode, last may already
    # have run on a view that the reducer accepted; its write is dropped all the same.
    assert "last" not in {r.node for r in steps.node_runs}
    assert steps.state == {"items": ["a", "b"]}
    assert flow.state == steps.state
