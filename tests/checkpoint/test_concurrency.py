"""Spec: many runs at once on one SQLite file lose no checkpoint and never see "locked".

200 concurrent runs on distinct threads in one process, and 4 processes
running 20 runs each against the same file. Afterwards every thread holds
its complete history and final state, and the file passes integrity_check.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from flowcore import SqliteCheckpointer

from . import concurrency_worker as worker

WORKER = Path(__file__).with_name("concurrency_worker.py")
# One checkpoint before each of the 5 supersteps, plus the final one.
CHECKPOINTS_PER_RUN = worker.STEPS + 1


async def verify(db: Path, threads: list[str]) -> None:
    async with SqliteCheckpointer(db) as store:
        app = worker.build(store)
        for thread in threads:
            history = await app.get_state_history(thread)
            assert len(history) == CHECKPOINTS_PER_RUN, thread
            assert [s.step for s in history] == list(range(worker.STEPS, -1, -1)), thread
            final = history[0]
            assert final.next == ()
            assert final.values["log"] == worker.expected_log(thread)
            # Each checkpoint's parent is the one before it: no link is missing.
            ids = [s.checkpoint_id for s in history]
            assert [s.parent_id for s in history] == [*ids[1:], None]
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_200_concurrent_runs_in_one_process(tmp_path: Path) -> None:
    db = tmp_path / "busy.db"

    report = asyncio.run(worker.run_many(str(db), "t", 200))

    assert report == {"completed": 200, "errors": []}
    asyncio.run(verify(db, [f"t{i}" for i in range(200)]))


def test_four_processes_with_20_runs_each_share_one_file(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(db), f"p{k}-", "20"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(4)
    ]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "locked" not in err
        reports.append(json.loads(out.strip().splitlines()[-1]))

    assert reports == [{"completed": 20, "errors": []}] * 4
    asyncio.run(verify(db, [f"p{k}-{i}" for k in range(4) for i in range(20)]))
