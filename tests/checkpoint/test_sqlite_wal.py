"""Spec: the SQLite store copies its WAL into the database file off the commit path.

SQLite's own autocheckpoint runs inside the COMMIT that takes the WAL past
1,000 pages, so that commit (a run's last batch, say) waited for the copy
and its fsyncs. The store turns it off on its writer connection and copies
the WAL itself once the commit has returned and nothing is queued.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from flowcore.checkpoint.sqlite import SqliteCheckpointer

from .contract import make_cp

PAD = "x" * 100_000  # about 25 pages a record: 45 records pass the 1,000-page mark


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "threads.db"


async def test_the_writer_does_not_checkpoint_inside_a_commit(db: Path) -> None:
    async with SqliteCheckpointer(db) as store:

        async def setting(conn: aiosqlite.Connection) -> Any:
            rows = list(await conn.execute_fetchall("PRAGMA wal_autocheckpoint"))
            return rows[0][0]

        assert await store._write(setting, transaction=False, commits=False) == 0


async def test_the_wal_reaches_the_database_file_while_the_store_is_open(db: Path) -> None:
    async with SqliteCheckpointer(db) as store:
        for i in range(3):
            await store.put(make_cp(f"t{i}", "c1", metadata={"pad": PAD}))
        await store.pragmas()  # through the writer's queue: after anything it ran
        # Still in the WAL: the database file holds little more than the schema.
        small = await asyncio.to_thread(lambda: db.stat().st_size)
        assert small < 200_000

        for i in range(3, 45):
            await store.put(make_cp(f"t{i}", "c1", metadata={"pad": PAD}))
        await store.pragmas()
        copied = await asyncio.to_thread(lambda: db.stat().st_size)
        assert copied > 40 * len(PAD) // 2  # most records are in the file now
        # Every record is still read back whole.
        found = await store.get("t44")
        assert found is not None
        assert found.metadata["pad"] == PAD
