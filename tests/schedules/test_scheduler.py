"""Spec: the scheduler loop turns due slots into recorded runs of the schedule's pipeline.

Time is a ManualClock: the loop's sleeps advance it, so a day of polling
runs in well under a second and nothing asserts on the wall clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from flowcore.cli.workspace import Workspace, open_workspace
from flowcore.errors import InvalidInputError
from flowcore.llm.offline import OfflineProvider
from flowcore.schedules import (
    DueSlot,
    ManualClock,
    RunnerSink,
    Scheduler,
    ScheduleStoreError,
    SlotSink,
    SqliteScheduleStore,
    SystemClock,
    new_schedule,
    run_slot,
    slot_thread_id,
)

START = datetime(2024, 3, 30, 12, 0, tzinfo=UTC)
DIGEST: dict[str, Any] = {
    "id": "digest",
    "name": "Digest",
    "nodes": [{"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}}],
}


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[tuple[Workspace, SqliteScheduleStore]]:
    db = tmp_path / "flowcore.db"
    async with open_workspace(db) as ws, SqliteScheduleStore(db) as store:
        yield ws, store


class Recorder:
    """A sink that only notes what it was given."""

    def __init__(self) -> None:
        self.fired: list[DueSlot] = []

    async def fire(self, due: DueSlot) -> None:
        self.fired.append(due)


async def test_each_slot_becomes_a_run_recorded_with_the_schedule_and_slot(
    stores: tuple[Workspace, SqliteScheduleStore],
) -> None:
    ws, store = stores
    await store.add(
        new_schedule(
            DIGEST,
            cron="30 1 * * *",
            timezone="Europe/London",
            schedule_id="nightly",
            user_id="ada",
            inputs={"doc": "overnight notes"},
            now=START.timestamp(),
        )
    )
    clock = ManualClock(START)
    sink = RunnerSink(ws.runner(OfflineProvider(), None, []), store)
    scheduler = Scheduler(store, sink, clock=clock, poll_interval=30)

    await scheduler.run(ticks=2 * 24 * 120)  # two days, a tick every 30 s

    claims = await store.slots("nightly")
    # 2024-03-31 is the spring-forward day: 01:30 is skipped, the slot fires at 02:00 BST.
    assert [c.slot_time for c in claims] == [
        datetime(2024, 3, 31, 1, 0, tzinfo=UTC),
        datetime(2024, 4, 1, 0, 30, tzinfo=UTC),
    ]
    runs = await ws.history.list(user_id="ada")
    assert sorted(r.thread_id or "" for r in runs) == [
        slot_thread_id("nightly", c.slot) for c in claims
    ]
    assert {r.run_id: r.status for r in runs} == {c.run_id: c.status for c in claims}
    assert all(r.status == "completed" and r.pipeline_id == "digest" for r in runs)
    assert runs[0].inputs == {"doc": "overnight notes"}
    assert (scheduler.fired, scheduler.failed) == (2, 0)


async def test_a_slot_whose_run_cannot_start_is_noted_and_the_loop_goes_on(
    stores: tuple[Workspace, SqliteScheduleStore],
) -> None:
    ws, store = stores
    broken = {**DIGEST, "id": "broken", "nodes": [{"id": "n1", "block_id": "no_such_block"}]}
    for sid, target, inputs in (("bad", broken, {}), ("good", DIGEST, {"doc": "d"})):
        await store.add(
            new_schedule(
                target, cron="0 * * * *", schedule_id=sid, inputs=inputs, now=START.timestamp()
            )
        )
    errors: list[tuple[str, str]] = []
    scheduler = Scheduler(
        store,
        RunnerSink(ws.runner(OfflineProvider(), None, []), store),
        clock=ManualClock(START),
        poll_interval=60,
        on_error=lambda due, exc: errors.append((due.claim.schedule_id, type(exc).__name__)),
    )
    await scheduler.run(ticks=3 * 60 + 1)

    assert errors == [("bad", "PipelineError")] * 3
    bad = await store.slots("bad")
    assert [c.status.split(":")[0] for c in bad if c.status] == ["error"] * 3
    assert [c.status for c in await store.slots("good")] == ["completed"] * 3


async def test_missed_slots_follow_each_schedule_policy_after_downtime(
    stores: tuple[Workspace, SqliteScheduleStore],
) -> None:
    _, store = stores
    for sid, missed in (("skipper", "skip"), ("catcher", "catch_up_once")):
        await store.add(
            new_schedule(
                DIGEST,
                cron="0 9 * * *",
                schedule_id=sid,
                inputs={"doc": "d"},
                missed=missed,
                now=START.timestamp(),
            )
        )
    sink = Recorder()
    # The scheduler comes up three days later, at 15:00: three 09:00 slots were missed.
    clock = ManualClock(START + timedelta(days=3, hours=3))
    await Scheduler(store, sink, clock=clock).run(ticks=1)
    assert [(d.claim.schedule_id, d.claim.kind, d.claim.missed) for d in sink.fired] == [
        ("catcher", "catch_up", 2)
    ]
    assert sink.fired[0].claim.slot_time == datetime(2024, 4, 2, 9, 0, tzinfo=UTC)
    # Both move on: the next morning each fires once, on time.
    clock.set(datetime(2024, 4, 3, 9, 0, 5, tzinfo=UTC))
    await Scheduler(store, sink, clock=clock).run(ticks=1)
    assert [(d.claim.schedule_id, d.claim.kind) for d in sink.fired[1:]] == [
        ("catcher", "on_time"),
        ("skipper", "on_time"),
    ]


async def test_stop_ends_the_loop_and_running_slots_are_awaited(
    stores: tuple[Workspace, SqliteScheduleStore],
) -> None:
    _, store = stores
    await store.add(
        new_schedule(
            DIGEST, cron="* * * * *", schedule_id="m", inputs={"doc": "d"}, now=START.timestamp()
        )
    )
    stop = asyncio.Event()
    finished: list[float] = []

    class SlowSink:
        async def fire(self, due: DueSlot) -> None:
            stop.set()  # the loop must still wait for this run to end
            await asyncio.sleep(0)
            finished.append(due.claim.slot)

    assert isinstance(SlowSink(), SlotSink)
    await Scheduler(store, SlowSink(), clock=ManualClock(START), poll_interval=20).run(stop=stop)
    assert finished == [(START + timedelta(minutes=1)).timestamp()]


async def test_bad_loop_settings_are_refused(stores: tuple[Workspace, SqliteScheduleStore]) -> None:
    _, store = stores
    with pytest.raises(InvalidInputError, match="poll_interval must be > 0"):
        Scheduler(store, Recorder(), poll_interval=0)
    with pytest.raises(InvalidInputError, match="grace must be a number of seconds >= 0"):
        Scheduler(store, Recorder(), grace=-1)
    with pytest.raises(InvalidInputError, match="max_running must be an int >= 1"):
        Scheduler(store, Recorder(), max_running=0)
    with pytest.raises(InvalidInputError, match="timezone-aware"):
        await store.claim_due(datetime(2024, 1, 1), grace=60, claimed_by="x")
    assert SystemClock().now().tzinfo is UTC


async def test_a_failed_tick_is_reported_and_the_loop_goes_on(
    stores: tuple[Workspace, SqliteScheduleStore],
) -> None:
    _, store = stores
    await store.add(
        new_schedule(
            DIGEST, cron="* * * * *", schedule_id="m", inputs={"doc": "d"}, now=START.timestamp()
        )
    )

    class Flaky:
        """The real store, whose second tick fails as a database restart would."""

        calls = 0

        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        async def claim_due(self, *args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls == 2:
                raise ScheduleStoreError("tick in schedules failed: server closed the connection")
            return await store.claim_due(*args, **kwargs)

    seen: list[str] = []
    sink = Recorder()
    scheduler = Scheduler(
        Flaky(),  # type: ignore[arg-type]
        sink,
        clock=ManualClock(START + timedelta(seconds=30)),
        poll_interval=30,
        on_tick_error=lambda exc: seen.append(str(exc)),
    )
    await scheduler.run(ticks=6)  # 00:30 .. 03:00, the tick at 01:00 fails
    assert seen == ["tick in schedules failed: server closed the connection"]
    assert scheduler.tick_errors == 1
    # The 01:00 slot is decided by the next tick (30 s late, within the grace) and fires once.
    assert [d.claim.slot_time.strftime("%H:%M") for d in sink.fired] == ["12:01", "12:02", "12:03"]


async def test_the_loop_fires_the_fall_back_day_0130_slot_once(
    stores: tuple[Workspace, SqliteScheduleStore],
) -> None:
    _, store = stores
    start = datetime(2024, 10, 26, 12, 0, tzinfo=UTC)
    await store.add(
        new_schedule(
            DIGEST,
            cron="30 1 * * *",
            timezone="Europe/London",
            schedule_id="nightly",
            inputs={"doc": "d"},
            missed="catch_up_once",
            now=start.timestamp(),
        )
    )
    sink = Recorder()
    # Two days a minute a tick, through 01:30 BST and the repeated 01:30 GMT an hour later.
    await Scheduler(store, sink, clock=ManualClock(start), poll_interval=60).run(ticks=2 * 1440)
    assert [(d.claim.slot_time, d.claim.kind) for d in sink.fired] == [
        (datetime(2024, 10, 27, 0, 30, tzinfo=UTC), "on_time"),  # 01:30 BST
        (datetime(2024, 10, 28, 1, 30, tzinfo=UTC), "on_time"),  # 01:30 GMT, the next day
    ]


async def test_a_queue_worker_runs_a_claimed_slot_by_schedule_id_and_slot(
    stores: tuple[Workspace, SqliteScheduleStore],
) -> None:
    ws, store = stores
    await store.add(
        new_schedule(
            DIGEST,
            cron="0 * * * *",
            schedule_id="h",
            user_id="ada",
            inputs={"doc": "d"},
            now=START.timestamp(),
        )
    )

    class Queue:
        """A sink that only enqueues (schedule_id, slot), as a job queue's would."""

        def __init__(self) -> None:
            self.jobs: list[tuple[str, float]] = []

        async def fire(self, due: DueSlot) -> None:
            self.jobs.append((due.claim.schedule_id, due.claim.slot))

    queue = Queue()
    await Scheduler(store, queue, clock=ManualClock(START + timedelta(hours=1))).run(ticks=1)
    [(sid, slot)] = queue.jobs
    assert await store.slots("h") == [c for c in await store.slots("h") if c.run_id is None]

    # The worker's side: run the job.
    result = await run_slot(ws.runner(OfflineProvider(), None, []), store, sid, slot)

    [claim] = await store.slots("h")
    assert (claim.run_id, claim.status) == (result.run_id, "completed")
    record = await ws.history.get(result.run_id)
    assert (record.thread_id, record.user_id) == (slot_thread_id("h", slot), "ada")
