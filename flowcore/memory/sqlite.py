"""``SqliteStore``: long-term memory in one SQLite file, shared by processes and runs.

Many runs of one process share a store, and other processes write the same
file, so the store keeps SQLite's locking rules the way the other SQLite
stores do (:mod:`flowcore._sqlite`):

* **Reads and writes use two connections.** A read leaves no statement
  half-stepped on the writer: a write on a connection that still holds a read
  snapshot has to upgrade it, and SQLite fails that upgrade at once with
  "database is locked" (``SQLITE_BUSY`` or ``SQLITE_BUSY_SNAPSHOT``) while
  another process writes, without waiting for the busy timeout.
* **Each read is one call** (``execute_fetchall``): its statement is stepped to
  the end and reset before another run's call can use the connection.
* **Each write takes the write lock first** (a lone statement, or
  ``BEGIN IMMEDIATE`` for several), one at a time per process, and waits for
  other processes' locks as the busy timeout allows.
* **The switch to WAL is retried** while another process opens the file.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import aiosqlite

from flowcore._async_context import AsyncOpenClose
from flowcore._sqlite import MIN_BUSY_TIMEOUT, SqliteFile, close_quietly
from flowcore.errors import FlowcoreError
from flowcore.memory.rows import RankedSearch, item_rows, match_vectors
from flowcore.memory.rows import encode_namespace as _encode
from flowcore.memory.store import MemoryItem, Namespace, to_json

if TYPE_CHECKING:
    from flowcore.memory.semantic import SemanticRanker
    from flowcore.search.embedder import Embedder

__all__ = ["SqliteStore"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS flowcore_memory ("
    " namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
    " updated_at REAL NOT NULL, PRIMARY KEY (namespace, key))"
)
# Embeddings of memories (semantic search), beside them in the same file.
_VECTORS = (
    "CREATE TABLE IF NOT EXISTS flowcore_memory_vectors ("
    " namespace TEXT NOT NULL, key TEXT NOT NULL, embedder TEXT NOT NULL,"
    " dimensions INTEGER NOT NULL, text_hash TEXT NOT NULL, vector BLOB NOT NULL,"
    " PRIMARY KEY (namespace, key, embedder, dimensions))"
)
_ROWS_PER_STATEMENT = 500  # parameters stay well under SQLite's limit
_T = TypeVar("_T")


class SqliteStore(RankedSearch, AsyncOpenClose):
    """A :class:`~flowcore.memory.store.Store` in a SQLite file (WAL, safe across processes).

    With an ``embedder`` (see :mod:`flowcore.search`), :meth:`search` also
    ranks by meaning; the vectors live in the same file, in
    ``flowcore_memory_vectors``, and are recomputed only when a memory changes.

    Example:
        >>> # async with SqliteStore("memory.db", embedder=WordLlamaEmbedder()) as store:
        >>> #     await store.put(("users", "ada", "preferences"), "food", "tacos")
    """

    def __init__(self, path: str | os.PathLike[str], *, embedder: Embedder | None = None) -> None:
        self.path = os.fspath(path)
        self.embedder = embedder
        self._file = SqliteFile(
            Path(self.path), MIN_BUSY_TIMEOUT, FlowcoreError, "SqliteStore", "memory store "
        )
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        # One write at a time per process: a transaction on the shared writer
        # connection must not take in another run's statements.
        self._write_lock = asyncio.Lock()
        self._pending: set[asyncio.Future[Any]] = set()
        self._ranker: SemanticRanker | None = None

    async def _enter(self) -> None:
        await self.open()

    async def open(self) -> None:
        """Open the file and create the table if it is new.

        Example:
            >>> # await SqliteStore("memory.db").open()
        """
        if self._writer is not None:
            return
        writer = await self._file.connect()
        reader: aiosqlite.Connection | None = None
        try:
            await self._file.enable_wal(writer)

            async def create(conn: aiosqlite.Connection) -> None:
                await conn.execute_fetchall(_SCHEMA)
                await conn.execute_fetchall(_VECTORS)

            await self._file.transaction(writer, create, failed=self._open_failed)
            reader = await self._file.connect()
        except BaseException:
            await close_quietly(writer, reader)
            raise
        self._writer, self._reader = writer, reader

    def _open_failed(self, exc: sqlite3.Error) -> FlowcoreError:
        return FlowcoreError(
            f"cannot open memory store {self.path}: {exc}; point it at a new file or at "
            "one it created"
        )

    def _write_failed(self, exc: sqlite3.Error) -> FlowcoreError:
        return FlowcoreError(f"write to memory store {self.path} failed: {exc}")

    async def aclose(self) -> None:
        """Close the connection.

        Example:
            >>> # await store.aclose()
        """
        if self._writer is None:
            return
        # Writes whose callers were cancelled still end (see _shielded) before closing.
        while self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
        async with self._write_lock:
            writer, reader, self._writer, self._reader = self._writer, self._reader, None, None
            await close_quietly(writer, reader)

    def _connections(self) -> tuple[aiosqlite.Connection, aiosqlite.Connection]:
        if self._writer is None or self._reader is None:
            raise FlowcoreError(
                "SqliteStore is not open; use 'async with SqliteStore(path)' or "
                "'await store.open()'"
            )
        return self._writer, self._reader

    async def _read(self, sql: str, params: Sequence[Any]) -> builtins.list[Any]:
        """All rows of one query, read in one call on the reader connection."""
        _, reader = self._connections()
        try:
            return list(await reader.execute_fetchall(sql, params))
        except sqlite3.Error as exc:
            raise FlowcoreError(f"read from memory store {self.path} failed: {exc}") from exc

    async def _write(self, run: Callable[[aiosqlite.Connection], Awaitable[_T]]) -> _T:
        """Run ``run`` in one ``BEGIN IMMEDIATE`` transaction on the writer, one at a time."""
        writer, _ = self._connections()

        async def locked() -> _T:
            async with self._write_lock:
                return await self._file.transaction(writer, run, failed=self._write_failed)

        return await self._shielded(locked())

    async def _lone_write(self, sql: str, params: Sequence[Any]) -> None:
        """One writing statement as a transaction of its own (takes the lock before it reads)."""
        writer, _ = self._connections()

        async def locked() -> None:
            async with self._write_lock:
                await self._file.lone_write(writer, sql, params, failed=self._write_failed)

        await self._shielded(locked())

    async def _shielded(self, write: Awaitable[_T]) -> _T:
        # A cancelled caller stops waiting, the write still ends whole (COMMIT or
        # ROLLBACK) and aclose() waits for it.
        task = asyncio.ensure_future(write)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return await asyncio.shield(task)

    async def put(self, namespace: Namespace, key: str, value: Any) -> None:
        """Store ``value`` (a JSON value) under ``key``, replacing what was there.

        Example:
            >>> # await store.put(("users", "ada", "preferences"), "food", "tacos")
        """
        encoded = _encode(namespace)
        text = to_json(tuple(namespace), key, value)
        await self._lone_write(
            "INSERT OR REPLACE INTO flowcore_memory (namespace, key, value, updated_at) "
            "VALUES (?, ?, ?, ?)",
            (encoded, key, text, time.time()),
        )

    async def get(self, namespace: Namespace, key: str) -> MemoryItem | None:
        """The item under ``key``, or None.

        Example:
            >>> # item = await store.get(("users", "ada", "preferences"), "food")
        """
        rows = await self._read(
            "SELECT value, updated_at FROM flowcore_memory WHERE namespace = ? AND key = ?",
            (_encode(namespace), key),
        )
        if not rows:
            return None
        row = rows[0]
        return MemoryItem(tuple(namespace), key, json.loads(row[0]), row[1])

    async def delete(self, namespace: Namespace, key: str) -> bool:
        """Remove ``key``; True if it existed.

        Example:
            >>> # await store.delete(("users", "ada", "preferences"), "food")
        """
        encoded = _encode(namespace)

        async def remove(conn: aiosqlite.Connection) -> bool:
            # The memory and its vectors go together, in one transaction.
            gone = await conn.execute_fetchall(
                "DELETE FROM flowcore_memory WHERE namespace = ? AND key = ? RETURNING key",
                (encoded, key),
            )
            await conn.execute_fetchall(
                "DELETE FROM flowcore_memory_vectors WHERE namespace = ? AND key = ?",
                (encoded, key),
            )
            return len(list(gone)) > 0

        return await self._write(remove)

    async def list(self, namespace: Namespace) -> builtins.list[MemoryItem]:
        """Every item directly in ``namespace``, newest first.

        Example:
            >>> # items = await store.list(("users", "ada", "preferences"))
        """
        rows = await self._read(
            "SELECT key, value, updated_at FROM flowcore_memory WHERE namespace = ? "
            "ORDER BY updated_at DESC, key",
            (_encode(namespace),),
        )
        ns = tuple(namespace)
        return [MemoryItem(ns, r[0], json.loads(r[1]), r[2]) for r in rows]

    async def search(
        self, prefix: Namespace, query: str | None = None, *, limit: int = 10
    ) -> builtins.list[MemoryItem]:
        """Items under ``prefix`` ranked by shared words with ``query`` (newest first on ties).

        Example:
            >>> # hits = await store.search(("users", "ada"), "favourite food")
        """
        encoded = _encode(prefix)
        rows = await self._read(
            "SELECT namespace, key, value, updated_at FROM flowcore_memory "
            "WHERE substr(namespace, 1, ?) = ?",
            (len(encoded), encoded),
        )
        items = item_rows(rows)
        return await self._rank(items, query, limit)

    async def load_vectors(
        self, keys: Sequence[tuple[Namespace, str]], embedder: str, dimensions: int
    ) -> dict[tuple[Namespace, str], tuple[str, bytes]]:
        """Stored ``(text hash, vector bytes)`` of memories, for semantic search.

        Example:
            >>> # rows = await store.load_vectors([(("users", "ada"), "food")], "e", 256)
        """
        wanted = {(_encode(ns), key): (tuple(ns), key) for ns, key in keys}
        namespaces = sorted({ns for ns, _ in wanted})
        found: dict[tuple[Namespace, str], tuple[str, bytes]] = {}
        for start in range(0, len(namespaces), _ROWS_PER_STATEMENT):
            chunk = namespaces[start : start + _ROWS_PER_STATEMENT]
            marks = ",".join("?" * len(chunk))
            rows = await self._read(
                "SELECT namespace, key, text_hash, vector FROM flowcore_memory_vectors "
                f"WHERE embedder = ? AND dimensions = ? AND namespace IN ({marks})",
                (embedder, dimensions, *chunk),
            )
            match_vectors(wanted, rows, found)
        return found

    async def save_vectors(
        self,
        rows: Sequence[tuple[tuple[Namespace, str], str, bytes]],
        embedder: str,
        dimensions: int,
    ) -> None:
        """Store ``(key, text hash, vector bytes)`` rows, replacing older ones.

        Example:
            >>> # await store.save_vectors([((("users", "ada"), "food"), "ab12", b"...")], "e", 2)
        """
        values = [
            (_encode(ns), key, embedder, dimensions, digest, blob)
            for (ns, key), digest, blob in rows
        ]
        if not values:
            return

        async def insert(conn: aiosqlite.Connection) -> None:
            for start in range(0, len(values), _ROWS_PER_STATEMENT):
                chunk = values[start : start + _ROWS_PER_STATEMENT]
                # One statement per chunk, all in one transaction: one commit.
                await conn.execute_fetchall(
                    "INSERT OR REPLACE INTO flowcore_memory_vectors VALUES "
                    + ",".join(["(?, ?, ?, ?, ?, ?)"] * len(chunk)),
                    [v for row in chunk for v in row],
                )

        await self._write(insert)
