"""Spec: what ``SqliteCheckpointer`` adds to the contract: the file, its safety, its lifecycle.

The protocol itself is specified in ``contract.py`` and run against this
store in ``test_contract.py``. Here: the pragmas it runs with, the schema
and its migrations, refusing files that are not its own without touching
them, WAL truncation, open/close, and many writers (one loop, two
instances, four OS processes) on one file.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from flowcore.checkpoint import Checkpoint, JsonSerializer, PendingWrite
from flowcore.checkpoint.records import checkpoint_to_record
from flowcore.checkpoint.sqlite import SCHEMA_VERSION, SqliteCheckpointer
from flowcore.errors import CheckpointError, CheckpointStoreError

from .contract import make_cp, put_chain


def query(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one statement on a fresh sqlite3 connection (call through asyncio.to_thread)."""
    con = sqlite3.connect(path)
    try:
        return list(con.execute(sql, params))
    finally:
        con.close()


def sql_script(path: Path, script: str) -> None:
    con = sqlite3.connect(path)
    try:
        con.executescript(script)
    finally:
        con.close()


def fingerprint(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file in a directory with its bytes and mtime, to prove nothing was touched."""
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(directory.iterdir())}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "threads.db"


# ---------------------------------------------------------------------- settings


async def test_the_file_is_in_wal_mode_for_every_connection(db: Path) -> None:
    async with SqliteCheckpointer(db) as store:
        await put_chain(store, "t", ["c1"])
        assert await asyncio.to_thread(query, db, "PRAGMA journal_mode") == [("wal",)]
        pragmas = await store.pragmas()
    assert pragmas["writer"]["journal_mode"] == "wal"
    assert pragmas["reader"]["journal_mode"] == "wal"


@pytest.mark.parametrize(
    ("options", "synchronous", "busy_ms"),
    [
        ({}, "NORMAL", 5000),
        ({"synchronous": "FULL", "busy_timeout": 7.5}, "FULL", 7500),
    ],
)
async def test_synchronous_and_busy_timeout_are_set_on_both_connections(
    db: Path, options: dict[str, Any], synchronous: str, busy_ms: int
) -> None:
    # Both are per-connection settings: another connection cannot see them.
    async with SqliteCheckpointer(db, **options) as store:
        pragmas = await store.pragmas()
    for side in ("writer", "reader"):
        assert pragmas[side]["synchronous"] == synchronous
        assert pragmas[side]["busy_timeout"] == busy_ms


async def test_a_write_waits_for_another_connections_write_lock(db: Path) -> None:
    locked, committed = threading.Event(), threading.Event()

    def hold_the_write_lock() -> None:
        con = sqlite3.connect(db, isolation_level=None)
        try:
            con.execute("BEGIN IMMEDIATE")
            con.execute("INSERT INTO flowcore_meta VALUES ('held', 'yes')")
            locked.set()
            time.sleep(0.2)  # the store's put queues up behind this lock meanwhile
            con.execute("COMMIT")
            committed.set()
        finally:
            con.close()

    async with SqliteCheckpointer(db) as store:
        holder = asyncio.create_task(asyncio.to_thread(hold_the_write_lock))
        await asyncio.to_thread(locked.wait)
        await store.put(make_cp("t", "c1"))  # must wait, not fail with "database is locked"
        assert committed.is_set()  # it could only commit once the other lock was gone
        await holder
        assert (await store.get("t")) == make_cp("t", "c1")
    assert await asyncio.to_thread(
        query, db, "SELECT value FROM flowcore_meta WHERE key = 'held'"
    ) == [("yes",)]


@pytest.mark.parametrize(
    ("path", "options", "message"),
    [
        ("x.db", {"synchronous": "OFF"}, "synchronous"),
        ("x.db", {"busy_timeout": 1.0}, "at least 5"),
        ("x.db", {"wal_truncate_every": 0}, "wal_truncate_every"),
        (":memory:", {}, "InMemoryCheckpointer"),
    ],
)
def test_bad_options_are_refused_up_front(
    tmp_path: Path, path: str, options: dict[str, Any], message: str
) -> None:
    target = path if path == ":memory:" else tmp_path / path
    with pytest.raises(ValueError, match=message):
        SqliteCheckpointer(target, **options)


# ---------------------------------------------------------------------- lifecycle


async def test_data_survives_close_and_reopen_in_a_new_instance(db: Path) -> None:
    first = await SqliteCheckpointer.open(db)
    await first.put(make_cp("t", "c1", snapshot={"values": {"x": (1, 2)}, "outputs": {}}))
    await first.put(make_cp("t", "c2", "c1", step=1, writes=((("a", {"x": 3}),),)))
    await first.put_write("t", "c2", PendingWrite("b", {"status": "completed"}))
    saved = await first.history("t")
    await first.aclose()

    async with SqliteCheckpointer(db) as second:
        assert await second.history("t") == saved
        assert await second.get_writes("t", "c2") == (PendingWrite("b", {"status": "completed"}),)
        await second.put(make_cp("t", "c3", "c2", step=2))
        assert [c.checkpoint_id for c in await second.history("t")] == ["c3", "c2", "c1"]


async def test_every_method_before_open_raises_a_clear_error_and_creates_no_file(
    db: Path,
) -> None:
    store = SqliteCheckpointer(db)
    calls = [
        store.put(make_cp("t", "c1")),
        store.put_write("t", "c1", PendingWrite("a", {})),
        store.get("t"),
        store.get_writes("t", "c1"),
        store.history("t"),
        store.delete_thread("t"),
        store.pragmas(),
    ]
    for call in calls:
        with pytest.raises(CheckpointError, match="is not open; use 'async with"):
            await call
    assert not await asyncio.to_thread(db.exists)
    await store.aclose()  # closing a store never opened is fine


async def test_a_closed_store_refuses_work_and_cannot_be_reopened(db: Path) -> None:
    store = await SqliteCheckpointer.open(db)
    await store.aclose()
    with pytest.raises(CheckpointError, match="has been closed"):
        await store.put(make_cp("t", "c1"))
    with pytest.raises(CheckpointError, match="has been closed"):
        await store.get("t")
    with pytest.raises(CheckpointError, match="create a new SqliteCheckpointer"):
        async with store:
            pass


async def test_aclose_finishes_every_write_already_queued(db: Path) -> None:
    store = await SqliteCheckpointer.open(db)
    puts = [asyncio.create_task(store.put(make_cp(f"t{i}", "c1"))) for i in range(50)]
    await asyncio.sleep(0)  # each task has queued its write
    await store.aclose()
    assert await asyncio.gather(*puts, return_exceptions=True) == [None] * 50
    async with SqliteCheckpointer(db) as reopened:
        for i in range(50):
            assert await reopened.get(f"t{i}") == make_cp(f"t{i}", "c1")


async def test_aclose_leaves_no_task_and_no_thread_behind(db: Path) -> None:
    await asyncio.to_thread(int)  # the loop's own executor thread is not ours to stop
    threads_before = set(threading.enumerate())
    store = await SqliteCheckpointer.open(db)
    await put_chain(store, "t", ["c1", "c2"])
    await store.get("t")
    assert len(asyncio.all_tasks()) > 1  # the writer task is running
    await store.aclose()
    assert asyncio.all_tasks() == {asyncio.current_task()}
    # aiosqlite's threads exit right after handing back close(); give them a moment
    # (a generous one: a busy machine may not run them for a while).
    for _ in range(3000):  # at least 30 s
        if set(threading.enumerate()) <= threads_before:
            break
        await asyncio.sleep(0.01)
    assert set(threading.enumerate()) - threads_before == set()


async def test_a_write_cancelled_before_the_writer_reaches_it_is_not_stored(db: Path) -> None:
    async with SqliteCheckpointer(db) as store:
        first = asyncio.create_task(store.put(make_cp("t", "first")))
        second = asyncio.create_task(store.put(make_cp("u", "second")))
        await asyncio.sleep(0)  # both are queued; the writer is still on the first
        second.cancel()
        await first
        with pytest.raises(asyncio.CancelledError):
            await second
        await put_chain(store, "v", ["after"])  # the writer carries on
        assert await store.get("t") is not None
        assert await store.get("u") is None
        assert await store.get("v") is not None


async def test_a_failing_transaction_leaves_nothing_and_the_store_usable(db: Path) -> None:
    async with SqliteCheckpointer(db) as store:
        await put_chain(store, "t", ["c1"])

        def fail() -> None:
            raise RuntimeError("boom just before COMMIT")

        store.before_commit = fail
        with pytest.raises(RuntimeError, match="boom"):
            await store.put(make_cp("t", "c2", "c1"))
        with pytest.raises(RuntimeError, match="boom"):
            await store.put_write("t", "c1", PendingWrite("a", {}))
        with pytest.raises(RuntimeError, match="boom"):
            await store.delete_thread("t")
        store.before_commit = None
        assert [c.checkpoint_id for c in await store.history("t")] == ["c1"]
        assert await store.get_writes("t", "c1") == ()
        await store.put(make_cp("t", "c2", "c1"))
        assert [c.checkpoint_id for c in await store.history("t")] == ["c2", "c1"]


async def test_an_undecodable_record_is_reported_as_a_store_error(db: Path) -> None:
    async with SqliteCheckpointer(db) as store:
        await put_chain(store, "t", ["c1"])
        await asyncio.to_thread(
            sql_script, db, "UPDATE checkpoints SET record = x'00ff' WHERE checkpoint_id = 'c1'"
        )
        with pytest.raises(CheckpointStoreError, match="cannot decode a checkpoint of thread 't'"):
            await store.get("t")


# ---------------------------------------------------------------------- schema


async def test_a_new_file_gets_the_current_schema(db: Path) -> None:
    async with SqliteCheckpointer(db):
        pass
    rows = await asyncio.to_thread(query, db, "SELECT key, value FROM flowcore_meta")
    assert rows == [("schema_version", str(SCHEMA_VERSION))]
    names = {r[0] for r in await asyncio.to_thread(query, db, "SELECT name FROM sqlite_master")}
    assert {"flowcore_meta", "checkpoints", "writes", "checkpoints_history", "writes_order"} <= (
        names
    )


async def test_an_empty_file_is_taken_as_a_new_store(db: Path) -> None:
    await asyncio.to_thread(db.touch)
    async with SqliteCheckpointer(db) as store:
        await put_chain(store, "t", ["c1"])
        assert await store.get("t") is not None


# What flowcore wrote at schema version 1: no is_snapshot column, no indexes.
SCHEMA_V1 = """
CREATE TABLE flowcore_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE checkpoints (
    seq INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    parent_id TEXT,
    step INTEGER NOT NULL,
    created_at REAL NOT NULL,
    record BLOB NOT NULL,
    UNIQUE (thread_id, checkpoint_id)
);
CREATE TABLE writes (
    thread_id TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    node TEXT NOT NULL,
    seq INTEGER NOT NULL,
    payload BLOB NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_id, node)
);
INSERT INTO flowcore_meta VALUES ('schema_version', '1');
"""


def write_v1_file(
    path: Path, checkpoints: list[Checkpoint], *, record: bytes | None = None
) -> None:
    serde = JsonSerializer()
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.executescript(SCHEMA_V1)
        for cp in checkpoints:
            con.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, created_at, "
                "record) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    cp.thread_id,
                    cp.checkpoint_id,
                    cp.parent_id,
                    cp.step,
                    cp.created_at,
                    record or serde.dumps(checkpoint_to_record(cp)),
                ),
            )
        con.execute(
            "INSERT INTO writes VALUES ('t', 'c2', 'a', 1, ?)", (serde.dumps({"status": "ok"}),)
        )
    finally:
        con.close()


async def test_a_version_1_file_is_migrated_on_open_and_keeps_its_data(db: Path) -> None:
    old = [
        make_cp("t", "c1", snapshot={"values": {"x": 1}, "outputs": {}}),
        make_cp("t", "c2", "c1", step=1, writes=((("a", {"x": 2}),),)),
    ]
    await asyncio.to_thread(write_v1_file, db, old)

    async with SqliteCheckpointer(db) as store:
        assert await store.history("t") == old[::-1]
        assert await store.get_writes("t", "c2") == (PendingWrite("a", {"status": "ok"}),)
        await store.put(make_cp("t", "c3", "c2", step=2, snapshot={"values": {}, "outputs": {}}))

    assert await asyncio.to_thread(
        query, db, "SELECT value FROM flowcore_meta WHERE key = 'schema_version'"
    ) == [(str(SCHEMA_VERSION),)]
    flags = await asyncio.to_thread(
        query, db, "SELECT checkpoint_id, is_snapshot FROM checkpoints ORDER BY seq"
    )
    assert flags == [("c1", 1), ("c2", 0), ("c3", 1)]
    indexes = await asyncio.to_thread(
        query,
        db,
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'",
    )
    assert sorted(r[0] for r in indexes) == ["checkpoints_history", "writes_order"]


async def test_a_migration_that_fails_changes_nothing(db: Path) -> None:
    # A record the backfill cannot decode: the whole upgrade must roll back.
    await asyncio.to_thread(write_v1_file, db, [make_cp("t", "c1")], record=b"\x00not json")
    with pytest.raises(CheckpointStoreError, match="cannot migrate") as caught:
        await SqliteCheckpointer.open(db)
    assert str(db) in str(caught.value)
    assert await asyncio.to_thread(
        query, db, "SELECT value FROM flowcore_meta WHERE key = 'schema_version'"
    ) == [("1",)]
    columns = await asyncio.to_thread(query, db, "PRAGMA table_info(checkpoints)")
    assert "is_snapshot" not in {c[1] for c in columns}


async def test_a_file_from_a_newer_flowcore_is_refused_untouched(db: Path) -> None:
    async with SqliteCheckpointer(db) as store:
        await put_chain(store, "t", ["c1"])
    await asyncio.to_thread(
        sql_script, db, "UPDATE flowcore_meta SET value = '99' WHERE key = 'schema_version'"
    )
    before = await asyncio.to_thread(fingerprint, db.parent)
    with pytest.raises(CheckpointStoreError, match="upgrade flowcore") as caught:
        await SqliteCheckpointer.open(db)
    assert str(db) in str(caught.value)
    assert "99" in str(caught.value)
    assert await asyncio.to_thread(fingerprint, db.parent) == before


@pytest.fixture
def random_bytes() -> bytes:
    return random.Random(7).randbytes(8192)


@pytest.mark.parametrize("kind", ["random bytes", "sqlite header then garbage"])
async def test_a_corrupt_file_is_refused_untouched(
    db: Path, random_bytes: bytes, kind: str
) -> None:
    head = b"SQLite format 3\x00" if kind.startswith("sqlite") else b""
    await asyncio.to_thread(db.write_bytes, head + random_bytes[len(head) :])
    before = await asyncio.to_thread(fingerprint, db.parent)
    with pytest.raises(CheckpointStoreError, match="not an SQLite database") as caught:
        await SqliteCheckpointer.open(db)
    assert str(db) in str(caught.value)
    assert await asyncio.to_thread(fingerprint, db.parent) == before


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
async def test_a_foreign_sqlite_database_is_refused_untouched(db: Path, journal_mode: str) -> None:
    await asyncio.to_thread(
        sql_script,
        db,
        f"PRAGMA journal_mode = {journal_mode}; "
        "CREATE TABLE users (id INTEGER PRIMARY KEY); INSERT INTO users VALUES (1);",
    )
    before = await asyncio.to_thread(fingerprint, db.parent)
    with pytest.raises(CheckpointStoreError) as caught:
        async with SqliteCheckpointer(db):
            pass
    message = str(caught.value)
    assert str(db) in message
    assert "something else" in message
    assert "(tables: users; no flowcore_meta table)" in message
    assert await asyncio.to_thread(fingerprint, db.parent) == before


async def test_a_meta_table_without_a_version_is_refused_untouched(db: Path) -> None:
    await asyncio.to_thread(
        sql_script, db, "CREATE TABLE flowcore_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    )
    before = await asyncio.to_thread(fingerprint, db.parent)
    with pytest.raises(CheckpointStoreError, match="no valid schema_version"):
        await SqliteCheckpointer.open(db)
    assert await asyncio.to_thread(fingerprint, db.parent) == before


# ---------------------------------------------------------------------- WAL upkeep


def wal_size(db: Path) -> int:
    wal = db.with_name(db.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


async def test_the_wal_file_is_truncated_every_n_commits(db: Path) -> None:
    async with SqliteCheckpointer(db, wal_truncate_every=5) as store:
        sizes = []
        for i in range(11):
            await store.put(make_cp(f"t{i}", "c1", metadata={"pad": "x" * 2000}))
            sizes.append(await asyncio.to_thread(wal_size, db))
    assert sizes[4] == 0
    assert sizes[9] == 0
    assert all(size > 0 for i, size in enumerate(sizes) if i not in (4, 9))


# ---------------------------------------------------------------------- many writers


async def test_two_instances_in_one_process_share_a_file_safely(db: Path) -> None:
    async with SqliteCheckpointer(db) as one, SqliteCheckpointer(db) as two:

        async def run(store: SqliteCheckpointer, thread: str) -> None:
            await put_chain(store, thread, [f"c{i}" for i in range(10)])

        await asyncio.gather(*(run((one, two)[i % 2], f"t{i}") for i in range(20)))
        for i in range(20):
            # Each instance sees what the other wrote.
            assert len(await one.history(f"t{i}")) == 10
            assert len(await two.history(f"t{i}")) == 10


async def test_concurrent_opens_of_a_new_file_migrate_it_once(db: Path) -> None:
    stores = await asyncio.gather(*(SqliteCheckpointer.open(db) for _ in range(4)))
    try:
        await asyncio.gather(*(put_chain(s, f"t{i}", ["c1"]) for i, s in enumerate(stores)))
    finally:
        for store in stores:
            await store.aclose()
    assert await asyncio.to_thread(query, db, "SELECT COUNT(*) FROM checkpoints") == [(4,)]


WORKER = """
import asyncio, json, sys
from flowcore.checkpoint import Checkpoint, PendingWrite
from flowcore.checkpoint.sqlite import SqliteCheckpointer

