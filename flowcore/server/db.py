"""The server's own tables in an SQLite file: API keys, runs, run events, pipelines, threads.

The SQLite twin of :class:`~flowcore.server.postgres_db.PostgresServerDatabase`
(both serve :class:`~flowcore.server.schema.ServerDb`, so every server store
runs on either). One connection, opened once per server (or per ``flowcore
keys`` command), shared by the stores. Statements run on
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
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import aiosqlite

from flowcore._sqlite import MIN_BUSY_TIMEOUT, connect
from flowcore.errors import FlowcoreError
from flowcore.server.schema import LATER_COLUMNS, FetchOne, ServerDb, server_schema

if TYPE_CHECKING:
    from flowcore.storage import DatabaseTarget

__all__ = ["ServerDatabase", "ServerStoreError", "open_server_database"]


class ServerStoreError(FlowcoreError):
    """The server's tables cannot be opened or used.

    Example:
        >>> ServerStoreError("not open").code
        'server-store'
    """

    code = "server-store"


class ServerDatabase(FetchOne):
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
            for statement in server_schema("sqlite"):
                await conn.execute(statement)
            await _add_later_columns(conn)
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


async def _add_later_columns(conn: aiosqlite.Connection) -> None:
    """Add the columns a file made by an older flowcore lacks (SQLite has no ADD IF NOT EXISTS)."""
    for table, column, kind in LATER_COLUMNS:
        rows = await conn.execute_fetchall(f"PRAGMA table_info({table})")
        if column not in {str(row[1]) for row in rows}:
            await conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


@asynccontextmanager
async def open_server_database(
    path: str | os.PathLike[str], database: DatabaseTarget | None = None
) -> AsyncIterator[ServerDb]:
    """The server's tables: in Postgres when ``database`` is a Postgres target, else at ``path``.

    ``database`` is what ``FLOWCORE_DATABASE_URL`` names (the CLI reads it);
    psycopg is imported only for Postgres.

    Example:
        >>> # async with open_server_database(Path("flowcore.db")) as db:
        >>> #     keys = ApiKeys(db)
    """
    if database is not None and database.kind == "postgres":
        from flowcore.server.postgres_db import PostgresServerDatabase

        async with PostgresServerDatabase(database.location) as pg:
            yield pg
        return
    async with ServerDatabase(path) as db:
        yield db
