"""Spec: the server's one database connection takes writes from many coroutines at once.

Two hundred runs ending together each store their record and their events
(a ``BEGIN IMMEDIATE`` transaction) on the shared connection; without turns
the second ``BEGIN`` failed with "cannot start a transaction within a
transaction" and those runs' events were never stored (found by
``bench/serve_load.py``).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from flowcore.port.events import AiEvent, DataAiEvent, DoneAiEvent
from flowcore.server.db import ServerDatabase
from flowcore.server.run_store import RunRow, RunStore, ended

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


async def test_runs_ending_together_store_every_record_and_event(tmp_path: Path) -> None:
    async with ServerDatabase(tmp_path / "flowcore.db") as db:
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


async def test_a_failed_transaction_rolls_back_only_its_own_rows(tmp_path: Path) -> None:
    async with ServerDatabase(tmp_path / "flowcore.db") as db:
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