async def main(db, proc, threads, per_thread):
    store = await SqliteCheckpointer.open(db, wal_truncate_every=25)
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)  # start with the other processes

    async def run(thread):
        parent = None
        for i in range(per_thread):
            cid = f"c{i}"
            await store.put(Checkpoint(thread, cid, parent, step=i, created_at=0.0,
                                       writes=(((f"n{i}", {"i": i}),),)))
            await store.put_write(thread, cid, PendingWrite("node", {"proc": proc, "i": i}))
            latest = await store.get(thread)
            assert latest is not None and latest.checkpoint_id == cid, latest
            parent = cid

    results = await asyncio.gather(
        *(run(f"p{proc}-t{t}") for t in range(threads)), return_exceptions=True
    )
    await store.aclose()
    print(json.dumps({"errors": [repr(r) for r in results if r is not None]}), flush=True)

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
"""


async def test_four_processes_writing_one_file_lose_nothing_and_never_see_a_lock_error(
    db: Path,
) -> None:
    procs_n, threads, per_thread = 4, 20, 10
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-W",
            "error",
            "-c",
            WORKER,
            str(db),
            str(p),
            str(threads),
            str(per_thread),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for p in range(procs_n)
    ]
    try:
        async with asyncio.timeout(90):
            for proc in procs:  # all opened the (new) file, racing to create its schema
                assert proc.stdout is not None
                line = await proc.stdout.readline()
                assert line == b"ready\n", line
            outputs = await asyncio.gather(*(p.communicate(b"go\n") for p in procs))
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()

    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()
        assert err == b""
        assert json.loads(out.decode().splitlines()[-1]) == {"errors": []}

    async with SqliteCheckpointer(db) as store:
        for p in range(procs_n):
            for t in range(threads):
                thread = f"p{p}-t{t}"
                history = await store.history(thread)
                assert [c.checkpoint_id for c in history] == [
                    f"c{i}" for i in reversed(range(per_thread))
                ], thread
                for i in range(per_thread):
                    assert await store.get_writes(thread, f"c{i}") == (
                        PendingWrite("node", {"proc": p, "i": i}),
                    )
    counts = await asyncio.to_thread(
        query, db, "SELECT (SELECT COUNT(*) FROM checkpoints), (SELECT COUNT(*) FROM writes)"
    )
    total = procs_n * threads * per_thread
    assert counts == [(total, total)]
    assert await asyncio.to_thread(query, db, "PRAGMA integrity_check") == [("ok",)]
