"""Spec: runs of several processes write one SQLite memory file at once without "locked".

Many runs of one process share a ``SqliteStore`` while other processes write
the same file. A write must then wait for the other process's lock, as the
busy timeout allows, even when another run of its own process is reading at
that moment: a read left half-stepped on the connection the write uses would
make SQLite fail the write at once with "database is locked" (the read
snapshot cannot be upgraded while another process writes), which is what
pipelines' ``save_memory`` step used to hit.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from flowcore.memory import MemoryManager, SqliteStore

HERE = Path(__file__).parent
REPO = HERE.parents[1]
PREFS = ("users", "ada", "preferences")


def _start(script: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        text=True,
    )


async def test_a_put_waits_for_another_process_while_a_read_of_the_same_store_is_under_way(
    tmp_path: Path,
) -> None:
    db = tmp_path / "flowcore.db"
    async with SqliteStore(db) as store:
        for key in ("food", "drink", "city"):  # a read with rows left to step through
            await store.put(PREFS, key, key.upper())
        holder = _start(REPO / "tests" / "sqlite_lock_holder.py", str(db))
        try:
            assert await asyncio.to_thread(holder.stdout.readline) == "locked\n"  # type: ignore[union-attr]

            async def read_then_let_go() -> list[str]:
                # Another run of this process reads while the other process holds the
                # write lock; the lock is let go only once that read is done.
                items = await store.list(PREFS)
                holder.stdin.write("go\n")  # type: ignore[union-attr]
                holder.stdin.flush()  # type: ignore[union-attr]
                return [item.key for item in items]

            read, _ = await asyncio.gather(read_then_let_go(), store.put(PREFS, "music", "jazz"))
            out, err = await asyncio.to_thread(holder.communicate, timeout=60)
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.communicate()
        assert holder.returncode == 0, err
        assert out == "released\n"
        assert sorted(read) == ["city", "drink", "food"]
        assert await MemoryManager(store).preferences("ada") == {
            "city": "CITY",
            "drink": "DRINK",
            "food": "FOOD",
            "music": "jazz",
        }


def test_processes_each_running_pipelines_at_once_on_one_file_save_every_memory(
    tmp_path: Path,
) -> None:
    db = tmp_path / "flowcore.db"
    processes, runs, rounds = 3, 6, 4
    # The first process creates the file alone; the rest start together.
    first = _start(HERE / "pipeline_process.py", str(db), "p0", "1", "1")
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err[-2000:]
    procs = [
        _start(HERE / "pipeline_process.py", str(db), f"p{k}", str(runs), str(rounds))
        for k in range(1, processes + 1)
    ]
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

    outcomes = [tuple(map(str, o)) for report in reports for o in report["outcomes"]]
    assert Counter(outcomes) == Counter({("completed", "[]"): processes * runs * rounds})

    async def remembered() -> tuple[dict[str, str], Counter[str]]:
        async with SqliteStore(db) as store:
            memory = MemoryManager(store)
            users = [f"p{k}-u{u}" for k in range(1, processes + 1) for u in range(runs)]
            cities = {u: (await memory.preferences(u))["city"] for u in users}
            recorded = Counter(
                {u: len(await memory.history(u, "weather", limit=100)) for u in users}
            )
        return cities, recorded

    cities, recorded = asyncio.run(remembered())
    # A remembered preference wins over later input: each user keeps the first run's city.
    assert cities == {u: f"{u}-city-0" for u in cities}
    assert set(recorded.values()) == {rounds}  # every run's record, none lost
