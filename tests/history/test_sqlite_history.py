"""Spec: SqliteRunHistory keeps runs in one WAL SQLite file, safely.

Records survive closing and reopening; a save is one transaction, so a save
that fails anywhere leaves no partial row (and an older record it was
replacing intact); a file that is not a database, is damaged, or is from a
newer history schema is refused and left byte-identical; concurrent saves
from many tasks and from two instances on one file all land whole. The file
may be shared with other flowcore stores: the history only owns tables
prefixed ``run_history_``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from flowcore import InvalidInputError
from flowcore.checkpoint import Checkpoint, SqliteCheckpointer
from flowcore.errors import SerializationError
from flowcore.history import (
    HISTORY_SCHEMA_VERSION,
    RunHistoryError,
    RunHistoryStoreError,
    RunNotFoundError,
    SqliteRunHistory,
    record_from_result,
)
from flowcore.memory import SqliteStore

from .contract import full_record, make_node, make_run
from .test_records import mixed_graph


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
async def history(db: Path) -> AsyncIterator[SqliteRunHistory]:
    async with SqliteRunHistory(db) as history:
        yield history


def rows(db: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Read the file with the stdlib driver, independently of the code under test."""
    with sqlite3.connect(db) as conn:
        return list(conn.execute(sql, params))


def count_rows(db: Path, run_id: str) -> tuple[int, int]:
    runs = rows(db, "SELECT COUNT(*) FROM run_history_runs WHERE run_id = ?", (run_id,))
    nodes = rows(db, "SELECT COUNT(*) FROM run_history_nodes WHERE run_id = ?", (run_id,))
    return int(str(runs[0][0])), int(str(nodes[0][0]))


# --------------------------------------------------------------------------- persistence


async def test_records_survive_closing_and_reopening(db: Path) -> None:
    record = full_record("r1")
    async with SqliteRunHistory(db) as history:
        await history.save(record)
        await history.save(make_run("r2", started_at=1.0))

    async with SqliteRunHistory(db) as reopened:
        assert await reopened.get("r1") == record
        assert [r.run_id for r in await reopened.list(user_id="ada")] == ["r1", "r2"]


async def test_a_real_run_record_reads_back_equal(db: Path) -> None:
    started = time.time()
    result = await mixed_graph().compile().run({"x": "in"}, on_error="skip_dependents")
    record = record_from_result(
        result,
        pipeline_id="mixed",
        pipeline_version=2,
        user_id="ada",
        started_at=started,
        inputs={"x": "in"},
        source={"id": "mixed"},
    )
    async with SqliteRunHistory(db) as history:
        await history.save(record)
    async with SqliteRunHistory(db) as history:
        back = await history.get(result.run_id)

    assert back == record
    assert [n.status for n in back.nodes] == [r.status for r in result.node_runs]


