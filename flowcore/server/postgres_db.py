"""``PostgresServerDatabase``: the server's own tables in Postgres, for a stateless API tier.

The twin of :class:`~flowcore.server.db.ServerDatabase`: the same tables
(:func:`~flowcore.server.schema.server_schema`), the same four calls
(:class:`~flowcore.server.schema.ServerDb`), so :class:`ApiKeys`,
:class:`RunStore`, :class:`PipelineStore` and :class:`ClarifyStore` run on it
unchanged. Several server processes may share one database: each statement
is its own autocommit transaction on a pooled connection, ``executemany``
one transaction, and every write is a single statement, so no lock in the
process is needed (Postgres orders concurrent writers itself).

Install the extra first: ``pip install 'flowcore[postgres]'``.

Example:
    >>> # async with PostgresServerDatabase("postgresql://app@db/flowcore") as db:
    >>> #     keys = ApiKeys(db)
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from flowcore._postgres import redact_url
from flowcore._postgres_store import PostgresStoreBase
from flowcore.server.db import ServerStoreError
from flowcore.server.schema import FetchOne, server_schema

__all__ = ["PostgresServerDatabase", "to_pyformat"]


@functools.lru_cache(maxsize=256)
def to_pyformat(sql: str) -> str:
    """A ``?``-placeholder statement in psycopg's ``%s`` style (a literal ``%`` doubled).

    Quoted text (``'...'``, ``"..."``) is left as written.

    Example:
        >>> to_pyformat("SELECT '?', x FROM t WHERE a = ? AND b LIKE 'a%'")
        "SELECT '?', x FROM t WHERE a = %s AND b LIKE 'a%%'"
    """
    out: list[str] = []
    quote: str | None = None
    for char in sql:
        if char == "%":
            out.append("%%")  # psycopg reads every % outside a placeholder as a format mark
        elif quote is not None:
            out.append(char)
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
            out.append(char)
        else:
            out.append("%s" if char == "?" else char)
    return "".join(out)


class PostgresServerDatabase(FetchOne, PostgresStoreBase):
    """The server's tables in a Postgres database, behind the same calls as the SQLite twin.

    Args:
        url: ``postgresql://user:password@host:port/database``.
        max_connections: The pool's size (runs ending together write at once).

    Example:
        >>> PostgresServerDatabase("postgresql://app:pw@db/x")
        PostgresServerDatabase('postgresql://app:***@db/x', new)
    """

    _what = "PostgresServerDatabase"
    _kind = "server"
    _migrations = (server_schema("postgres"),)
    _store_error = ServerStoreError
    _failure = "{doing} on the server's tables in {where} failed: {detail}"
    _not_open_error = ServerStoreError
    _not_open = "{store!r} is not open; use 'async with PostgresServerDatabase(url) as db:'"

    def __init__(self, url: str, *, max_connections: int = 10) -> None:
        super().__init__(url, max_connections=max_connections)

    def __repr__(self) -> str:
        return f"PostgresServerDatabase({redact_url(self.url)!r}, {self._state})"

    async def execute(self, sql: str, params: Iterable[Any] = ()) -> int:
        """Run one write statement; returns the number of rows it changed.

        Example:
            >>> # await db.execute("DELETE FROM flowcore_api_keys WHERE key_id = ?", ("k1",))
        """
        pool = self._require_open()
        async with self._errors("a write"), pool.connection() as conn:
            cursor = await conn.execute(to_pyformat(sql), tuple(params))
            return max(cursor.rowcount, 0)

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of one query.

        Example:
            >>> # rows = await db.fetchall("SELECT key_id FROM flowcore_api_keys")
        """
        pool = self._require_open()
        async with self._errors("a read"), pool.connection() as conn:
            cursor = await conn.execute(to_pyformat(sql), tuple(params))
            return [tuple(row) for row in await cursor.fetchall()]

    async def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> None:
        """One statement for many rows, in one transaction (all rows or none).

        Example:
            >>> # await db.executemany("INSERT ...", [(1,), (2,)])
        """
        pool = self._require_open()
        values = [tuple(r) for r in rows]
        async with (
            self._errors("a batch write"),
            pool.connection() as conn,
            conn.transaction(),
            conn.cursor() as cursor,
        ):
            await cursor.executemany(to_pyformat(sql), values)
