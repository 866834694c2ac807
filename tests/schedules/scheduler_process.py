"""One scheduler process for the at-most-once specs: walks a timeline of ticks, runs its slots.

    python tests/schedules/scheduler_process.py DATABASE NAME START_EPOCH TICKS STEP_SECONDS

DATABASE is a file path or a postgresql:// URL. The process opens the same
stores ``flowcore scheduler`` opens, sets a manual clock to each tick of the
timeline in turn (no sleeping), runs every slot it wins through the pipeline
runner with the offline model, and prints the slots it won as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from flowcore.cli.workspace import open_workspace
from flowcore.llm.offline import OfflineProvider
from flowcore.schedules import ManualClock, RunnerSink, Scheduler, open_schedule_store
from flowcore.storage import parse_database_url


async def main(database: str, name: str, start: float, ticks: int, step: float) -> None:
    target = parse_database_url(database)
    clock = ManualClock(datetime.fromtimestamp(start, UTC))
    won: list[list[object]] = []
    async with (
        open_workspace(Path(target.location), database=target) as ws,
        open_schedule_store(target) as store,
    ):
        scheduler = Scheduler(
            store,
            RunnerSink(ws.runner(OfflineProvider(), None, []), store),
            clock=clock,
            name=name,  # the default max_running: several runs at once per process
        )
        for n in range(ticks):
            clock.set(datetime.fromtimestamp(start, UTC) + timedelta(seconds=n * step))
            for due in await scheduler.tick():
                won.append([due.claim.schedule_id, due.claim.slot])
            await asyncio.sleep(0)
        await scheduler.drain()
    print(json.dumps({"name": name, "won": won, "failed": scheduler.failed}))


if __name__ == "__main__":
    db, who, first, count, every = sys.argv[1:6]
    asyncio.run(main(db, who, float(first), int(count), float(every)))
