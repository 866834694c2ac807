"""``SqliteStore``: long-term memory in one SQLite file, shared by processes and runs."""

from __future__ import annotations

import builtins
import json
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import aiosqlite

from flowcore._async_context import AsyncOpenClose
from flowcore._sqlite import MIN_BUSY_TIMEOUT, connect
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
        self._conn: aiosqlite.Connection | None = None
        self._ranker: SemanticRanker | None = None

    async def _enter(self) -> None:
        await self.open()

    async def open(self) -> None:
        """Open the file and create the table if it is new.

        Example:
            >>> # await SqliteStore("memory.db").open()
        """
        if self._conn is not None:
            return
        conn = await connect(self.path, busy_timeout=MIN_BUSY_TIMEOUT)
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute(_SCHEMA)
            await conn.execute(_VECTORS)
        except Exception as exc:
            await conn.close()
            raise FlowcoreError(
                f"cannot open memory store {self.path}: {exc}; point it at a new file or at "
                "one it created"
            ) from exc
        self._conn = conn

    async def aclose(self) -> None:
        """Close the connection.

        Example:
            >>> # await store.aclose()
        """
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    def _db(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise FlowcoreError(
                "SqliteStore is not open; use 'async with SqliteStore(path)' or "
                "'await store.open()'"
            )
        return self._conn

    async def put(self, namespace: Namespace, key: str, value: Any) -> None:
        """Store ``value`` (a JSON value) under ``key``, replacing what was there.

        Example:
            >>> # await store.put(("users", "ada", "preferences"), "food", "tacos")
        """
        encoded = _encode(namespace)
        text = to_json(tuple(namespace), key, value)
        await self._db().execute(
            "INSERT OR REPLACE INTO flowcore_memory (namespace, key, value, updated_at) "
            "VALUES (?, ?, ?, ?)",
            (encoded, key, text, time.time()),
        )

    async def get(self, namespace: Namespace, key: str) -> MemoryItem | None:
        """The item under ``key``, or None.

        Example:
            >>> # item = await store.get(("users", "ada", "preferences"), "food")
        """
        async with self._db().execute(
            "SELECT value, updated_at FROM flowcore_memory WHERE namespace = ? AND key = ?",
            (_encode(namespace), key),
        ) as cur:
            row = await cur.fetchone()
        if row is None:
            return None
        return MemoryItem(tuple(namespace), key, json.loads(row[0]), row[1])

    async def delete(self, namespace: Namespace, key: str) -> bool:
        """Remove ``key``; True if it existed.

        Example:
            >>> # await store.delete(("users", "ada", "preferences"), "food")
        """
        encoded = _encode(namespace)
        cur = await self._db().execute(
            "DELETE FROM flowcore_memory WHERE namespace = ? AND key = ?", (encoded, key)
        )
        await self._db().execute(
            "DELETE FROM flowcore_memory_vectors WHERE namespace = ? AND key = ?", (encoded, key)
        )
        return cur.rowcount > 0

    async def list(self, namespace: Namespace) -> builtins.list[MemoryItem]:
        """Every item directly in ``namespace``, newest first.

        Example:
            >>> # items = await store.list(("users", "ada", "preferences"))
        """
        async with self._db().execute(
            "SELECT key, value, updated_at FROM flowcore_memory WHERE namespace = ? "
            "ORDER BY updated_at DESC, key",
            (_encode(namespace),),
        ) as cur:
            rows = await cur.fetchall()
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
        async with self._db().execute(
            "SELECT namespace, key, value, updated_at FROM flowcore_memory "
            "WHERE substr(namespace, 1, ?) = ?",
            (len(encoded), encoded),
        ) as cur:
            rows = await cur.fetchall()
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
            async with self._db().execute(
                "SELECT namespace, key, text_hash, vector FROM flowcore_memory_vectors "
                f"WHERE embedder = ? AND dimensions = ? AND namespace IN ({marks})",
                (embedder, dimensions, *chunk),
            ) as cur:
                match_vectors(wanted, await cur.fetchall(), found)
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
        for start in range(0, len(values), _ROWS_PER_STATEMENT):
            chunk = values[start : start + _ROWS_PER_STATEMENT]
            # One statement per chunk: one commit, not one per row.
            await self._db().execute(
                "INSERT OR REPLACE INTO flowcore_memory_vectors VALUES "
                + ",".join(["(?, ?, ?, ?, ?, ?)"] * len(chunk)),
                [v for row in chunk for v in row],
            )
