"""The connections of a ``SqliteCheckpointer``: open, migrate, one queued writer, close.

Private to :mod:`flowcore.checkpoint.sqlite`. :class:`SqliteConnections` is
the base class of :class:`~flowcore.checkpoint.sqlite.SqliteCheckpointer`
and owns everything between the file and the store's methods: the open/close
lifecycle (with the schema check and migration on open), the writer
connection and the one background task that runs each queued write job as a
``BEGIN IMMEDIATE`` transaction, WAL checkpoints and truncation off the commit
path, and the reader connection. Which rows a write stores is the store's
business, not this module's.

All SQLite calls run on aiosqlite's connection threads; nothing here blocks
the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Self

import aiosqlite

from flowcore._async_context import AsyncOpenClose
from flowcore._sqlite import (
    MIN_BUSY_TIMEOUT,
    MigrationStep,
    SqliteFile,
    check_busy_timeout,
    close_quietly,
    upgrade,
)
from flowcore.checkpoint._sqlite_schema import (
    MIGRATIONS,
    NOW,
    SCHEMA_VERSION,
    SIBLING_TABLES,
    CheckpointMigrationStep,
)
from flowcore.checkpoint.lease import DEFAULT_LEASE_TTL, check_lease_ttl
from flowcore.checkpoint.serde import JsonSerializer, Serializer
from flowcore.errors import CheckpointError, CheckpointStoreError, InvalidInputError

__all__ = ["CHECKPOINT_PAGES", "SqliteConnections", "pages_written"]

# The public module's name, so WAL warnings keep the logger they always had.
_log = logging.getLogger("flowcore.checkpoint.sqlite")

_SYNCHRONOUS_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}

CHECKPOINT_PAGES = 1000
"""WAL pages after which the writer copies the WAL into the database file (SQLite's own
autocheckpoint threshold). SQLite would do it inside the COMMIT that crosses it, with
two fsyncs, so that one commit took several milliseconds; the writer does it once the
commit has returned and nothing else is queued."""


def pages_written(rows: Sequence[dict[str, Any]]) -> int:
    """About how many WAL pages storing ``rows`` writes (a leaf and index pages per row
    or commit, plus the bytes stored): an estimate that only paces checkpoints."""
    stored = sum(len(row.get("record") or row.get("payload") or b"") for row in rows)
    return 3 + len(rows) // 2 + stored // 4096


_NOT_OPEN = (
    "{store} is not open; use 'async with SqliteCheckpointer(path) as store:' "
    "or 'store = await SqliteCheckpointer.open(path)'"
)


@dataclass(slots=True)
class _Job:
    """One unit of work for the writer task."""

    run: Callable[[aiosqlite.Connection], Awaitable[Any]]
    future: asyncio.Future[Any]
    transaction: bool = True  # False: run as it is (a read of pragmas; one lone statement)
    commits: bool = True  # counted as a commit (WAL truncation); False for a plain read


@dataclass(slots=True)
class _Open:
    """The resources of an open store; present only between open and close."""

    writer: aiosqlite.Connection
    reader: aiosqlite.Connection
    queue: asyncio.Queue[_Job | None]
    task: asyncio.Task[None] = field(init=False)


class SqliteConnections(AsyncOpenClose):
    """The lifecycle, writer task and reads of a ``SqliteCheckpointer`` (its base class).

    Takes the store's arguments (see
    :class:`~flowcore.checkpoint.sqlite.SqliteCheckpointer`), opens the file's
    two connections on :meth:`open` or ``async with``, and runs the store's
    writes through :meth:`_write` and its reads through :meth:`_read`.

    Example:
        >>> # class SqliteCheckpointer(SqliteConnections): ...  (the only subclass)
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        busy_timeout: float = MIN_BUSY_TIMEOUT,
        wal_truncate_every: int = 1000,
        serializer: Serializer | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
    ) -> None:
        if os.fspath(path) == ":memory:" or os.fspath(path) == "":
            raise InvalidInputError(
                "SqliteCheckpointer needs a file path (two connections to ':memory:' would "
                "see two different databases); use InMemoryCheckpointer for an in-process store"
            )
        if synchronous not in ("NORMAL", "FULL"):
            raise InvalidInputError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        busy_timeout = check_busy_timeout(busy_timeout)
        if isinstance(wal_truncate_every, bool) or wal_truncate_every < 1:
            raise InvalidInputError(f"wal_truncate_every must be >= 1, got {wal_truncate_every!r}")
        self.path = Path(path)
        self.synchronous: Literal["NORMAL", "FULL"] = synchronous
        self.busy_timeout = busy_timeout
        self.wal_truncate_every = int(wal_truncate_every)
        self.lease_ttl = check_lease_ttl(lease_ttl)
        self.before_commit: Callable[[], None] | None = None
        """Test hook: called inside every write transaction just before COMMIT (before
        the statement, for a lease taken in one statement)."""
        self._serde = serializer or JsonSerializer()
        self._file = SqliteFile(
            self.path, self.busy_timeout, CheckpointStoreError, "SqliteCheckpointer"
        )
        self._state: Literal["new", "open", "closed"] = "new"
        self._res: _Open | None = None
        self._lifecycle = asyncio.Lock()
        self._commits = 0
        # Pages the commits since the last WAL checkpoint wrote, about (see CHECKPOINT_PAGES).
        self._wal_pages = 0

    def __repr__(self) -> str:
        return f"SqliteCheckpointer({str(self.path)!r}, {self._state})"

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        busy_timeout: float = MIN_BUSY_TIMEOUT,
        wal_truncate_every: int = 1000,
        serializer: Serializer | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
    ) -> Self:
        """Create a store and open it; close it with :meth:`aclose`.

        Example:
            >>> # store = await SqliteCheckpointer.open("threads.db")
            >>> # try: ... finally: await store.aclose()
        """
        store = cls(
            path,
            synchronous=synchronous,
            busy_timeout=busy_timeout,
            wal_truncate_every=wal_truncate_every,
            serializer=serializer,
            lease_ttl=lease_ttl,
        )
        await store._open()
        return store

    async def _enter(self) -> None:
        await self._open()

    async def aclose(self) -> None:
        """Finish every queued write, stop the writer task, close both connections.

        Writes submitted after ``aclose`` began raise :class:`CheckpointError`.
        Calling it again does nothing.

        Example:
            >>> # await store.aclose()
        """
        async with self._lifecycle:
            res, self._res, self._state = self._res, None, "closed"
            if res is None:
                return
            try:
                res.queue.put_nowait(None)  # the writer drains everything before this
                await asyncio.shield(res.task)
            finally:
                if not res.task.done():  # aclose itself was cancelled: stop the writer
                    res.task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await res.task
                await close_quietly(res.writer, res.reader)

    async def _open(self) -> None:
        async with self._lifecycle:
            if self._state == "open":
                return
            if self._state == "closed":
                raise CheckpointError(
                    f"{self!r} has been closed; create a new SqliteCheckpointer to reopen the file"
                )
            writer, reader = await self._file.open(
                synchronous=self.synchronous,
                current=SCHEMA_VERSION,
                schema_version=self._schema_version,
                migrate=self._migrate,
            )
            try:
                # The clock a lease is taken by, read in the statement (see TAKE_LEASE).
                await writer.create_function(NOW, 0, time.time)
                # WAL checkpoints run after a commit has returned (_writer_loop), not
                # inside the COMMIT that crosses SQLite's threshold.
                await writer.execute_fetchall("PRAGMA wal_autocheckpoint = 0")
            except BaseException:
                await close_quietly(writer, reader)
                raise
            res = _Open(writer, reader, asyncio.Queue())
            res.task = asyncio.get_running_loop().create_task(
                self._writer_loop(res), name=f"flowcore sqlite writer {self.path}"
            )
            self._res, self._state = res, "open"

    async def _schema_version(self, conn: aiosqlite.Connection) -> int:
        """The file's schema version (0: empty), refusing foreign, corrupt and newer files."""
        try:
            rows = await conn.execute_fetchall(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
            tables = sorted(str(row[0]) for row in rows)
            if "flowcore_meta" not in tables:
                # The other flowcore stores (blocks, memory, run history) may share the file.
                if [t for t in tables if not t.startswith(SIBLING_TABLES)]:
                    raise CheckpointStoreError(
                        f"{self.path} is an SQLite database of something else (tables: "
                        f"{', '.join(tables)}; no flowcore_meta table); point "
                        "SqliteCheckpointer at a new file or at one flowcore created"
                    )
                return 0
        except sqlite3.Error as exc:
            raise self._file.open_error(exc) from exc
        return await self._file.schema_version(
            conn, "flowcore_meta", current=SCHEMA_VERSION, kind="checkpoint"
        )

    async def _migrate(self, conn: aiosqlite.Connection) -> None:
        def bind(step: CheckpointMigrationStep) -> MigrationStep:
            return step if isinstance(step, str) else (lambda c: step(c, self._serde))

        migrations = [[bind(step) for step in steps] for steps in MIGRATIONS]
        body = upgrade(migrations, meta_table="flowcore_meta", schema_version=self._schema_version)
        try:
            await self._transaction(conn, body)
        except CheckpointStoreError:
            raise
        except Exception as exc:  # a data step could not read an old record
            raise CheckpointStoreError(
                f"cannot migrate {self.path} to schema version {SCHEMA_VERSION}: {exc}"
            ) from exc

    # ------------------------------------------------------------------ the writer

    async def _writer_loop(self, res: _Open) -> None:
        job: _Job | None = None
        try:
            while True:
                job = await res.queue.get()
                if job is None:
                    return
                if job.future.done():  # its caller was cancelled before we got here
                    continue
                try:
                    if job.transaction:
                        result = await self._transaction(res.writer, job.run)
                    else:
                        result = await job.run(res.writer)
                except Exception as exc:
                    if not job.future.done():
                        job.future.set_exception(exc)
                    continue
                if job.commits:
                    self._commits += 1
                    if self._commits % self.wal_truncate_every == 0:
                        # Before resolving the caller, so the commit that triggers it
                        # returns with the WAL already truncated.
                        await self._truncate_wal(res.writer)
                if not job.future.done():
                    job.future.set_result(result)
                # After resolving the caller, so its commit does not wait for the copy;
                # deferred while work is queued, up to twice the threshold.
                pages = self._wal_pages
                if (
                    job.commits
                    and pages >= CHECKPOINT_PAGES
                    and (res.queue.empty() or pages >= 2 * CHECKPOINT_PAGES)
                ):
                    await self._checkpoint_wal(res.writer)
        finally:
            # Cancelled or broken: nobody may wait forever on a job that will not run.
            stranded: list[_Job | None] = [job]
            while not res.queue.empty():
                stranded.append(res.queue.get_nowait())
            for item in stranded:
                if item is not None and not item.future.done():
                    item.future.set_exception(
                        CheckpointError(f"{self!r} stopped before this write ran")
                    )

    async def _transaction(
        self, conn: aiosqlite.Connection, run: Callable[[aiosqlite.Connection], Awaitable[Any]]
    ) -> Any:
        async def run_then_hook(c: aiosqlite.Connection) -> Any:
            result = await run(c)
            if self.before_commit is not None:
                self.before_commit()
            return result

        return await self._file.transaction(conn, run_then_hook, failed=self._write_failed)

    def _write_failed(self, exc: sqlite3.Error) -> CheckpointStoreError:
        return CheckpointStoreError(f"write to {self.path} failed: {exc}")

    async def _checkpoint_wal(self, conn: aiosqlite.Connection) -> None:
        """Copy the WAL's pages into the database file, as SQLite's autocheckpoint would."""
        self._wal_pages = 0
        try:
            await conn.execute_fetchall("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:  # the commits stand; the next round retries
            _log.warning("flowcore: WAL checkpoint of %s failed: %s", self.path, exc)

    async def _truncate_wal(self, conn: aiosqlite.Connection) -> None:
        self._wal_pages = 0
        try:
            await conn.execute_fetchall("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:  # the commit stands; the next round retries
            _log.warning("flowcore: WAL truncation of %s failed: %s", self.path, exc)

    async def _write(
        self,
        run: Callable[[aiosqlite.Connection], Awaitable[Any]],
        *,
        transaction: bool = True,
        commits: bool | None = None,
    ) -> Any:
        res = self._require_open()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        counted = transaction if commits is None else commits
        res.queue.put_nowait(_Job(run, future, transaction, counted))
        return await future

    def _require_open(self) -> _Open:
        if self._res is None:
            if self._state == "closed":
                raise CheckpointError(f"{self!r} has been closed")
            raise CheckpointError(_NOT_OPEN.format(store=repr(self)))
        return self._res

    async def _read(self, sql: str, params: dict[str, Any]) -> list[Any]:
        reader = self._require_open().reader
        try:
            return list(await reader.execute_fetchall(sql, params))
        except sqlite3.Error as exc:
            raise CheckpointStoreError(f"read from {self.path} failed: {exc}") from exc

    # ------------------------------------------------------------------ diagnostics

    async def pragmas(self) -> dict[str, dict[str, object]]:
        """The settings each connection really runs with, for checks and debugging.

        ``synchronous`` and ``busy_timeout`` belong to a connection, so another
        connection to the file cannot see them; this asks the store's own.

        Example:
            >>> # (await store.pragmas())["writer"]
            >>> # {'journal_mode': 'wal', 'synchronous': 'NORMAL', 'busy_timeout': 5000}
        """
        res = self._require_open()
        try:
            writer = await self._write(_read_pragmas, transaction=False, commits=False)
            reader = await _read_pragmas(res.reader)
        except sqlite3.Error as exc:
            raise CheckpointStoreError(f"read from {self.path} failed: {exc}") from exc
        return {"writer": writer, "reader": reader}


async def _read_pragmas(conn: aiosqlite.Connection) -> dict[str, object]:
    values: dict[str, object] = {}
    for name in ("journal_mode", "synchronous", "busy_timeout"):
        rows: Iterable[Sequence[Any]] = await conn.execute_fetchall(f"PRAGMA {name}")
        values[name] = next(iter(rows))[0]
    values["synchronous"] = _SYNCHRONOUS_NAMES.get(int(str(values["synchronous"])), "?")
    return values
