"""Spec: the server's database takes writes from many coroutines at once, on both twins.

Two hundred runs ending together each store their record and their events
(a ``BEGIN IMMEDIATE`` transaction) on the shared connection; without turns
the second ``BEGIN`` failed with "cannot start a transaction within a
transaction" and those runs' events were never stored (found by
``bench/serve_load.py``). The Postgres twin (a pool, several server
processes) is held to the same specs, and to who may take a run over.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from flowcore.port.events import AiEvent, DataAiEvent, DoneAiEvent
from flowcore.server.db import open_server_database
from flowcore.server.run_store import RunRow, RunStore, ended
from flowcore.server.schema import ServerDb
from flowcore.storage import DatabaseTarget

RUNS = 60


def _log(run_id: str) -> list[AiEvent]:
    common = {"run_id": run_id, "graph_name": "g", "graph_version": "1", "request_id": run_id}
    events: list[AiEvent] = [
        DataAiEvent(
            **common, trace_id=run_id, seq=i, node="work", name="progress", data={"step": i}
        )
        for i in range(4)
    ]
    events.append(DoneAiEvent(**common, trace_id=run_id, seq=4, status="completed"))
    return events


@pytest.fixture
async def db(tmp_path: Path, database: DatabaseTarget | None) -> AsyncIterator[ServerDb]:
    """The server's tables on the SQLite file or on Postgres (``database`` from conftest)."""
    async with open_server_database(tmp_path / "flowcore.db", database) as opened:
        yield opened


async def test_runs_ending_together_store_every_record_and_event(db: ServerDb) -> None:
    store = RunStore(db)
    rows = [
        RunRow(f"r{i}", "ada", None, {"graph": "g"}, "g", None, "running", float(i))
        for i in range(RUNS)
    ]
    await asyncio.gather(*(store.insert(row) for row in rows))

    async def end(row: RunRow) -> None:
        # What RunManager._end does: the record, then the log, then done once more.
        await store.update(ended(row, "completed"))
        log = _log(row.run_id)
        await store.save_events(row.run_id, log[:-1])
        await store.save_events(row.run_id, log[-1:])

    await asyncio.gather(*(end(row) for row in rows))
    for row in rows:
        stored = await store.events(row.run_id)
        assert [e.seq for e in stored] == [0, 1, 2, 3, 4], row.run_id
        assert stored[-1].type == "done"
        saved = await store.get(row.run_id)
        assert saved is not None
        assert saved.status == "completed"


async def test_a_failed_transaction_rolls_back_only_its_own_rows(db: ServerDb) -> None:
    store = RunStore(db)
    row = RunRow("r1", "ada", None, {"graph": "g"}, "g", None, "running", 1.0)
    await store.insert(row)
    sql = "INSERT INTO flowcore_server_events (run_id, seq, event) VALUES (?, ?, ?)"
    # The second row repeats the primary key: that transaction fails and is rolled back,
    # while the lone update sent at the same time still lands.
    results = await asyncio.gather(
        db.executemany(sql, [("r1", 0, "{}"), ("r1", 0, "{}")]),
        store.update(replace(row, status="completed")),
        return_exceptions=True,
    )
    assert isinstance(results[0], Exception)
    assert results[1] is None
    assert await db.fetchall("SELECT seq FROM flowcore_server_events") == []
    saved = await store.get("r1")
    assert saved is not None
    assert saved.status == "completed"


def _running(run_id: str) -> RunRow:
    return RunRow(run_id, "ada", "t-" + run_id, {"graph": "g"}, "g", None, "running", 1.0)


async def test_a_run_is_orphaned_only_when_its_server_stops_beating(
    tmp_path: Path, database: DatabaseTarget | None
) -> None:
    async with AsyncExitStack() as stack:
        # Two servers: two connections to one database (one file on SQLite).
        path = tmp_path / "shared.db"
        one = RunStore(await stack.enter_async_context(open_server_database(path, database)))
        two = RunStore(await stack.enter_async_context(open_server_database(path, database)))
        await one.beat()
        await one.insert(_running("r1"))

        assert await two.unfinished(stale_after=30.0) == []
        # Silent for longer than the window (a killed process): orphaned.
        await asyncio.sleep(0.05)
        [found] = await two.unfinished(stale_after=0.01)
        assert (found.run_id, found.server_id) == ("r1", one.server_id)
        # A clean stop removes the beat: orphaned at once.
        await one.beat()
        await one.leave()
        [found] = await two.unfinished(stale_after=30.0)

        # Of two servers taking it over together, one wins; the loser's claim changes nothing.
        three = RunStore(two.db)
        claims = await asyncio.gather(two.claim(found), three.claim(found))
        won = [c for c in claims if c is not None]
        assert len(won) == 1
        stored = await two.get("r1")
        assert stored is not None
        assert stored.server_id == won[0].server_id
        assert stored.status == "running"
        assert won[0].server_id in (two.server_id, three.server_id)
        # Its new server beats: nobody else sees it as orphaned.
        await (two if won[0].server_id == two.server_id else three).beat()
        assert await one.unfinished(stale_after=30.0) == []


async def test_a_runs_own_server_may_continue_it(db: ServerDb) -> None:
    store = RunStore(db)
    await store.beat()
    await store.insert(replace(_running("r2"), started_at=time.time()))
    assert [r.run_id for r in await store.unfinished()] == ["r2"]


async def test_a_file_from_before_server_ownership_gains_its_columns(tmp_path: Path) -> None:
    import sqlite3

    from flowcore.server.db import ServerDatabase

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # the runs table as an older flowcore made it
        conn.execute(
            "CREATE TABLE flowcore_server_runs (run_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, "
            "thread_id TEXT, target TEXT NOT NULL, target_name TEXT NOT NULL, input TEXT, "
            "status TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL, "
            "input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0, "
            "error TEXT, interrupts TEXT NOT NULL DEFAULT '[]', output TEXT, continues TEXT, "
            "continued_by TEXT, resume TEXT)"
        )
        conn.execute(
            "INSERT INTO flowcore_server_runs (run_id, user_id, target, target_name, status, "
            "started_at) VALUES ('old', 'ada', '{\"graph\": \"g\"}', 'g', 'suspended', 1.0)"
        )
    conn.close()
    async with ServerDatabase(path) as db:
        store = RunStore(db)
        [left] = await store.unfinished()
        assert (left.run_id, left.server_id) == ("old", None)
        claimed = await store.claim(left)
        assert claimed is not None
        assert claimed.server_id == store.server_id
        assert await store.request_cancel("old")
        assert await store.cancels_requested() == ["old"]
