"""Spec: thread leases in the SQLite file, shared by every store (and process) on it.

The lease semantics every store shares are in the contract (``contract.py``);
here is what is SQLite's own: the ``thread_leases`` table and its migration,
takers on separate connections (as separate processes are), a lease that
outlives the store that took it, and the ``lease_ttl`` setting.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from flowcore.checkpoint import DEFAULT_LEASE_TTL, PendingWrite, ThreadLease, WriteAt
from flowcore.checkpoint.sqlite import SCHEMA_VERSION, SqliteCheckpointer
from flowcore.errors import (
    CheckpointNotFoundError,
    InvalidInputError,
    ThreadBusyError,
)

from .contract import make_cp
from .test_sqlite_store import query, write_v1_file


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "threads.db"


async def test_a_new_file_has_an_empty_lease_table(db: Path) -> None:
    async with SqliteCheckpointer(db) as store:
        assert store.lease_ttl == DEFAULT_LEASE_TTL == 30.0

    assert await asyncio.to_thread(query, db, "SELECT * FROM thread_leases") == []


async def test_an_older_file_gets_the_lease_table_when_migrated(db: Path) -> None:
    await asyncio.to_thread(write_v1_file, db, [make_cp("t", "c1"), make_cp("t", "c2", "c1")])

    async with SqliteCheckpointer(db) as store:
        lease = await store.acquire_lease("t", "run-a")

    version = "SELECT value FROM flowcore_meta WHERE key = 'schema_version'"
    assert await asyncio.to_thread(query, db, version) == [(str(SCHEMA_VERSION),)]
    rows = await asyncio.to_thread(
        query, db, "SELECT thread_id, holder, expires_at FROM thread_leases"
    )
    assert rows == [("t", "run-a", lease.expires_at)]


async def test_takers_on_separate_connections_race_and_exactly_one_wins(db: Path) -> None:
    stores = [await SqliteCheckpointer.open(db) for _ in range(6)]
    try:
        outcomes = await asyncio.gather(
            *(s.acquire_lease("t", f"run-{i}") for i, s in enumerate(stores)),
            return_exceptions=True,
        )
    finally:
        for store in stores:
            await store.aclose()

    won = [o for o in outcomes if isinstance(o, ThreadLease)]
    refused = [o for o in outcomes if isinstance(o, ThreadBusyError)]
    assert (len(won), len(refused)) == (1, 5), outcomes
    assert {o.holder for o in refused} == {won[0].holder}
    rows = await asyncio.to_thread(query, db, "SELECT holder FROM thread_leases")
    assert rows == [(won[0].holder,)]


async def test_a_lease_outlives_the_store_that_took_it_until_it_expires(db: Path) -> None:
    # Closing without releasing is what a process that dies leaves behind.
    # Long enough that the second store opens and is refused before it lapses on a
    # busy machine.
    async with SqliteCheckpointer(db, lease_ttl=1.0) as first:
        lease = await first.acquire_lease("t", "run-a")

    async with SqliteCheckpointer(db) as second:
        with pytest.raises(ThreadBusyError) as caught:
            await second.acquire_lease("t", "run-b")
        assert caught.value.holder == "run-a"
        assert caught.value.expires_at == pytest.approx(lease.expires_at)

        await asyncio.sleep(max(0.0, lease.expires_at - time.time()) + 0.05)
        taken = await second.acquire_lease("t", "run-b")

    assert taken.holder == "run-b"
    assert taken.ttl == DEFAULT_LEASE_TTL  # each taker's own setting


async def test_releasing_removes_the_row(db: Path) -> None:
    async with SqliteCheckpointer(db) as store:
        await store.acquire_lease("t", "run-a")
        await store.release_lease("t", "run-a")

    assert await asyncio.to_thread(query, db, "SELECT * FROM thread_leases") == []


@pytest.mark.parametrize("ttl", [0, -1.0, float("inf"), float("nan"), True, "30"])
def test_lease_ttl_must_be_a_positive_number_of_seconds(db: Path, ttl: object) -> None:
    with pytest.raises(InvalidInputError, match="lease_ttl must be a positive number"):
        SqliteCheckpointer(db, lease_ttl=ttl)  # type: ignore[arg-type]
    assert not db.exists()


# ------------------------------------------------ a run's last batch carries the release


async def test_the_last_batch_and_the_release_commit_together(db: Path) -> None:
    async with SqliteCheckpointer(db) as store:
        await store.acquire_lease("t", "run-a")
        commits: list[str] = []
        store.before_commit = lambda: commits.append("commit")

        await store.put_many_and_release(
            [make_cp("t", "c1"), WriteAt("t", "c1", PendingWrite("n", {"x": 1}))], "t", "run-a"
        )

        assert commits == ["commit"]
        assert [cp.checkpoint_id for cp in await store.history("t")] == ["c1"]
        assert await store.get_writes("t", "c1") == (PendingWrite("n", {"x": 1}),)
    assert await asyncio.to_thread(query, db, "SELECT * FROM thread_leases") == []


async def test_a_batch_that_cannot_be_stored_keeps_the_lease_and_raises_its_own_error(
    db: Path,
) -> None:
    async with SqliteCheckpointer(db) as store:
        lease = await store.acquire_lease("t", "run-a")
        # The parent is missing: put_many's error, and nothing of the batch is stored.
        with pytest.raises(CheckpointNotFoundError, match="parent checkpoint 'nope'"):
            await store.put_many_and_release(
                [make_cp("t", "c1"), make_cp("t", "c2", "nope")], "t", "run-a"
            )
        assert await store.history("t") == []
        rows = await asyncio.to_thread(query, db, "SELECT holder, expires_at FROM thread_leases")
        assert rows == [("run-a", lease.expires_at)]
        # The run's lease is then given back on its own, as before.
        await store.release_lease("t", "run-a")
    assert await asyncio.to_thread(query, db, "SELECT * FROM thread_leases") == []


async def test_the_release_in_a_batch_leaves_another_holder_s_lease_alone(db: Path) -> None:
    async with SqliteCheckpointer(db) as store:
        await store.acquire_lease("t", "run-b")
        await store.put_many_and_release([make_cp("t", "c1")], "t", "run-a")
        await store.put_many_and_release([], "t", "run-a")  # nothing to store: a release
        assert [cp.checkpoint_id for cp in await store.history("t")] == ["c1"]
        with pytest.raises(ThreadBusyError):
            await store.acquire_lease("t", "run-a")


async def test_an_empty_batch_only_gives_the_lease_back(db: Path) -> None:
    async with SqliteCheckpointer(db) as store:
        await store.acquire_lease("t", "run-a")
        await store.put_many_and_release([], "t", "run-a")
    assert await asyncio.to_thread(query, db, "SELECT * FROM thread_leases") == []


# -------------------------------------------- a lease taken in one statement of its own


async def test_taking_a_lease_is_one_commit_and_a_failed_commit_takes_nothing(db: Path) -> None:
    async with SqliteCheckpointer(db) as store:
        commits: list[str] = []
        store.before_commit = lambda: commits.append("commit")
        await store.acquire_lease("t", "run-a")
        await store.acquire_lease("t", "run-a")  # a renewal
        assert commits == ["commit", "commit"]

        def fail() -> None:
            raise RuntimeError("boom just before the write")

        store.before_commit = fail
        with pytest.raises(RuntimeError, match="boom"):
            await store.acquire_lease("u", "run-a")
        store.before_commit = None
        rows = await asyncio.to_thread(query, db, "SELECT thread_id FROM thread_leases")
        assert rows == [("t",)]
        # The store is still usable.
        assert (await store.acquire_lease("u", "run-a")).holder == "run-a"


async def test_a_lease_given_back_between_the_take_and_the_look_is_taken(db: Path) -> None:
    async with SqliteCheckpointer(db, lease_ttl=30.0) as store, SqliteCheckpointer(db) as other:
        await other.acquire_lease("t", "run-b")
        # run-b gives the thread back just after run-a's take found it held (between
        # the take and the look at who holds it): run-a takes it on the next try.
        calls = {"n": 0}
        real = aiosqlite.Connection.execute_fetchall

        async def racing(conn: Any, sql: str, *args: Any) -> Any:
            rows = await real(conn, sql, *args)
            if sql.startswith("INSERT INTO thread_leases") and calls["n"] == 0:
                calls["n"] += 1
                await other.release_lease("t", "run-b")
            return rows

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(aiosqlite.Connection, "execute_fetchall", racing)
            lease = await store.acquire_lease("t", "run-a")
    assert calls["n"] == 1  # the race happened
    assert lease.holder == "run-a"
    assert await asyncio.to_thread(query, db, "SELECT holder FROM thread_leases") == [("run-a",)]
