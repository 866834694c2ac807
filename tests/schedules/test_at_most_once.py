"""Spec: three scheduler processes on one database fire every slot exactly once.

Each process (``scheduler_process.py``) walks the same 40-minute timeline
with a manual clock, ticking every 20 seconds, and runs the slots it wins
through the pipeline runner. Two every-minute schedules give 80 slots. The
claims table, the run history and the processes' own reports must each hold
every slot exactly once. The same spec runs on one SQLite file and on a
real Postgres (``tests/pg.py``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from flowcore.cli.workspace import open_workspace
from flowcore.schedules import new_schedule, open_schedule_store, slot_thread_id
from flowcore.storage import parse_database_url

PROCESS = Path(__file__).with_name("scheduler_process.py")
REPO = Path(__file__).resolve().parents[2]
START = datetime(2024, 3, 31, 0, 0, tzinfo=UTC)
MINUTES = 40
STEP = 20.0
DIGEST: dict[str, Any] = {
    "id": "digest",
    "name": "Digest",
    "nodes": [{"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}}],
}


async def _setup(database: str) -> None:
    target = parse_database_url(database)
    # The workspace first: the checkpointer refuses a file that holds only other tables.
    async with (
        open_workspace(Path(target.location), database=target),
        open_schedule_store(target) as store,
    ):
        for sid, missed in (("every-minute-a", "skip"), ("every-minute-b", "catch_up_once")):
            await store.add(
                new_schedule(
                    DIGEST,
                    cron="* * * * *",
                    schedule_id=sid,
                    user_id="ada",
                    inputs={"doc": "the minutes"},
                    missed=missed,
                    now=START.timestamp(),
                )
            )


async def _recorded(database: str) -> tuple[list[tuple[str, float]], list[Any], list[Any]]:
    target = parse_database_url(database)
    async with (
        open_schedule_store(target) as store,
        open_workspace(Path(target.location), database=target) as ws,
    ):
        claims = await store.slots()
        runs = await ws.history.list(user_id="ada", limit=None)
    return [(c.schedule_id, c.slot) for c in claims], claims, runs


def _three_schedulers(database: str) -> None:
    asyncio.run(_setup(database))
    ticks = int(MINUTES * 60 / STEP) + 1
    procs = [
        subprocess.Popen(
            [sys.executable, str(PROCESS), database, f"scheduler-{k}", str(START.timestamp()),
             str(ticks), str(STEP)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=REPO,
            text=True,
        )
        for k in range(3)
    ]  # fmt: skip
    reports = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-2000:]
            reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()

    expected = sorted(
        (sid, (START + timedelta(minutes=m)).timestamp())
        for sid in ("every-minute-a", "every-minute-b")
        for m in range(1, MINUTES + 1)
    )
    won = [tuple(slot) for report in reports for slot in report["won"]]
    assert sorted(won) == expected  # the processes' reports: each slot won by exactly one
    assert all(report["failed"] == 0 for report in reports)

    keys, claims, runs = asyncio.run(_recorded(database))
    assert sorted(keys) == expected  # the claims table
    assert [r.errors for r in runs if r.status != "completed"] == []
    assert [(c.status, bool(c.run_id)) for c in claims] == [("completed", True)] * len(claims)
    threads = Counter(r.thread_id for r in runs)  # the run history: one run per slot
    assert threads == Counter(slot_thread_id(sid, slot) for sid, slot in expected)
    assert {r.run_id for r in runs} == {c.run_id for c in claims}
    assert all(r.status == "completed" and r.user_id == "ada" for r in runs)


def test_three_scheduler_processes_on_one_sqlite_file_fire_each_slot_once(
    tmp_path: Path,
) -> None:
    _three_schedulers(str(tmp_path / "flowcore.db"))


def test_three_scheduler_processes_on_postgres_fire_each_slot_once(pg_schema_url: str) -> None:
    _three_schedulers(pg_schema_url)