async def test_the_file_is_in_wal_mode_with_its_own_schema_version(
    history: SqliteRunHistory, db: Path
) -> None:
    await history.save(make_run("r1"))

    assert rows(db, "PRAGMA journal_mode") == [("wal",)]
    assert rows(db, "SELECT value FROM run_history_meta WHERE key = 'schema_version'") == [
        (str(HISTORY_SCHEMA_VERSION),)
    ]
    tables = {str(r[0]) for r in rows(db, "SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"run_history_meta", "run_history_runs", "run_history_nodes"}


@pytest.mark.parametrize("column", ["pipeline_id", "user_id", "status", "thread_id", "started_at"])
async def test_every_filter_column_leads_an_index(
    history: SqliteRunHistory, db: Path, column: str
) -> None:
    indexes = [str(r[1]) for r in rows(db, "PRAGMA index_list(run_history_runs)")]
    leading = {str(rows(db, f"PRAGMA index_info({name})")[0][2]) for name in indexes}

    assert column in leading


# --------------------------------------------------------------------------- atomic saves


async def test_a_save_refused_for_an_unstorable_value_leaves_no_row(
    history: SqliteRunHistory, db: Path
) -> None:
    # The unstorable value sits in the last node: everything before it was fine.
    nodes = (*full_record().nodes, make_node("late", outputs={"handle": object()}))
    with pytest.raises(SerializationError, match=r"run 'r1'\.nodes\[4\]\.outputs\.handle"):
        await history.save(make_run("r1", nodes=nodes))

    assert count_rows(db, "r1") == (0, 0)
    with pytest.raises(RunNotFoundError):
        await history.get("r1")


async def test_a_save_failing_inside_its_transaction_is_rolled_back_whole(
    history: SqliteRunHistory, db: Path
) -> None:
    old = full_record("r1")
    await history.save(old)
    # A trigger makes the database itself fail on the third node row, after the
    # run row and two node rows of the new version were written.
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TRIGGER explode BEFORE INSERT ON run_history_nodes "
            "WHEN NEW.node = 'explode' BEGIN SELECT RAISE(ABORT, 'boom on node row'); END"
        )
    newer = make_run(
        "r1", status="completed", nodes=(make_node("a"), make_node("b"), make_node("explode"))
    )
    fresh = make_run("r2", nodes=(make_node("a"), make_node("explode")))

    with pytest.raises(RunHistoryStoreError, match="boom on node row") as caught:
        await history.save(newer)
    with pytest.raises(RunHistoryStoreError, match="rolled back"):
        await history.save(fresh)

    assert isinstance(caught.value.__cause__, sqlite3.Error)
    assert await history.get("r1") == old
    assert count_rows(db, "r1") == (1, len(old.nodes))
    assert count_rows(db, "r2") == (0, 0)
    # The connection is usable again afterwards.
    await history.save(make_run("r3"))
    assert count_rows(db, "r3") == (1, 1)


async def test_a_cancelled_save_still_lands_whole(db: Path) -> None:
    record = full_record("r1")
    async with SqliteRunHistory(db) as history:
        saving = asyncio.create_task(history.save(record))
        await asyncio.sleep(0)  # let it queue its transaction
        saving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await saving
    # aclose waited for the transaction; the record is all there.
    assert count_rows(db, "r1") == (1, len(record.nodes))
    async with SqliteRunHistory(db) as history:
        assert await history.get("r1") == record


# --------------------------------------------------------------------------- refused files


def on_disk(path: Path) -> tuple[bytes, set[Path]]:
    """The file's bytes and the files beside it (a -wal or -shm would show up here)."""
    return path.read_bytes(), set(path.parent.iterdir())


async def refused_unchanged(path: Path, match: str) -> None:
    before = on_disk(path)

    with pytest.raises(RunHistoryStoreError, match=match):
        await SqliteRunHistory(path).open()

    assert on_disk(path) == before


async def test_a_file_that_is_not_a_database_is_refused_and_left_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 50)

    await refused_unchanged(path, "not an SQLite database")


async def test_a_damaged_database_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    path.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 32)

    await refused_unchanged(path, "not an SQLite database or is corrupt")


async def test_a_newer_history_schema_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE run_history_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute(
            "INSERT INTO run_history_meta VALUES ('schema_version', ?)",
            (str(HISTORY_SCHEMA_VERSION + 1),),
        )
    conn.close()

    await refused_unchanged(path, f"schema version {HISTORY_SCHEMA_VERSION + 1}, newer")


async def test_a_history_meta_table_without_a_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "odd.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE run_history_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.close()

    await refused_unchanged(path, "damaged")


# --------------------------------------------------------------------------- sharing a file


async def test_the_file_can_be_shared_with_the_checkpointer_and_the_memory_store(
    db: Path,
) -> None:
    async with SqliteCheckpointer(db) as checkpoints:
        await checkpoints.put(Checkpoint("t1", "c1", None, step=0, created_at=0.0))
    async with SqliteStore(db) as memory, SqliteRunHistory(db) as history:
        await memory.put(("users", "ada"), "food", "tacos")
        await history.save(make_run("r1", thread_id="t1"))

    async with SqliteCheckpointer(db) as checkpoints, SqliteRunHistory(db) as history:
        cp = await checkpoints.get("t1")
        assert cp is not None
        assert cp.checkpoint_id == "c1"
        assert [r.run_id for r in await history.list(thread_id="t1")] == ["r1"]
    async with SqliteStore(db) as memory:
        item = await memory.get(("users", "ada"), "food")
        assert item is not None
        assert item.value == "tacos"


