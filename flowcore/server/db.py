"""The server's own tables in the CLI's database: API keys, runs, run events, pipelines.

One connection, opened once per server (or per ``flowcore keys`` command),
shared by :class:`~flowcore.server.keys.ApiKeys`,
:class:`~flowcore.server.run_store.RunStore` and
:class:`~flowcore.server.pipeline_store.PipelineStore`. Statements run on
aiosqlite's thread, never on the event loop; each write is one statement or
one ``BEGIN IMMEDIATE`` transaction, and writes take turns (a lock): on one
shared connection, a second ``BEGIN`` while a transaction is open fails
("cannot start a transaction within a transaction"), and a lone statement
sent meanwhile would join, and be rolled back with, another's transaction.
Many runs ending at once (200 concurrent streams) hit exactly that.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from types import TracebackType
from typing import Any, Self

import aiosqlite

from flowcore._sqlite import MIN_BUSY_TIMEOUT, connect
from flowcore.errors import FlowcoreError

__all__ = ["ServerDatabase", "ServerStoreError"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS flowcore_api_keys (
        key_id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        token_hash TEXT NOT NULL UNIQUE,
        created_at REAL NOT NULL,
        revoked_at REAL)""",
    """CREATE TABLE IF NOT EXISTS flowcore_server_runs (
        run_id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        thread_id TEXT,
        target TEXT NOT NULL,
        target_name TEXT NOT NULL,
        input TEXT,
        status TEXT NOT NULL,
        started_at REAL NOT NULL,
        ended_at REAL,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        interrupts TEXT NOT NULL DEFAULT '[]',
        output TEXT,
        continues TEXT,
        continued_by TEXT,
        resume TEXT)""",
    "CREATE INDEX IF NOT EXISTS flowcore_server_runs_user ON flowcore_server_runs "
    "(user_id, started_at)",
    "CREATE INDEX IF NOT EXISTS flowcore_server_runs_thread ON flowcore_server_runs (thread_id)",
    """CREATE TABLE IF NOT EXISTS flowcore_server_events (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        event TEXT NOT NULL,
        PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE IF NOT EXISTS flowcore_server_pipelines (
        pipeline_id TEXT PRIMARY KEY,
        definition TEXT NOT NULL,
        saved_at REAL NOT NULL)""",
)


class ServerStoreError(FlowcoreError):
    """The server's tables cannot be opened or used.

    Example:
        >>> ServerStoreError("not open").code
        'server-store'
    """

    code = "server-store"


class ServerDatabase:
    """An open connection to the database file, with the server's tables created.

    Example:
        >>> # async with ServerDatabase("flowcore.db") as db:
        >>> #     keys = ApiKeys(db)
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._conn: aiosqlite.Connection | None = None
        self._writing: asyncio.Lock | None = None

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Connect and create the tables that are missing.

        Example:
            >>> # await ServerDatabase("flowcore.db").open()
        """
        if self._conn is not None:
            return
        try:
            conn = await connect(self.path, busy_timeout=MIN_BUSY_TIMEOUT)
        except Exception as exc:
            raise ServerStoreError(f"cannot open the database {self.path!r}: {exc}") from exc
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            for statement in _SCHEMA:
                await conn.execute(statement)
        except Exception as exc:
            await conn.close()
            raise ServerStoreError(
                f"cannot create the server's tables in {self.path!r}: {exc}; point --db at a "
                "flowcore database or a new file"
            ) from exc
        self._conn = conn
        self._writing = asyncio.Lock()

    async def aclose(self) -> None:
        """Close the connection (safe to call twice).

        Example:
            >>> # await db.aclose()
        """
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await conn.close()

    @property
    def conn(self) -> aiosqlite.Connection:
        """The open connection; :class:`ServerStoreError` if it is closed."""
        if self._conn is None:
            raise ServerStoreError(
                "the server database is not open; use 'async with ServerDatabase(path)'"
            )
        return self._conn

    async def execute(self, sql: str, params: Iterable[Any] = ()) -> int:
        """Run one write statement; returns the number of rows it changed.

        Example:
            >>> # await db.execute("DELETE FROM flowcore_server_pipelines WHERE 0")
        """
        conn = self.conn
        async with self._write_turn():
            cursor = await conn.execute(sql, tuple(params))
            count = cursor.rowcount
            await cursor.close()
        return count

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of one query.

        Example:
            >>> # rows = await db.fetchall("SELECT key_id FROM flowcore_api_keys")
        """
        rows = await self.conn.execute_fetchall(sql, tuple(params))
        return [tuple(row) for row in rows]

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> tuple[Any, ...] | None:
        """The first row of one query, or None.

        Example:
            >>> # row = await db.fetchone("SELECT 1")
        """
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> None:
        """One statement for many rows, in one transaction.

        Example:
            >>> # await db.executemany("INSERT ...", [(1,), (2,)])
        """
        conn = self.conn
        values = [tuple(r) for r in rows]
        async with self._write_turn():
            await conn.execute("BEGIN IMMEDIATE")
            try:
                await conn.executemany(sql, values)
                await conn.execute("COMMIT")
            except BaseException:
                await conn.execute("ROLLBACK")
                raise

    def _write_turn(self) -> asyncio.Lock:
        if self._writing is None:  # only before open(); self.conn has already refused
            raise ServerStoreError("the server database is not open")
        return self._writing
