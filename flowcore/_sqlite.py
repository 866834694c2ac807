"""Opening and transacting on a flowcore SQLite file, the way every SQLite store does it.

Private. The SQLite stores (checkpoints, run history, memory) share these
steps; each keeps its own error type and wording, held in a
:class:`SqliteFile`:

* A file that is not SQLite at all is refused after a read of its header,
  and a file is only read until its schema version has been accepted, so a
  refused file is left byte-identical. The file is never opened other than
  through SQLite: closing a descriptor of it would drop this process's locks.
* Every connection waits ``busy_timeout`` for another process's lock.
* The switch to WAL journaling is retried by hand while another process
  holds the file, since SQLite runs no busy handler for it.
* Write transactions are ``BEGIN IMMEDIATE``, retried when even the busy
  timeout was not enough, and rolled back whole on any failure.
* Each store's schema version lives in its own meta table; a migration is
  one write transaction that re-reads the version first.

All SQLite calls run on aiosqlite's connection threads; nothing here blocks
the event loop (:meth:`SqliteFile.check_magic` is meant for a worker thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from flowcore.errors import InvalidInputError

__all__ = [
    "MIN_BUSY_TIMEOUT",
    "MigrationStep",
    "SqliteFile",
    "check_busy_timeout",
    "close_quietly",
    "connect",
    "upgrade",
]

T = TypeVar("T")

MIN_BUSY_TIMEOUT = 5.0
"""The shortest busy timeout (seconds) a store accepts; shorter ones fail under load."""

# SQLite primary result codes (the low byte of extended codes).
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_CANTOPEN = 14
_SQLITE_NOTADB = 26  # the header is not SQLite's
# busy_timeout has already waited this many times before we give up on a lock.
_BEGIN_ATTEMPTS = 3

MigrationStep = str | Callable[[aiosqlite.Connection], Awaitable[None]]
"""One step of a schema migration: a statement, or a coroutine that rewrites data."""


def check_busy_timeout(busy_timeout: float) -> float:
    """``busy_timeout`` as a float, refusing one shorter than :data:`MIN_BUSY_TIMEOUT`.

    Raises:
        InvalidInputError: If it is shorter (or a bool).

    Example:
        >>> check_busy_timeout(5)
        5.0
    """
    if isinstance(busy_timeout, bool) or busy_timeout < MIN_BUSY_TIMEOUT:
        raise InvalidInputError(
            f"busy_timeout must be at least {MIN_BUSY_TIMEOUT:g} s, got {busy_timeout!r}: "
            "shorter waits let concurrent writers fail with 'database is locked'"
        )
    return float(busy_timeout)


async def connect(
    path: str | Path, *, busy_timeout: float, synchronous: str | None = None
) -> aiosqlite.Connection:
    """A connection that waits ``busy_timeout`` seconds for locks and begins no transactions.

    ``synchronous`` (``"NORMAL"``, ``"FULL"``) is set when given, else SQLite's
    default stays. A failing connection is closed; the ``sqlite3.Error``
    propagates for the caller to word.

    Example:
        >>> # conn = await connect("runs.db", busy_timeout=5.0, synchronous="NORMAL")
    """
    # isolation_level=None: transactions are begun and ended explicitly.
    conn = await aiosqlite.connect(path, timeout=busy_timeout, isolation_level=None)
    try:
        await conn.execute_fetchall(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        if synchronous is not None:
            await conn.execute_fetchall(f"PRAGMA synchronous = {synchronous}")
    except BaseException:
        await close_quietly(conn)
        raise
    return conn


async def close_quietly(*conns: aiosqlite.Connection | None) -> None:
    """Close each connection given, ignoring ``None`` and errors of an already broken one.

    Example:
        >>> # await close_quietly(writer, reader)
    """
    for conn in conns:
        if conn is not None:
            with contextlib.suppress(sqlite3.Error, ValueError):
                await conn.close()


def _code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code of ``exc`` (the low byte of its extended code)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _is_busy(exc: sqlite3.Error) -> bool:
    code = _code(exc)
    if code is not None:
        return code in (_SQLITE_BUSY, _SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def upgrade(
    migrations: Sequence[Sequence[MigrationStep]],
    *,
    meta_table: str,
    schema_version: Callable[[aiosqlite.Connection], Awaitable[int]],
) -> Callable[[aiosqlite.Connection], Awaitable[None]]:
    """The body of the write transaction that brings a file to ``len(migrations)``.

    ``migrations[n - 1]`` holds the steps from version ``n - 1`` to ``n``.
    The body first reads the version again with ``schema_version``: another
    process may have migrated the file since it was read without the lock.
    The new version is written to ``meta_table``.

    Example:
        >>> # await file.transaction(writer, upgrade(_MIGRATIONS, meta_table="flowcore_meta",
        >>> #                                        schema_version=read), failed=wording)
    """
    current = len(migrations)

    async def run(conn: aiosqlite.Connection) -> None:
        version = await schema_version(conn)
        for number in range(version + 1, current + 1):
            for step in migrations[number - 1]:
                if isinstance(step, str):
                    await conn.execute_fetchall(step)
                else:
                    await step(conn)
        if version < current:
            await conn.execute_fetchall(
                f"INSERT OR REPLACE INTO {meta_table} (key, value) VALUES ('schema_version', ?)",
                (str(current),),
            )

    return run


@dataclass(frozen=True, slots=True)
class SqliteFile:
    """One store's SQLite file: where it is, how long to wait, and how to fail.

    Args:
        path: The database file.
        busy_timeout: Seconds to wait for another connection's lock.
        error: The store's own error type, given the message.
        store: The store's class name, for advice such as "point
            SqliteCheckpointer at a new file".
        label: What "cannot open ..." calls the file before its path
            (e.g. ``"run history "``); empty by default.

    Example:
        >>> from flowcore.errors import CheckpointStoreError
        >>> file = SqliteFile(Path("t.db"), 5.0, CheckpointStoreError, "SqliteCheckpointer")
        >>> file.open_error(sqlite3.OperationalError("disk I/O error")).args[0]
        'cannot open t.db: disk I/O error'
    """

    path: Path
    busy_timeout: float
    error: Callable[[str], Exception]
    store: str
    label: str = ""

    # ------------------------------------------------------------------ opening

    async def open(
        self,
        *,
        synchronous: str,
        current: int,
        schema_version: Callable[[aiosqlite.Connection], Awaitable[int]],
        migrate: Callable[[aiosqlite.Connection], Awaitable[None]],
    ) -> tuple[aiosqlite.Connection, aiosqlite.Connection]:
        """A writer and a reader connection on the accepted, migrated file, in WAL mode.

        ``schema_version`` reads the file's version (refusing what the store
        cannot open); ``migrate`` runs when it is older than ``current``.

        Example:
            >>> # writer, reader = await file.open(synchronous="NORMAL", current=2,
            >>> #     schema_version=self._schema_version, migrate=self._migrate)
        """
        await asyncio.to_thread(self.check_magic)
        writer = await self.connect(synchronous)
        reader: aiosqlite.Connection | None = None
        try:
            # Only reads until the file is accepted, so a refused file is untouched.
            version = await schema_version(writer)
            await self.enable_wal(writer)
            if version < current:
                await migrate(writer)
            reader = await self.connect(synchronous)
        except BaseException:
            await close_quietly(writer, reader)
            raise
        return writer, reader

    def check_magic(self) -> None:
        """Refuse a file that is not SQLite at all, before a store uses it (blocking I/O).

        The file is read through SQLite, never opened by Python: closing any
        descriptor of the file drops every POSIX lock this process holds on it,
        SQLite's own connections' included. Another process closing its last
        connection then believes it is alone, checkpoints and deletes the WAL
        and its index under the live connections (reads then fail with "disk
        I/O error", commits can be lost). SQLite keeps such descriptors open
        until its locks are released.

        Example:
            >>> # await asyncio.to_thread(file.check_magic)
        """
        if not self.path.exists():
            return  # a new store
        try:
            probe = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise self.error(f"cannot read {self.path}: {exc}") from exc
        try:
            # Reads the header only; nothing is written to a file that is refused.
            probe.execute("PRAGMA schema_version").fetchall()
        except sqlite3.Error as exc:
            if _code(exc) == _SQLITE_CANTOPEN:
                raise self.error(f"cannot read {self.path}: {exc}") from exc
            if _code(exc) != _SQLITE_NOTADB:
                return  # busy, locked, ...: the store's own open waits or words it
            raise self.open_error(exc) from exc
        finally:
            probe.close()

    async def connect(self, synchronous: str | None = None) -> aiosqlite.Connection:
        """:func:`connect` to this file, failing with the store's error.

        Example:
            >>> # conn = await file.connect("NORMAL")
        """
        try:
            return await connect(self.path, busy_timeout=self.busy_timeout, synchronous=synchronous)
        except sqlite3.Error as exc:
            raise self.open_error(exc) from exc

    def open_error(self, exc: sqlite3.Error) -> Exception:
        """The store's error for ``exc`` raised while opening or validating the file.

        Example:
            >>> # raise file.open_error(exc) from exc
        """
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
            return self.error(
                f"{self.path} is not an SQLite database or is corrupt ({exc}); point "
                f"{self.store} at a new file or at one flowcore created"
            )
        return self.error(f"cannot open {self.label}{self.path}: {exc}")

    async def enable_wal(self, conn: aiosqlite.Connection) -> None:
        """Switch the file to WAL journaling, waiting for other processes as needed.

        Example:
            >>> # await file.enable_wal(writer)
        """
        delay, waited = 0.005, 0.0
        while True:
            try:
                rows = await conn.execute_fetchall("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError as exc:
                # The switch needs the file to itself for a moment and SQLite does not
                # run the busy handler for it: a process opening the same new file at
                # the same time makes it fail at once. Wait as a busy handler would.
                if not _is_busy(exc) or waited >= self.busy_timeout:
                    raise self.error(f"cannot switch {self.path} to WAL: {exc}") from exc
                await asyncio.sleep(delay)
                waited += delay
                delay = min(delay * 2, 0.1)
            except sqlite3.Error as exc:
                raise self.error(f"cannot switch {self.path} to WAL: {exc}") from exc
        mode = str(next(iter(rows))[0]).lower()
        if mode != "wal":
            # Readers alongside the writer, and several processes, depend on it.
            raise self.error(
                f"{self.path} cannot use WAL journaling (got {mode!r}); "
                "put it on a local file system"
            )

    # ------------------------------------------------------------------ the schema

    async def schema_version(
        self,
        conn: aiosqlite.Connection,
        meta_table: str,
        *,
        current: int,
        kind: str,
        advice: str = "",
    ) -> int:
        """The version stored in ``meta_table`` (which exists); refuses damaged and newer.

        Args:
            conn: A connection to the file.
            meta_table: The store's table of ``(key, value)`` settings.
            current: The newest version this flowcore knows.
            kind: What the version is of, as "x.db has {kind} schema version 9".
            advice: Appended to the message about a damaged meta table.

        Example:
            >>> # await file.schema_version(conn, "flowcore_meta", current=2, kind="checkpoint")
        """
        try:
            rows = await conn.execute_fetchall(
                f"SELECT value FROM {meta_table} WHERE key = 'schema_version'"
            )
        except sqlite3.Error as exc:
            raise self.open_error(exc) from exc
        values = [row[0] for row in rows]
        try:
            version = int(values[0])
        except (IndexError, TypeError, ValueError):
            raise self.error(
                f"{self.path} is damaged: {meta_table} has no valid schema_version "
                f"(found {values!r}){advice}"
            ) from None
        if version > current:
            raise self.error(
                f"{self.path} has {kind} schema version {version}, newer than this "
                f"flowcore knows ({current}); upgrade flowcore to open it"
            )
        return version

    # ------------------------------------------------------------------ writing

    async def transaction(
        self,
        conn: aiosqlite.Connection,
        run: Callable[[aiosqlite.Connection], Awaitable[T]],
        *,
        failed: Callable[[sqlite3.Error], Exception],
    ) -> T:
        """Run ``run`` in one ``BEGIN IMMEDIATE`` transaction; roll back on any failure.

        An ``sqlite3.Error`` becomes ``failed(exc)``; anything else propagates
        as it is, after the rollback.

        Example:
            >>> # await file.transaction(writer, insert, failed=lambda e: Error(f"...: {e}"))
        """
        await self.begin_immediate(conn)
        try:
            result = await run(conn)
            await conn.execute_fetchall("COMMIT")
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error, ValueError):
                await conn.execute_fetchall("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise failed(exc) from exc
            raise
        return result

    async def lone_write(
        self,
        conn: aiosqlite.Connection,
        sql: str,
        params: Mapping[str, Any] | Sequence[Any],
        *,
        failed: Callable[[sqlite3.Error], Exception],
    ) -> list[Any]:
        """Run one writing statement as a transaction of its own; the rows it returns.

        On a connection outside any transaction (``isolation_level=None``) a
        single statement is atomic and takes the write lock before it reads,
        like ``BEGIN IMMEDIATE``, in one round trip. A busy lock is waited for
        as :meth:`begin_immediate` waits (the statement did nothing then).

        Example:
            >>> # rows = await file.lone_write(writer, "DELETE ... RETURNING id", {}, failed=f)
        """
        for attempt in range(1, _BEGIN_ATTEMPTS + 1):
            try:
                return list(await conn.execute_fetchall(sql, params))
            except sqlite3.OperationalError as exc:
                if _is_busy(exc) and attempt < _BEGIN_ATTEMPTS:
                    continue
                if _is_busy(exc):
                    raise self.error(
                        f"cannot write to {self.path}: {exc} "
                        f"(waited {attempt} x {self.busy_timeout:g} s for the write lock)"
                    ) from exc
                raise failed(exc) from exc
            except sqlite3.Error as exc:
                raise failed(exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    async def begin_immediate(self, conn: aiosqlite.Connection) -> None:
        """Take the write lock, waiting up to ``_BEGIN_ATTEMPTS`` busy timeouts for it.

        Example:
            >>> # await file.begin_immediate(writer)
        """
        for attempt in range(1, _BEGIN_ATTEMPTS + 1):
            try:
                await conn.execute_fetchall("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                # busy_timeout has already waited; another process holding the lock
                # for that long is rare, so wait that long again before failing.
                if _is_busy(exc) and attempt < _BEGIN_ATTEMPTS:
                    continue
                raise self.error(
                    f"cannot start a write on {self.path}: {exc} "
                    f"(waited {attempt} x {self.busy_timeout:g} s for the write lock)"
                ) from exc
