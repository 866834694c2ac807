"""Spec: the event stream of a run.

A stream opens with ``run_start`` and closes with exactly one ``done``; each
node's ``node_start`` comes before its ``node_end`` (or ``node_error``), and
custom events a node emits fall in between. Every event carries the run id,
graph name and version, its superstep and a timestamp.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Annotated, Any, TypedDict

import pytest

from flowcore import (
    START,
    CustomEvent,
    DoneEvent,
    Event,
    Graph,
    NodeContext,
    NodeEndEvent,
    NodeError,
    NodeErrorEvent,
    NodeSkippedEvent,
    NodeStartEvent,
    RunStartEvent,
    RunStream,
    append,
)

GUARD = 30.0  # only reached when a spec fails; a busy machine stays far below it


class State(TypedDict):
    log: Annotated[list[str], append]
    x: int


async def collect(stream: RunStream) -> list[Event]:
    async with stream as events:
        async with asyncio.timeout(GUARD):
            return [ev async for ev in events]


def node_logging(name: str) -> Any:
    async def node(state: Any) -> dict[str, Any]:
        return {"log": [name]}

    return node


def diamond(name: str = "diamond", version: str | None = None) -> Any:
    """START -> a -> (b, c) -> d, all async, plus a sync node e after a."""
    graph = Graph(State, name=name)
    for n in ("a", "b", "c", "d"):
        graph.add_node(n, node_logging(n))
    graph.add_node("e", lambda s: {"x": len(s["log"])})
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("a", "c").add_edge(["b", "c"], "d")
    graph.add_edge("a", "e")
    return graph.compile(version=version)


def kinds(events: list[Event]) -> list[tuple[str, str | None]]:
    return [(e.type, getattr(e, "node", None)) for e in events]


async def test_stream_opens_with_run_start_and_closes_with_exactly_one_done() -> None:
    events = await collect(diamond().stream({"x": 1}))

    assert isinstance(events[0], RunStartEvent)
    assert events[0].input == {"x": 1}
    assert events[0].superstep == 0
    assert isinstance(events[-1], DoneEvent)
    assert sum(isinstance(e, DoneEvent) for e in events) == 1
    assert sum(isinstance(e, RunStartEvent) for e in events) == 1
    assert events[-1].status == "completed"


async def test_node_start_comes_before_node_end_for_every_node() -> None:
    events = await collect(diamond().stream({}))

    starts = [e.node for e in events if isinstance(e, NodeStartEvent)]
    ends = [e.node for e in events if isinstance(e, NodeEndEvent)]
    assert sorted(starts) == sorted(ends) == ["a", "b", "c", "d", "e"]
    for node in starts:
        start = next(
            i for i, e in enumerate(events) if isinstance(e, NodeStartEvent) and e.node == node
        )
        end = next(
            i for i, e in enumerate(events) if isinstance(e, NodeEndEvent) and e.node == node
        )
        assert start < end, node


async def test_every_event_carries_run_graph_and_step_identity() -> None:
    compiled = diamond(name="pipeline", version="v7")
    stream = compiled.stream({}, run_id="run-42")
    assert stream.run_id == "run-42"

    events = await collect(stream)

    assert len(events) > 5
    for event in events:
        assert event.run_id == "run-42"
        assert event.graph_name == "pipeline"
        assert event.graph_version == "v7"
        assert isinstance(event.superstep, int)
        assert event.superstep >= 0
        assert isinstance(event.timestamp, float)
        assert event.timestamp > 0


async def test_graph_version_defaults_to_a_structural_hash() -> None:
    first = await collect(diamond().stream({}))
    again = await collect(diamond().stream({}))

    versions = {e.graph_version for e in first} | {e.graph_version for e in again}
    assert len(versions) == 1
    assert versions.pop()


async def test_run_id_is_generated_when_not_given_and_differs_per_run() -> None:
    compiled = diamond()
    one, two = compiled.stream({}), compiled.stream({})

    events = await collect(one)
    await collect(two)

    assert one.run_id
    assert one.run_id != two.run_id
    assert {e.run_id for e in events} == {one.run_id}


async def test_node_events_carry_the_superstep_the_node_ran_in() -> None:
    events = await collect(diamond().stream({}))

    steps = {e.node: e.superstep for e in events if isinstance(e, NodeEndEvent)}
    assert steps == {"a": 1, "b": 2, "c": 2, "e": 2, "d": 3}
    assert events[-1].superstep == 3


async def test_node_end_carries_the_update_duration_and_attempts() -> None:
    events = await collect(diamond().stream({}))

    ends = {e.node: e for e in events if isinstance(e, NodeEndEvent)}
    assert ends["a"].update == {"log": ["a"]}
    assert ends["e"].update == {"x": 1}
    for end in ends.values():
        assert end.duration >= 0
        assert end.attempts == 1


async def test_custom_events_arrive_between_their_nodes_start_and_end() -> None:
    async def async_node(state: Any, ctx: NodeContext) -> dict[str, Any]:
        ctx.emit("progress", {"pct": 50})
        await asyncio.sleep(0)
        ctx.emit("progress", {"pct": 100})
        return {"log": ["async"]}

    def sync_node(state: Any, ctx: NodeContext) -> dict[str, Any]:
        ctx.emit("token", "hel")
        ctx.emit("token", "lo")
        return {"log": ["sync"]}

    graph = Graph(State).add_node("async_node", async_node).add_node("sync_node", sync_node)
    graph.add_edge(START, "async_node").add_edge(START, "sync_node")

    events = await collect(graph.compile().stream({}))

    for node, expected in [
        ("async_node", [("progress", {"pct": 50}), ("progress", {"pct": 100})]),
        ("sync_node", [("token", "hel"), ("token", "lo")]),
    ]:
        mine = [
            i
            for i, e in enumerate(events)
            if getattr(e, "node", None) == node and not isinstance(e, NodeSkippedEvent)
        ]
        own = [events[i] for i in mine]
        assert isinstance(own[0], NodeStartEvent)
        assert isinstance(own[-1], NodeEndEvent)
        customs = own[1:-1]
        assert all(isinstance(e, CustomEvent) for e in customs)
        assert [(e.name, e.data) for e in customs] == expected  # type: ignore[union-attr]
        assert all(e.superstep == 1 for e in customs)


async def test_emit_without_a_listener_is_harmless() -> None:
    def node(state: Any, ctx: NodeContext) -> dict[str, Any]:
        ctx.emit("progress", 1)
        return {"x": 1}

    result = await Graph(State).add_node("n", node).add_edge(START, "n").compile().run({})

    assert result.status == "completed", result.errors


async def test_failure_emits_node_error_and_a_failed_done() -> None:
    async def bad(state: Any) -> None:
        raise ValueError("broken input")

    graph = Graph(State).add_node("bad", bad).add_edge(START, "bad")
    stream = graph.compile().stream({})

    events = await collect(stream)
    result = await stream.result()

    (error_event,) = [e for e in events if isinstance(e, NodeErrorEvent)]
    assert error_event.node == "bad"
    assert isinstance(error_event.error, NodeError)
    assert error_event.duration >= 0
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.status == "failed"
    assert done.errors == (error_event.error,)
    assert result.errors == done.errors
    assert kinds(events) == [
        ("run_start", None),
        ("node_start", "bad"),
        ("node_error", "bad"),
        ("done", None),
    ]


async def test_skipped_nodes_are_reported_as_events() -> None:
    graph = Graph(State).add_node("a", node_logging("a")).add_node("b", node_logging("b"))
    graph.add_node("c", node_logging("c"))
    graph.add_edge(START, "a")
    graph.add_conditional_edges("a", lambda s: "b", ["b", "c"])

    events = await collect(graph.compile().stream({}))

    (skip,) = [e for e in events if isinstance(e, NodeSkippedEvent)]
    assert (skip.node, skip.reason) == ("c", "not_triggered")
    assert skip.detail


@pytest.mark.parametrize("mode", ["supersteps", "dataflow"])
async def test_identical_runs_stream_identical_event_sequences(mode: str) -> None:
    # All async nodes that finish without waiting: a deterministic graph.
    graph = Graph(State)
    for n in ("a", "b", "c", "d", "e"):
        graph.add_node(n, node_logging(n))
    graph.add_edge(START, "a").add_edge(START, "b").add_edge("a", "c").add_edge("b", "c")
    graph.add_conditional_edges("c", lambda s: ["e"], ["d", "e"])
    compiled = graph.compile()

    first = await collect(compiled.stream({}, mode=mode))  # type: ignore[arg-type]
    second = await collect(compiled.stream({}, mode=mode))  # type: ignore[arg-type]

    assert kinds(first) == kinds(second)
    assert [e.superstep for e in first] == [e.superstep for e in second]
    assert first[-1].state == second[-1].state  # type: ignore[union-attr]


async def test_stream_result_equals_the_done_event() -> None:
    stream = diamond().stream({"x": 0})

    events = await collect(stream)
    result = await stream.result()

    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert result.state == done.state
    assert result.status == done.status
    assert result.run_id == done.run_id
    assert result.supersteps == done.superstep


async def test_stream_result_without_reading_the_events() -> None:
    stream = diamond().stream({})

    async with asyncio.timeout(GUARD):
        result = await stream.result()

    assert result.status == "completed"
    assert result.state["log"] == ["a", "b", "c", "d"]


async def test_a_finished_stream_yields_nothing_more() -> None:
    stream = diamond().stream({})
    await collect(stream)

    assert [e async for e in stream] == []


async def test_run_and_stream_end_in_the_same_state() -> None:
    compiled = diamond()

    result = await compiled.run({"x": 5})
    events = await collect(compiled.stream({"x": 5}))

    assert events[-1].state == result.state  # type: ignore[union-attr]
    assert result.state == {"log": ["a", "b", "c", "d"], "x": 1}


async def test_to_dict_includes_the_type_and_every_field() -> None:
    events = await collect(diamond().stream({}))

    seen_types = set()
    for event in events:
        data = event.to_dict()
        seen_types.add(data["type"])
        assert data["type"] == event.type
        for field in dataclasses.fields(event):
            assert data[field.name] == getattr(event, field.name)
    assert {"run_start", "node_start", "node_end", "done"} <= seen_types


def test_events_are_immutable() -> None:
    event = NodeStartEvent(
        run_id="r", graph_name="g", graph_version="1", superstep=1, timestamp=1.0, node="n"
    )

    with pytest.raises(dataclasses.FrozenInstanceError):
        event.node = "other"  # type: ignore[misc]
