"""Schedules that fire: a nightly digest at 01:30 London time, through both clock changes.

    python examples/nightly_digest.py

Two schedules run the same pipeline for user "ada" at 01:30 Europe/London:
``nightly`` skips slots missed while no scheduler ran, ``nightly-catch-up``
fires one run for them (``catch_up_once``). Three schedulers share one
SQLite file and tick together, as three processes would; a manual clock
walks the timeline ten minutes a tick, so nothing sleeps:

* the week of the spring-forward day (2024-03-31, when 01:30 does not
  exist in London: that day's slot fires at 02:00 BST, the moment of the jump);
* two days of downtime (no scheduler runs), then the schedulers come back;
* the fall-back day (2024-10-27, when 01:30 happens twice: it fires once).

Every slot fires exactly once, whichever scheduler claims it; each fired
slot becomes a run recorded in the run history on thread
``schedule-<id>-<UTC slot time>``. The offline model writes the summaries.
"""

from __future__ import annotations

import asyncio
import pathlib
import tempfile
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from flowcore.blocks import BlockExecutor
from flowcore.llm import OfflineProvider, ProviderRegistry
from flowcore.memory import MemoryManager
from flowcore.pipeline import PipelineRunner
from flowcore.schedules import (
    ManualClock,
    RunnerSink,
    Scheduler,
    SqliteScheduleStore,
    new_schedule,
)
from flowcore.storage import open_backends

LONDON = ZoneInfo("Europe/London")
DIGEST = {
    "id": "nightly_digest",
    "name": "Nightly digest",
    "nodes": [{"id": "digest", "block_id": "summarize", "inputs": {"text": "<<input.notes>>"}}],
}


def local(when: datetime) -> str:
    return when.astimezone(LONDON).strftime("%a %d %b %H:%M %Z")


async def walk(schedulers: list[Scheduler], clock: ManualClock, until: datetime) -> None:
    """Tick all schedulers together every ten minutes until ``until``."""
    while clock.now() < until:
        await asyncio.gather(*(s.tick(wait=True) for s in schedulers))
        clock.advance(600)


async def main(db: pathlib.Path) -> None:
    clock = ManualClock(datetime(2024, 3, 28, 12, 0, tzinfo=UTC))
    async with open_backends(db) as backends:
        runner = PipelineRunner(
            blocks=backends.blocks,
            executor=BlockExecutor(providers=ProviderRegistry.single(OfflineProvider())),
            memory=MemoryManager(backends.memory),
            checkpointer=backends.checkpoints,
            history=backends.history,
        )
        stores = [SqliteScheduleStore(db) for _ in range(3)]  # three schedulers' connections
        for store in stores:
            await store.open()
        try:
            for sid, missed in (("nightly", "skip"), ("nightly-catch-up", "catch_up_once")):
                await stores[0].add(
                    new_schedule(
                        DIGEST,
                        cron="30 1 * * *",
                        timezone="Europe/London",
                        schedule_id=sid,
                        user_id="ada",
                        inputs={"notes": "Shipped the scheduler. Slots fire once."},
                        missed=missed,
                        now=clock.now().timestamp(),
                    )
                )
            schedulers = [
                Scheduler(s, RunnerSink(runner, s), clock=clock, name=f"scheduler-{n}")
                for n, s in enumerate(stores, start=1)
            ]
            await walk(schedulers, clock, datetime(2024, 4, 2, 12, tzinfo=UTC))
            clock.set(datetime(2024, 4, 4, 12, tzinfo=UTC))  # down since Apr 2, 12:00
            await walk(schedulers, clock, datetime(2024, 4, 5, 12, tzinfo=UTC))
            # Switched off over the summer; switching on again starts afresh (no catch-up).
            for sid in ("nightly", "nightly-catch-up"):
                await stores[0].set_enabled(sid, False, now=clock.now().timestamp())
            clock.set(datetime(2024, 10, 26, 12, tzinfo=UTC))
            for sid in ("nightly", "nightly-catch-up"):
                await stores[0].set_enabled(sid, True, now=clock.now().timestamp())
            await walk(schedulers, clock, datetime(2024, 10, 28, 12, tzinfo=UTC))

            runs = {r.run_id: r for r in await backends.history.list(user_id="ada", limit=None)}
            for sid in ("nightly", "nightly-catch-up"):
                print(f"{sid}:")
                for claim in await stores[0].slots(sid):
                    run = runs[claim.run_id or ""]
                    note = (
                        f" (stands for {claim.missed} missed)" if claim.kind == "catch_up" else ""
                    )
                    print(
                        f"  {local(claim.slot_time)}  {claim.kind:<8} {claim.claimed_by}  "
                        f"run {run.status} on {run.thread_id}{note}"
                    )
            fired = sum(s.fired for s in schedulers)
            print(f"{fired} slots fired, each once; {len(runs)} runs in the history")
        finally:
            for store in stores:
                await store.aclose()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(pathlib.Path(tmp) / "flowcore.db"))
