"""``SqliteRunHistory``: every run recorded in one SQLite file, on aiosqlite.

The file may be one other flowcore stores use too: every table this module
owns starts with ``run_history_``, and its schema version lives in its own
``run_history_meta`` table, so the history never touches (or refuses) tables
it does not own.

* **WAL journaling**: listing runs never waits for a save, nor a save for a list.
* **Each save is one transaction** (``BEGIN IMMEDIATE`` ... ``COMMIT``):
  the run row and all its node rows land together, or nothing changes.
  Values are serialized before the transaction starts, so an unstorable
  value fails without taking a lock. Any failure inside rolls back.
* **One writer connection per instance**, guarded by a lock, so the saves of
  one process queue up instead of fighting over SQLite's write lock; other
  processes are waited for through ``busy_timeout``. A save whose caller is
  cancelled still runs to its end: a transaction is never cut in half.
* **Reads use a second connection**, and read a record's run and node rows
  in one read transaction, so a record is never seen half-replaced.
* A file that is not an SQLite database, is damaged, or carries a newer
  history schema is refused with :class:`RunHistoryStoreError` and left
  byte-identical: it is only read until it has been accepted.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import aiosqlite

from flowcore._async_context import AsyncOpenClose
from flowcore._sqlite import (
    MIN_BUSY_TIMEOUT,
    SqliteFile,
    check_busy_timeout,
    close_quietly,
    upgrade,
)
from flowcore.checkpoint.serde import JsonSerializer, Serializer
from flowcore.errors import InvalidInputError
from flowcore.history.protocol import (
    RunHistoryError,
    RunHistoryStoreError,
    RunNotFoundError,
    check_limit,
    check_lookup,
    check_record,
)
from flowcore.history.records import RunRecord
from flowcore.history.rows import (
    NODE_COLUMNS,
    RUN_COLUMNS,
    check_filters,
    group_records,
    record_from_rows,
    record_to_rows,
)

__all__ = ["HISTORY_SCHEMA_VERSION", "SqliteRunHistory"]

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # v1
    (
        "CREATE TABLE run_history_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        # pipeline_version is declared BLOB so SQLite keeps what it gets: 2 stays
        # an int and "2" stays a str. JSON columns hold serializer bytes.
        """CREATE TABLE run_history_runs (
            run_id TEXT PRIMARY KEY,
            pipeline_id TEXT NOT NULL,
            pipeline_version BLOB NOT NULL,
            user_id TEXT,
            thread_id TEXT,
            status TEXT NOT NULL,
            started_at REAL NOT NULL,
            duration REAL NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            inputs BLOB NOT NULL,
            errors BLOB NOT NULL,
            interrupts BLOB NOT NULL,
            source BLOB,
            final_state BLOB
        )""",
        """CREATE TABLE run_history_nodes (
            run_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            node TEXT NOT NULL,
            status TEXT NOT NULL,
            pass_index INTEGER NOT NULL,
            started_at REAL NOT NULL,
            duration REAL NOT NULL,
            attempts INTEGER NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            outputs BLOB,
            error TEXT,
            skip_reason TEXT,
            PRIMARY KEY (run_id, position)
        )""",
        "CREATE INDEX run_history_runs_newest ON run_history_runs (started_at, run_id)",
        "CREATE INDEX run_history_runs_pipeline ON run_history_runs (pipeline_id, started_at)",
        "CREATE INDEX run_history_runs_user ON run_history_runs (user_id, started_at)",
        "CREATE INDEX run_history_runs_status ON run_history_runs (status, started_at)",
        "CREATE INDEX run_history_runs_thread ON run_history_runs (thread_id, started_at)",
        "CREATE INDEX run_history_nodes_node ON run_history_nodes (node, status)",
    ),
)

HISTORY_SCHEMA_VERSION = len(_MIGRATIONS)
"""The run-history schema version this flowcore writes; older files are migrated on open."""

_NEWEST_FIRST = "ORDER BY started_at DESC, run_id DESC"


class SqliteRunHistory(AsyncOpenClose):
    """A :class:`~flowcore.history.protocol.RunHistory` in one SQLite file.

    Open it before use, with ``async with`` or :meth:`open`, and close it with
    :meth:`aclose`. Use one instance per file per process and event loop;
    several processes may share the file.

    Args:
        path: The database file; created if missing. It may be shared with
            other flowcore stores.
        busy_timeout: Seconds a save waits for another process's write lock
            (at least 5).
        serializer: How values become bytes; :class:`JsonSerializer` by default.

    Raises:
        RunHistoryStoreError: On open, if the file is not an SQLite database,
            is damaged, or has a run-history schema newer than this flowcore knows.

    Example:
        >>> import asyncio, tempfile, os
        >>> from flowcore.history import RunRecord
        >>> async def demo(path):
        ...     async with SqliteRunHistory(path) as history:
        ...         await history.save(RunRecord("r1", "digest", 1, "ada", None, "completed",
        ...                                      1700000000.0, 0.5, {}, (), (), (), 0, 0))
        ...         return [r.run_id for r in await history.list(user_id="ada")]
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     asyncio.run(demo(os.path.join(tmp, "runs.db")))
        ['r1']
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = MIN_BUSY_TIMEOUT,
        serializer: Serializer | None = None,
    ) -> None:
        if os.fspath(path) in ("", ":memory:"):
            raise InvalidInputError(
                "SqliteRunHistory needs a file path (two connections to ':memory:' would see "
                "two different databases); use InMemoryRunHistory for an in-process history"
            )
        self.path = Path(path)
        self.busy_timeout = check_busy_timeout(busy_timeout)
        self._serde = serializer or JsonSerializer()
        self._file = SqliteFile(
            self.path, self.busy_timeout, RunHistoryStoreError, "SqliteRunHistory", "run history "
        )
        self._state: Literal["new", "open", "closed"] = "new"
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()
        self._read_lock = asyncio.Lock()
        self._lifecycle = asyncio.Lock()
        self._pending: set[asyncio.Task[Any]] = set()

    def __repr__(self) -> str:
        return f"SqliteRunHistory({str(self.path)!r}, {self._state})"

    # ------------------------------------------------------------------ lifecycle

    async def _enter(self) -> None:
        await self.open()

    async def open(self) -> None:
        """Open the file, creating or migrating the history tables; a no-op if open.

        Example:
            >>> # history = SqliteRunHistory("runs.db"); await history.open()
        """
        async with self._lifecycle:
            if self._state == "open":
                return
            if self._state == "closed":
                raise RunHistoryError(
                    f"{self!r} has been closed; create a new SqliteRunHistory to reopen the file"
                )
            writer, reader = await self._file.open(
                synchronous="NORMAL",
                current=HISTORY_SCHEMA_VERSION,
                schema_version=self._schema_version,
                migrate=self._migrate,
            )
            self._writer, self._reader, self._state = writer, reader, "open"

    async def aclose(self) -> None:
        """Let running saves finish, then close both connections; a no-op if closed.

        Example:
            >>> # await history.aclose()
        """
        async with self._lifecycle:
            if self._state != "open":
                self._state = "closed"
                return
            self._state = "closed"
            pending = list(self._pending)
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            async with self._write_lock, self._read_lock:
                writer, reader, self._writer, self._reader = self._writer, self._reader, None, None
                await close_quietly(writer, reader)

    async def _schema_version(self, conn: aiosqlite.Connection) -> int:
        """The history schema version in the file (0: none yet); refuses damaged and newer."""
        try:
            rows = await conn.execute_fetchall(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'run_history_meta'"
            )
        except sqlite3.Error as exc:
            raise self._file.open_error(exc) from exc
        if not list(rows):
            return 0
        return await self._file.schema_version(
            conn,
            "run_history_meta",
            current=HISTORY_SCHEMA_VERSION,
            kind="run-history",
            advice="; point SqliteRunHistory at a new file",
        )

    async def _migrate(self, conn: aiosqlite.Connection) -> None:
        body = upgrade(
            _MIGRATIONS, meta_table="run_history_meta", schema_version=self._schema_version
        )
        await self._transaction(conn, body)

    # ------------------------------------------------------------------ transactions

    def _connections(self) -> tuple[aiosqlite.Connection, aiosqlite.Connection]:
        if self._state != "open" or self._writer is None or self._reader is None:
            if self._state == "closed":
                raise RunHistoryError(f"{self!r} has been closed")
            raise RunHistoryError(
                f"{self!r} is not open; use 'async with SqliteRunHistory(path) as history:' "
                "or 'await history.open()'"
            )
        return self._writer, self._reader

    async def _transaction(
        self, conn: aiosqlite.Connection, run: Callable[[aiosqlite.Connection], Awaitable[Any]]
    ) -> Any:
        return await self._file.transaction(conn, run, failed=self._write_failed)

    def _write_failed(self, exc: sqlite3.Error) -> RunHistoryStoreError:
        return RunHistoryStoreError(
            f"write to run history {self.path} failed and was rolled back: {exc}"
        )

    async def _write(self, run: Callable[[aiosqlite.Connection], Awaitable[Any]]) -> Any:
        writer, _ = self._connections()

        async def locked() -> Any:
            async with self._write_lock:
                return await self._transaction(writer, run)

        task = asyncio.get_running_loop().create_task(locked())
        self._pending.add(task)
        task.add_done_callback(_forget(self._pending))
        # Shielded: a cancelled caller stops waiting, the transaction still ends whole.
        return await asyncio.shield(task)

    async def _read(
        self, queries: Sequence[tuple[str, Sequence[Any]]]
    ) -> builtins.list[builtins.list[Any]]:
        """Run ``queries`` in one read transaction, so they all see the same commit."""
        _, reader = self._connections()
        async with self._read_lock:
            try:
                if reader.in_transaction:  # a read cancelled before its COMMIT
                    await reader.execute_fetchall("COMMIT")
                await reader.execute_fetchall("BEGIN")
                try:
                    return [list(await reader.execute_fetchall(sql, p)) for sql, p in queries]
                finally:
                    await reader.execute_fetchall("COMMIT")
            except sqlite3.Error as exc:
                raise RunHistoryStoreError(
                    f"read from run history {self.path} failed: {exc}"
                ) from exc

    # ------------------------------------------------------------------ encoding

    def _dump(self, value: Any, path: str) -> bytes:
        return self._serde.dumps(value, path=path)

    def _load(self, data: bytes | None, what: str) -> Any:
        if data is None:
            return None
        try:
            return self._serde.loads(data)
        except Exception as exc:  # SerializationError included: the stored bytes are bad
            raise RunHistoryStoreError(f"{self.path}: cannot decode {what}: {exc}") from exc

    def _rows(self, record: RunRecord) -> tuple[tuple[Any, ...], builtins.list[tuple[Any, ...]]]:
        return record_to_rows(record, self._dump)

    def _record(self, row: Sequence[Any], nodes: Iterable[Sequence[Any]]) -> RunRecord:
        return record_from_rows(row, nodes, self._load)

    # ------------------------------------------------------------------ the protocol

    async def save(self, record: RunRecord) -> None:
        """Insert or replace the record of ``record.run_id`` in one transaction.

        See :meth:`RunHistory.save`. Raises
        :class:`~flowcore.errors.SerializationError` (naming where the value
        sits) before anything is written if a value cannot be stored.

        Example:
            >>> # await history.save(record_from_result(result, ...))
        """
        self._connections()
        check_record(record)
        run_row, node_rows = self._rows(record)
        run_id = record.run_id

        async def replace(conn: aiosqlite.Connection) -> None:
            await conn.execute_fetchall("DELETE FROM run_history_nodes WHERE run_id = ?", (run_id,))
            await conn.execute_fetchall(
                f"INSERT OR REPLACE INTO run_history_runs ({RUN_COLUMNS}) "
                f"VALUES ({', '.join('?' * 15)})",
                run_row,
            )
            await conn.executemany(
                f"INSERT INTO run_history_nodes ({NODE_COLUMNS}) VALUES ({', '.join('?' * 13)})",
                node_rows,
            )

        await self._write(replace)

    async def get(self, run_id: str) -> RunRecord:
        """The record of ``run_id`` (see :meth:`RunHistory.get`).

        Example:
            >>> # record = await history.get("r1")
        """
        check_lookup("run_id", run_id)
        runs, nodes = await self._read(
            [
                (f"SELECT {RUN_COLUMNS} FROM run_history_runs WHERE run_id = ?", (run_id,)),
                (
                    f"SELECT {NODE_COLUMNS} FROM run_history_nodes WHERE run_id = ? "
                    "ORDER BY position",
                    (run_id,),
                ),
            ]
        )
        if not runs:
            raise RunNotFoundError(run_id)
        return self._record(runs[0], nodes)

    async def list(
        self,
        *,
        pipeline_id: str | None = None,
        user_id: str | None = None,
        status: str | None = None,
        thread_id: str | None = None,
        limit: int | None = 50,
    ) -> builtins.list[RunRecord]:
        """Records matching every filter given, newest first (see :meth:`RunHistory.list`).

        Example:
            >>> # failed = await history.list(pipeline_id="digest", status="failed", limit=10)
        """
        cap = check_limit(limit)
        given = check_filters(pipeline_id, user_id, status, thread_id)
        clauses = [f"{column} = ?" for column in given]
        params: builtins.list[Any] = list(given.values())
        where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
        picked = f"SELECT run_id FROM run_history_runs {where}{_NEWEST_FIRST} LIMIT ?"
        params.append(-1 if cap is None else cap)
        runs, nodes = await self._read(
            [
                (
                    f"SELECT {RUN_COLUMNS} FROM run_history_runs WHERE run_id IN ({picked}) "
                    f"{_NEWEST_FIRST}",
                    params,
                ),
                (
                    f"SELECT {NODE_COLUMNS} FROM run_history_nodes WHERE run_id IN ({picked}) "
                    "ORDER BY run_id, position",
                    params,
                ),
            ]
        )
        return group_records(runs, nodes, self._record)

    async def delete(self, run_id: str) -> bool:
        """Remove the record of ``run_id`` and its node rows; True if there was one.

        Example:
            >>> # await history.delete("r1")
        """
        check_lookup("run_id", run_id)

        async def remove(conn: aiosqlite.Connection) -> bool:
            await conn.execute_fetchall("DELETE FROM run_history_nodes WHERE run_id = ?", (run_id,))
            cursor = await conn.execute("DELETE FROM run_history_runs WHERE run_id = ?", (run_id,))
            removed = cursor.rowcount > 0
            await cursor.close()
            return removed

        return bool(await self._write(remove))


def _forget(pending: set[asyncio.Task[Any]]) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        pending.discard(task)
        # Its caller may have been cancelled: mark the outcome as seen.
        if not task.cancelled():
            task.exception()

    return done
