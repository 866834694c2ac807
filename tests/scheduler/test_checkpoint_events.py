"""Spec: a native run on a thread emits one ``checkpoint`` event per checkpoint it stores.

The event names the checkpoint by the ids ``get_state_history`` lists (its
parent too), the step it records and the nodes it says run next; it carries
no state values. A run without a thread emits none, a run nobody streams
builds none, and a checkpoint the store refused is not announced. Under
``durability="exit"`` the run's checkpoints are held and only the last is
stored: every event names the parent that stored checkpoint gets.
The port's AiEvents have no checkpoint kind, so the mapping drops the event.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Annotated, Any, TypedDict

import pytest

from flowcore import (
    END,
    START,
    Checkpoint,
    CheckpointEvent,
    CheckpointStoreError,
    Graph,
    InMemoryCheckpointer,
    Resume,
    append,
    interrupt,
)
from flowcore.events import Event
from flowcore.port.mapping import AiEventMapper, Correlation, map_event
from flowcore.scheduler import engine_checkpoints

GUARD = 5.0


class State(TypedDict, total=False):
    log: Annotated[list[str], append]
    secret: str


async def first(state: State, ctx: Any) -> dict[str, Any]:
    return {"log": ["first"], "secret": "sk-live-123"}


async def second(state: State, ctx: Any) -> dict[str, Any]:
    return {"log": ["second"]}


async def ask(state: State, ctx: Any) -> dict[str, Any]:
    return {"log": [f"answer={interrupt('ok?')}"]}


def chain(*names: str, store: Any = None, **funcs: Any) -> Any:
    graph = Graph(State, name="chain")
    previous = START
    for name in names:
        graph.add_node(name, funcs.get(name, second))
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph.compile(checkpointer=store)


async def stream(graph: Any, run_input: Any, **kwargs: Any) -> list[Event]:
    async with asyncio.timeout(GUARD), graph.stream(run_input, **kwargs) as events:
        return [event async for event in events]


def checkpoints(events: list[Event]) -> list[CheckpointEvent]:
    return [e for e in events if isinstance(e, CheckpointEvent)]


def as_history(events: list[CheckpointEvent]) -> list[tuple[str, str | None, int, tuple[str, ...]]]:
    """Newest first, as get_state_history lists them."""
    return [(e.checkpoint_id, e.parent_id, e.step, e.next) for e in reversed(events)]


@pytest.mark.parametrize("durability", ["sync", "async"])
async def test_each_stored_checkpoint_is_one_event_with_the_ids_history_lists(
    durability: str,
) -> None:
    graph = chain("a", "b", store=InMemoryCheckpointer(), a=first)

    events = await stream(graph, {}, thread_id="t1", durability=durability)

    history = await graph.get_state_history("t1")
    assert as_history(checkpoints(events)) == [
        (s.checkpoint_id, s.parent_id, s.step, s.next) for s in history
    ]
    assert [e.next for e in checkpoints(events)] == [("a",), ("b",), ()]
    # A checkpoint follows the node events of the step it closes, and precedes done.
    assert [(e.type, getattr(e, "node", None)) for e in events] == [
        ("run_start", None),
        ("checkpoint", None),
        ("node_start", "a"),
        ("node_end", "a"),
        ("checkpoint", None),
        ("node_start", "b"),
        ("node_end", "b"),
        ("checkpoint", None),
        ("done", None),
    ]
    for event in checkpoints(events):
        assert event.thread_id == "t1"
        assert event.superstep == event.step
        assert (event.run_id, event.graph_name) == (events[0].run_id, "chain")


async def test_the_event_carries_no_state_values() -> None:
    graph = chain("a", "b", store=InMemoryCheckpointer(), a=first)

    events = await stream(graph, {}, thread_id="t1")

    fields = {f.name for f in dataclasses.fields(CheckpointEvent)}
    assert fields == {
        "run_id",
        "graph_name",
        "graph_version",
        "superstep",
        "timestamp",
        "namespace",
        "thread_id",
        "checkpoint_id",
        "parent_id",
        "step",
        "next",
    }
    assert checkpoints(events)
    assert all("sk-live-123" not in repr(e.to_dict()) for e in checkpoints(events))


async def test_a_paused_and_resumed_run_announces_each_checkpoint_once() -> None:
    graph = chain("a", "approve", "b", store=InMemoryCheckpointer(), approve=ask)

    paused = await stream(graph, {}, thread_id="t1")
    resumed = await stream(graph, Resume("yes"), thread_id="t1")

    assert paused[-1].status == "interrupted"  # type: ignore[union-attr]
    assert resumed[-1].status == "completed"  # type: ignore[union-attr]
    announced = checkpoints(paused) + checkpoints(resumed)
    history = await graph.get_state_history("t1")
    assert as_history(announced) == [
        (s.checkpoint_id, s.parent_id, s.step, s.next) for s in history
    ]
    # The resumed run continues the chain from the checkpoint it paused at.
    assert checkpoints(resumed)[0].parent_id == checkpoints(paused)[-1].checkpoint_id


async def test_exit_durability_names_the_parent_its_one_stored_checkpoint_gets() -> None:
    graph = chain("a", "b", store=InMemoryCheckpointer())

    before = checkpoints(await stream(graph, {}, thread_id="t1", durability="sync"))
    held = checkpoints(await stream(graph, {}, thread_id="t1", durability="exit"))

    head = (await graph.get_state_history("t1", limit=1))[0]
    assert len(held) == 3
    assert (held[-1].checkpoint_id, held[-1].parent_id) == (head.checkpoint_id, head.parent_id)
    assert {e.parent_id for e in held} == {before[-1].checkpoint_id}
    stored = {s.checkpoint_id for s in await graph.get_state_history("t1")}
    assert not stored & {e.checkpoint_id for e in held[:-1]}


async def test_a_run_without_a_thread_emits_no_checkpoint_event() -> None:
    graph = chain("a", "b", store=InMemoryCheckpointer())

    events = await stream(graph, {})

    assert [e.type for e in events][-1] == "done"
    assert checkpoints(events) == []


async def test_a_run_nobody_streams_builds_no_checkpoint_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a checkpoint event was built for a run nobody streams")

    monkeypatch.setattr(engine_checkpoints, "CheckpointEvent", refuse)
    graph = chain("a", "b", store=InMemoryCheckpointer())

    result = await graph.run({}, thread_id="t1")

    assert result.status == "completed"
    assert len(await graph.get_state_history("t1")) == 3


class RefusingStore(InMemoryCheckpointer):
    """Refuses the checkpoint after ``ok`` stored ones."""

    def __init__(self, ok: int) -> None:
        super().__init__()
        self.ok = ok

    async def put(self, checkpoint: Checkpoint) -> None:
        if self.ok == 0:
            raise CheckpointStoreError("disk full")
        self.ok -= 1
        await super().put(checkpoint)


async def test_a_checkpoint_the_store_refused_is_not_announced() -> None:
    graph = chain("a", "b", store=RefusingStore(ok=1))

    events = await stream(graph, {}, thread_id="t1")

    assert events[-1].status == "failed"  # type: ignore[union-attr]
    history = await graph.get_state_history("t1")
    assert [e.checkpoint_id for e in checkpoints(events)] == [s.checkpoint_id for s in history]
    assert len(history) == 1


def _event(**fields: Any) -> CheckpointEvent:
    base = {
        "run_id": "r1",
        "graph_name": "g",
        "graph_version": "1",
        "superstep": 1,
        "timestamp": 0.0,
        "thread_id": "t1",
        "checkpoint_id": "c2",
        "parent_id": "c1",
        "step": 1,
        "next": ("b",),
    }
    return CheckpointEvent(**{**base, **fields})


def test_the_port_has_no_checkpoint_kind_so_the_mapping_drops_it() -> None:
    ids = Correlation("r1", "req-1", "tr-1", thread_id="t1")
    assert map_event(_event(), ids, seq=4) == []
    mapper = AiEventMapper(ids)
    assert mapper.map(_event()) == []
    assert mapper.seq == 0  # AiEvents stay numbered without gaps


def test_to_dict_names_the_type() -> None:
    assert _event().to_dict()["type"] == "checkpoint"
    assert _event(parent_id=None).to_dict()["parent_id"] is None
