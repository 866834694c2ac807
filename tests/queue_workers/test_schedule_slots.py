"""Spec: on Postgres the workers fire schedules, and each slot runs exactly once, on a worker.

Three :class:`QueueWorker` tasks share one real Postgres (``tests/pg.py``).
Each ticks the schedules (with one replayed clock the spec moves slot by
slot: no sleeping on wall-clock slots) and defers the slots it claims as
``flowcore.schedule_slot`` jobs; any of them runs those jobs through
``run_slot``. The claim table, the run history and the workers' counters
must each hold every slot exactly once. A slot deferred twice is queued once,
and a duplicate job of a slot that already ran runs nothing.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from flowcore.cli.workspace import Workspace, open_workspace
from flowcore.llm.offline import OfflineProvider
from flowcore.port import InProcExecutor
from flowcore.queue.app import build_app
from flowcore.queue.slots import QueueSlotSink, slot_key
from flowcore.queue.tables import QueueTables
from flowcore.schedules import new_schedule, slot_thread_id
from flowcore.schedules.postgres import PostgresScheduleStore
from flowcore.storage import Backends, parse_database_url

from .helpers import running_worker

pytest.importorskip("cronsim")

START = datetime(2024, 3, 31, 0, 0, tzinfo=UTC)
HOURS = 12
SCHEDULES = ("hourly-a", "hourly-b")
DIGEST: dict[str, Any] = {
    "id": "digest",
    "name": "Digest",
    "nodes": [{"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}}],
}


class ReplayClock:
    """One clock for every worker's tick loop: it shows the time the spec set.

    ``sleep`` only yields briefly, so the loops keep ticking at the replayed time.
    """

    def __init__(self, start: datetime) -> None:
        self.time = start

    def now(self) -> datetime:
        return self.time

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(0.02)


def offline_executor(backends: Backends) -> InProcExecutor:
    """What ``flowcore worker`` builds, with the offline model."""
    ws = Workspace(
        backends.target.display,
        backends.blocks,
        backends.memory,
        backends.checkpoints,
        backends.history,
        None,
    )
    return InProcExecutor(runner=ws.runner(OfflineProvider(), None, []), history=backends.history)


async def _until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll ``check`` until it holds; the guard only ends a spec that already failed."""
    async with asyncio.timeout(120):
        while not await check():  # noqa: ASYNC110  (the state is in Postgres: poll it)
            await asyncio.sleep(0.05)


async def _setup(url: str) -> None:
    target = parse_database_url(url)
    # The workspace first: it seeds the builtin blocks the digest pipeline uses.
    async with open_workspace(Path(target.location), database=target):
        pass
    async with QueueTables(url), PostgresScheduleStore(url) as store:
        for sid in SCHEDULES:
            await store.add(
                new_schedule(
                    DIGEST,
                    cron="0 * * * *",
                    schedule_id=sid,
                    user_id="ada",
                    inputs={"doc": "the hour"},
                    now=START.timestamp(),
                )
            )


async def _history(url: str) -> list[Any]:
    target = parse_database_url(url)
    async with open_workspace(Path(target.location), database=target) as ws:
        return list(await ws.history.list(user_id="ada", limit=None))


async def test_three_workers_fire_every_slot_exactly_once_on_a_worker(pg_schema_url: str) -> None:
    url = pg_schema_url
    await _setup(url)
    clock = ReplayClock(START)
    expected = sorted(
        (sid, (START + timedelta(hours=h)).timestamp())
        for sid in SCHEDULES
        for h in range(1, HOURS + 1)
    )
    options = {"build": offline_executor, "schedule_clock": clock, "schedule_poll": 0.05}
    async with (
        PostgresScheduleStore(url) as store,
        running_worker(url, name="w1", **options) as w1,
        running_worker(url, name="w2", **options) as w2,
        running_worker(url, name="w3", **options) as w3,
    ):
        workers = (w1, w2, w3)
        assert all(w.schedules for w in workers)  # on by default with cronsim installed
        for hour in range(1, HOURS + 1):
            slot = START + timedelta(hours=hour)
            clock.time = slot + timedelta(seconds=5)  # within the grace: on time

            async def claimed(at: float = slot.timestamp()) -> bool:
                return all([await store.get_slot(sid, at) is not None for sid in SCHEDULES])

            await _until(claimed, f"both slots of {slot} claimed")

        async def all_ran() -> bool:
            return all(c.status is not None for c in await store.slots())

        await _until(all_ran, "every slot's run recorded")
        claims = await store.slots()
        ran = [w.slot_runner.ran for w in workers if w.slot_runner is not None]
        skipped = [w.slot_runner.skipped for w in workers if w.slot_runner is not None]
        queued = [w.scheduler.sink.queued for w in workers if w.scheduler is not None]  # type: ignore[attr-defined]
    runs = await _history(url)

    assert sorted((c.schedule_id, c.slot) for c in claims) == expected  # claimed once each
    assert {c.claimed_by for c in claims} <= {"w1", "w2", "w3"}  # by the workers' ticks
    assert [(c.status, bool(c.run_id)) for c in claims] == [("completed", True)] * len(expected)
    assert sum(queued) == len(expected)  # every claimed slot became one job
    assert sum(ran) == len(expected)
    assert sum(skipped) == 0
    threads = Counter(r.thread_id for r in runs)  # the run history: one run per slot
    assert threads == Counter(slot_thread_id(sid, slot) for sid, slot in expected)
    assert {r.run_id for r in runs} == {c.run_id for c in claims}
    assert all(r.status == "completed" and r.user_id == "ada" for r in runs)


async def test_a_slot_deferred_twice_is_queued_once_and_runs_once(pg_schema_url: str) -> None:
    url = pg_schema_url
    await _setup(url)
    slot = (START + timedelta(hours=1)).timestamp()
    async with PostgresScheduleStore(url) as store:
        assert await store.claim_slot("hourly-a", slot, claimed_by="spec", claimed_at=slot)
        app = build_app(url, max_connections=2)
        async with app.open_async():
            sink = QueueSlotSink(app)
            first = await sink.defer("hourly-a", slot)
            again = await sink.defer("hourly-a", slot)  # a retried deferral
            rows = await app.connector.execute_query_all_async(
                "SELECT id FROM procrastinate_jobs WHERE queueing_lock = %(key)s",
                key=slot_key("hourly-a", slot),
            )
            assert first is not None
            assert again is None
            assert [r["id"] for r in rows] == [first]
            assert sink.already == 1

            async with running_worker(url, build=offline_executor, schedules=False) as worker:

                async def finished() -> bool:
                    claim = await store.get_slot("hourly-a", slot)
                    return claim is not None and claim.status is not None

                await _until(finished, "the slot's run recorded")
                # Its job is done and gone: a late duplicate can be queued, but runs nothing.
                assert await sink.defer("hourly-a", slot) is not None
                runner = worker.slot_runner
                assert runner is not None

                async def duplicate_seen() -> bool:
                    return runner.skipped == 1

                await _until(duplicate_seen, "the duplicate job let go")
                assert worker.scheduler is None  # schedules=False: this worker does not tick
                assert runner.ran == 1
        claim = await store.get_slot("hourly-a", slot)
        unclaimed = await store.get_slot("hourly-b", slot)
    runs = await _history(url)
    assert claim is not None
    assert claim.status == "completed"
    assert unclaimed is None
    assert [r.thread_id for r in runs] == [slot_thread_id("hourly-a", slot)]
    assert [r.run_id for r in runs] == [claim.run_id]
