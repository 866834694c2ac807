"""Spec: what a run does when a node fails (``on_error``).

``fail_fast`` (the default) ends the run at the first failure: in-flight
siblings are cancelled and nothing later starts. ``skip_dependents`` lets
independent branches finish and skips every node that depends, directly or
transitively, on a failed one (reason ``upstream_failed``). Either way the
run ends ``failed``, every error is listed, and a failed node's writes never
reach the state.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, TypedDict

import pytest

from flowcore import START, Graph, NodeError, NodeSkippedEvent, append

from .helpers import MODES, collect, logger, loop_turns, statuses, wait


class State(TypedDict):
    log: Annotated[list[str], append]
    x: str


class Boom(Exception):
    pass


def failing(name: str, exc: Exception | None = None) -> Any:
    async def node(state: Any) -> dict[str, Any]:
        raise exc or Boom(f"{name} broke")

    return node


@pytest.mark.parametrize("mode", MODES)
async def test_fail_fast_cancels_in_flight_siblings_and_starts_nothing_later(mode: str) -> None:
    slow_started = asyncio.Event()
    observed: list[str] = []
    started: list[str] = []

    async def slow(state: Any) -> dict[str, Any]:
        started.append("slow")
        slow_started.set()
        try:
            await asyncio.Event().wait()  # only cancellation ends this
        except asyncio.CancelledError:
            observed.append("cancelled")
            raise
        finally:
            observed.append("finally")
        return {"log": ["slow"]}

    async def bad(state: Any) -> dict[str, Any]:
        started.append("bad")
        await wait(slow_started, "slow to start")
        raise Boom("bad broke")

    def later(name: str) -> Any:
        def node(state: Any) -> dict[str, Any]:
            started.append(name)
            return {"log": [name]}

        return node

    graph = Graph(State).add_node("slow", slow).add_node("bad", bad)
    graph.add_node("after_bad", later("after_bad")).add_node("after_slow", later("after_slow"))
    graph.add_edge(START, "slow").add_edge(START, "bad")
    graph.add_edge("bad", "after_bad").add_edge("slow", "after_slow")

    result = await graph.compile().run({}, mode=mode)  # type: ignore[arg-type]

    assert result.status == "failed"
    assert observed == ["cancelled", "finally"]
    assert sorted(started) == ["bad", "slow"]
    (error,) = result.errors
    assert isinstance(error, NodeError)
    assert error.node == "bad"
    assert isinstance(error.cause, Boom)
    assert result.state["log"] == []


@pytest.mark.parametrize("mode", MODES)
async def test_fail_fast_closes_each_cancelled_sibling_with_a_cancelled_event(mode: str) -> None:
    slow_started = asyncio.Event()

    async def slow(state: Any) -> None:
        slow_started.set()
        await asyncio.Event().wait()  # only cancellation ends this

    async def bad(state: Any) -> None:
        await wait(slow_started, "slow to start")
        raise Boom("bad broke")

    graph = Graph(State).add_node("slow", slow).add_node("bad", bad)
    graph.add_edge(START, "slow").add_edge(START, "bad")
    compiled = graph.compile()

    events = await collect(compiled.stream({}, mode=mode))  # type: ignore[arg-type]
    result = await compiled.run({}, mode=mode)  # type: ignore[arg-type]

    closing = [(e.type, getattr(e, "node", None)) for e in events if e.type.startswith("node_")]
    assert sorted(closing) == [
        ("node_cancelled", "slow"),
        ("node_error", "bad"),
        ("node_start", "bad"),
        ("node_start", "slow"),
    ]
    assert statuses(result) == {"bad": ["failed"], "slow": ["cancelled"]}


async def test_dataflow_fail_fast_lets_shallower_nodes_finish_and_drops_deeper_writes() -> None:
    # a -> a2 (fails at level 2) and b -> b2, where b (level 1) is still
    # running when a2 fails. Supersteps mode runs b in step 1 and fails in
    # step 2, keeping a's and b's writes; dataflow mode must keep the same:
    # b runs to the end, b2 never starts.
    def build(mode: str) -> Graph:
        a2_failing = asyncio.Event()

        async def b(state: Any) -> dict[str, Any]:
            if mode == "dataflow":
                await wait(a2_failing, "a2 to fail")
                await loop_turns()  # let the scheduler take in the failure
            return {"log": ["b"]}

        async def a2(state: Any) -> None:
            a2_failing.set()
            raise Boom("a2 broke")

        graph = Graph(State).add_node("a", logger("a")).add_node("b", b)
        graph.add_node("a2", a2).add_node("b2", logger("b2"))
        graph.add_edge(START, "a").add_edge(START, "b")
        graph.add_edge("a", "a2").add_edge("b", "b2")
        return graph

    steps = await build("supersteps").compile().run({}, mode="supersteps")
    flow = await build("dataflow").compile().run({}, mode="dataflow")

    assert steps.status == flow.status == "failed"
    assert steps.state["log"] == ["a", "b"]
    assert flow.state == steps.state
    assert statuses(flow)["b"] == ["completed"]
    assert "b2" not in statuses(flow)
    assert [e.node for e in flow.errors] == ["a2"]  # type: ignore[attr-defined]


async def test_dataflow_fail_fast_drops_writes_of_deeper_nodes_that_already_finished() -> None:
    # c1 -> c2 run ahead and finish while bad (level 1) is still running;
    # supersteps mode never gets past step 1, so their writes must not count.
    def build(mode: str) -> Graph:
        c2_done = asyncio.Event()

        def c2(state: Any) -> dict[str, Any]:
            c2_done.set()
            return {"log": ["c2"]}

        async def bad(state: Any) -> None:
            if mode == "dataflow":
                await wait(c2_done, "c2 to finish")
                await loop_turns()
            raise Boom("bad broke")

        graph = Graph(State).add_node("c1", logger("c1")).add_node("c2", c2)
        graph.add_node("bad", bad)
        graph.add_edge(START, "c1").add_edge("c1", "c2").add_edge(START, "bad")
        return graph

    steps = await build("supersteps").compile().run({}, mode="supersteps")
    flow = await build("dataflow").compile().run({}, mode="dataflow")

    assert steps.state == {"log": []}
    assert flow.state == steps.state
    assert statuses(flow)["c2"] == ["completed"]  # it did run; its write is dropped


async def test_fail_fast_ends_in_the_same_state_in_both_modes() -> None:
    # ok finishes before its sibling bad fails. Supersteps mode never commits
    # the failing step, so ok's write is dropped; dataflow mode must not end
    # differently (and what it keeps must not depend on which node finished
    # first).
    def build() -> Graph:
        ok_done = asyncio.Event()

        async def ok(state: Any) -> dict[str, Any]:
            ok_done.set()
            return {"log": ["ok"]}

        async def bad(state: Any) -> None:
            await wait(ok_done, "ok to finish")
            await loop_turns()  # let the scheduler take in ok's result
            raise Boom("bad broke")

        graph = Graph(State).add_node("first", logger("first"))
        graph.add_node("ok", ok).add_node("bad", bad)
        graph.add_edge(START, "first").add_edge("first", "ok").add_edge("first", "bad")
        return graph

    steps = await build().compile().run({}, mode="supersteps")
    flow = await build().compile().run({}, mode="dataflow")

    assert steps.status == flow.status == "failed"
    assert steps.state == {"log": ["first"]}
    assert flow.state == steps.state


async def test_fail_fast_is_the_default_and_stops_before_the_next_superstep() -> None:
    graph = Graph(State)
    graph.add_node("ok", logger("ok")).add_node("bad", failing("bad"))
    graph.add_node("next", logger("next"))
    graph.add_edge(START, "ok").add_edge(START, "bad").add_edge("ok", "next")

    result = await graph.compile().run({})

    assert result.status == "failed"
    assert "next" not in statuses(result)
    assert [e.node for e in result.errors] == ["bad"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", MODES)
async def test_skip_dependents_finishes_independent_branches(mode: str) -> None:
    # bad -> d1 -> d2 (transitive dependents); good -> g2 is independent;
    # the join [d1, g2] -> j depends on bad too.
    graph = Graph(State)
    graph.add_node("bad", failing("bad"))
    graph.add_node("d1", logger("d1")).add_node("d2", logger("d2"))
    graph.add_node("good", logger("good")).add_node("g2", logger("g2"))
    graph.add_node("j", logger("j"))
    graph.add_edge(START, "bad").add_edge("bad", "d1").add_edge("d1", "d2")
    graph.add_edge(START, "good").add_edge("good", "g2")
    graph.add_edge(["d1", "g2"], "j")
    compiled = graph.compile()

    result = await compiled.run({}, mode=mode, on_error="skip_dependents")  # type: ignore[arg-type]
    events = await collect(compiled.stream({}, mode=mode, on_error="skip_dependents"))  # type: ignore[arg-type]

    assert result.status == "failed"
    assert result.state["log"] == ["good", "g2"]
    assert statuses(result) == {
        "bad": ["failed"],
        "good": ["completed"],
        "g2": ["completed"],
        "d1": ["skipped"],
        "d2": ["skipped"],
        "j": ["skipped"],
    }
    reasons = {r.node: r.skip_reason for r in result.node_runs if r.status == "skipped"}
    assert reasons == {"d1": "upstream_failed", "d2": "upstream_failed", "j": "upstream_failed"}
    skips = {e.node: e.reason for e in events if isinstance(e, NodeSkippedEvent)}
    assert skips == reasons
    assert [e.node for e in result.errors] == ["bad"]  # type: ignore[attr-defined]
    assert events[-1].status == "failed"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_skip_detail_of_a_transitive_dependent_names_the_node_that_failed(mode: str) -> None:
    # d2 is skipped because bad failed; d1 was skipped, it did not fail.
    graph = Graph(State).add_node("bad", failing("bad"))
    graph.add_node("d1", logger("d1")).add_node("d2", logger("d2"))
    graph.add_edge(START, "bad").add_edge("bad", "d1").add_edge("d1", "d2")

    events = await collect(graph.compile().stream({}, mode=mode, on_error="skip_dependents"))  # type: ignore[arg-type]

    details = {e.node: e.detail for e in events if isinstance(e, NodeSkippedEvent)}
    assert "'bad'" in details["d1"]
    assert "'bad'" in details["d2"]
    assert "'d1' failed" not in details["d2"]


@pytest.mark.parametrize("mode", MODES)
async def test_skip_dependents_lists_every_error(mode: str) -> None:
    graph = Graph(State)
    graph.add_node("bad1", failing("bad1", Boom("one")))
    graph.add_node("bad2", failing("bad2", KeyError("two")))
    graph.add_node("fine", logger("fine"))
    for name in ("bad1", "bad2", "fine"):
        graph.add_edge(START, name)

    result = await graph.compile().run({}, mode=mode, on_error="skip_dependents")  # type: ignore[arg-type]

    assert result.status == "failed"
    assert result.state["log"] == ["fine"]
    assert sorted(e.node for e in result.errors) == ["bad1", "bad2"]  # type: ignore[attr-defined]
    causes = {e.node: type(e.cause) for e in result.errors}  # type: ignore[attr-defined]
    assert causes == {"bad1": Boom, "bad2": KeyError}
    with pytest.raises(NodeError):
        result.raise_for_status()


@pytest.mark.parametrize("on_error", ["fail_fast", "skip_dependents"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_node_whose_router_fails_contributes_no_write(mode: str, on_error: str) -> None:
    # The node itself returned an update, but its router raised: the node
    # failed, so its write must not reach the state.
    def route(state: Any) -> str:
        raise RuntimeError("router broke")

    graph = Graph(State).add_node("writer", lambda s: {"x": "partial", "log": ["partial"]})
    graph.add_node("target", logger("target")).add_node("other", logger("other"))
    graph.add_edge(START, "writer").add_edge(START, "other")
    graph.add_conditional_edges("writer", route, ["target"])

    result = await graph.compile().run({"x": "x0"}, mode=mode, on_error=on_error)  # type: ignore[arg-type]

    assert result.status == "failed"
    assert result.state["x"] == "x0"
    assert "partial" not in result.state["log"]
    assert result.outputs.get("writer") is None


@pytest.mark.parametrize("mode", MODES)
async def test_a_node_with_an_invalid_update_contributes_no_write(mode: str) -> None:
    # One valid key and one unknown key: the whole update is rejected.
    graph = Graph(State).add_node("writer", lambda s: {"x": "partial", "nope": 1})
    graph.add_node("other", logger("other"))
    graph.add_edge(START, "writer").add_edge(START, "other")

    result = await graph.compile().run(
        {"x": "x0"},
        mode=mode,  # type: ignore[arg-type]
        on_error="skip_dependents",
    )

    assert result.status == "failed"
    assert result.state == {"x": "x0", "log": ["other"]}
    assert "'nope'" in str(result.errors[0])