async def test_a_database_of_another_application_gets_the_history_tables_beside_its_own(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
        conn.execute("INSERT INTO orders (item) VALUES ('tea')")
    conn.close()

    async with SqliteRunHistory(path) as history:
        await history.save(make_run("r1"))

    assert rows(path, "SELECT item FROM orders") == [("tea",)]
    assert count_rows(path, "r1") == (1, 1)


# --------------------------------------------------------------------------- concurrency


async def test_concurrent_saves_from_many_tasks_all_land_whole(
    history: SqliteRunHistory, db: Path
) -> None:
    records = [
        make_run(
            f"r{i:02}",
            started_at=float(i),
            nodes=tuple(make_node(f"n{j}", input_tokens=i) for j in range(i % 5 + 1)),
        )
        for i in range(40)
    ]

    await asyncio.gather(*(history.save(r) for r in records))

    listed = await history.list(limit=None)
    assert listed == sorted(records, key=lambda r: r.started_at, reverse=True)
    assert sum(count_rows(db, r.run_id)[1] for r in records) == sum(len(r.nodes) for r in records)


async def test_two_instances_on_one_file_save_and_replace_concurrently(db: Path) -> None:
    async with SqliteRunHistory(db) as one, SqliteRunHistory(db) as two:
        first = [make_run(f"a{i:02}", started_at=float(i)) for i in range(20)]
        second = [make_run(f"b{i:02}", started_at=float(i), user_id="bob") for i in range(20)]
        # Both also replace the same run, again and again.
        shared = [make_run("same", nodes=(make_node(f"v{i}"),) * (i + 1)) for i in range(10)]

        await asyncio.gather(
            *(one.save(r) for r in first),
            *(two.save(r) for r in second),
            *((one if i % 2 else two).save(r) for i, r in enumerate(shared)),
        )

        assert len(await one.list(user_id="ada", limit=None)) == 21
        assert len(await two.list(user_id="bob", limit=None)) == 20
        winner = await one.get("same")
    assert winner in shared  # one whole version, never a mix of two
    assert count_rows(db, "same") == (1, len(winner.nodes))


async def test_reads_while_saving_never_see_a_half_replaced_record(
    history: SqliteRunHistory, db: Path
) -> None:
    # Each version differs in a run field and in its node rows; a read that
    # took the run row of one version and the node rows of another would
    # match none of them. The saves come from a second instance (another
    # connection, as another process would), so they commit in between reads.
    versions = [
        make_run("r", duration=float(i), nodes=tuple(make_node(f"v{i}") for _ in range(i % 7 + 1)))
        for i in range(60)
    ]
    await history.save(versions[0])
    seen = []
    done = asyncio.Event()

    async def read_until_done() -> None:
        while not done.is_set():
            seen.append(await history.get("r"))
            seen.extend(await history.list())

    async def save_all() -> None:
        async with SqliteRunHistory(db) as writer:
            for version in versions[1:]:
                await writer.save(version)
        done.set()

    await asyncio.gather(read_until_done(), read_until_done(), save_all())

    assert len(seen) > 20
    assert all(record in versions for record in seen)


# --------------------------------------------------------------------------- lifecycle


async def test_using_a_history_before_open_or_after_close_says_what_to_do(db: Path) -> None:
    history = SqliteRunHistory(db)
    with pytest.raises(RunHistoryError, match="is not open; use 'async with"):
        await history.save(make_run("r1"))
    await history.open()
    await history.open()  # opening twice is harmless
    await history.aclose()
    await history.aclose()  # so is closing twice

    with pytest.raises(RunHistoryError, match="has been closed"):
        await history.get("r1")
    with pytest.raises(RunHistoryError, match="has been closed"):
        await history.open()


@pytest.mark.parametrize("path", [":memory:", ""])
def test_an_in_memory_path_is_refused(path: str) -> None:
    with pytest.raises(InvalidInputError, match="InMemoryRunHistory"):
        SqliteRunHistory(path)


def test_a_short_busy_timeout_is_refused(db: Path) -> None:
    with pytest.raises(InvalidInputError, match="busy_timeout"):
        SqliteRunHistory(db, busy_timeout=0.1)
