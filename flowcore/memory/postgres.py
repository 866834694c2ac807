"""``PostgresStore``: long-term memory in Postgres, shared by every process and machine.

The twin of :class:`~flowcore.memory.sqlite.SqliteStore`: the same namespace
encoding (parts joined by ``\\x1f``, a trailing one so a prefix never splits
a part), values kept as the JSON text they were given, and the optional
vectors table for semantic search beside them.

Install the extra first: ``pip install 'flowcore[postgres]'``.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flowcore._postgres import redact_url
from flowcore._postgres_store import PostgresStoreBase
from flowcore.errors import FlowcoreError
from flowcore.memory.rows import RankedSearch, item_rows, match_vectors
from flowcore.memory.rows import encode_namespace as _encode
from flowcore.memory.store import MemoryItem, Namespace, to_json

if TYPE_CHECKING:
    from flowcore.memory.semantic import SemanticRanker
    from flowcore.search.embedder import Embedder

__all__ = ["PostgresStore"]

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE IF NOT EXISTS flowcore_memory ("
        " namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
        " updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (namespace, key))",
        # text_pattern_ops: a prefix LIKE on namespace uses the index whatever the collation.
        "CREATE INDEX IF NOT EXISTS flowcore_memory_prefix "
        "ON flowcore_memory (namespace text_pattern_ops)",
        "CREATE TABLE IF NOT EXISTS flowcore_memory_vectors ("
        " namespace TEXT NOT NULL, key TEXT NOT NULL, embedder TEXT NOT NULL,"
        " dimensions INTEGER NOT NULL, text_hash TEXT NOT NULL, vector BYTEA NOT NULL,"
        " PRIMARY KEY (namespace, key, embedder, dimensions))",
    ),
)


def _like_prefix(encoded: str) -> str:
    return encoded.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class PostgresStore(RankedSearch, PostgresStoreBase):
    """A :class:`~flowcore.memory.store.Store` in a Postgres database.

    Open it with ``async with`` or :meth:`open`; close it with :meth:`aclose`.
    With an ``embedder``, :meth:`search` also ranks by meaning.

    Example:
        >>> # async with PostgresStore(os.environ["FLOWCORE_DATABASE_URL"]) as store:
        >>> #     await store.put(("users", "ada", "preferences"), "food", "tacos")
    """

    _what = "PostgresStore"
    _kind = "memory"
    _migrations = _MIGRATIONS
    _store_error = FlowcoreError
    _failure = "memory store {where}: {doing} failed: {detail}"
    _migrate_doing = "create tables"
    _not_open_error = FlowcoreError
    _not_open = (
        "PostgresStore is not open; use 'async with PostgresStore(url)' or 'await store.open()'"
    )

    def __init__(
        self, url: str, *, embedder: Embedder | None = None, max_connections: int = 5
    ) -> None:
        super().__init__(url, max_connections=max_connections)
        self.embedder = embedder
        self._ranker: SemanticRanker | None = None

    def __repr__(self) -> str:
        return f"PostgresStore({redact_url(self.url)!r})"

    async def open(self) -> None:
        """Connect and create the tables if they are new.

        Example:
            >>> # await PostgresStore(url).open()
        """
        await self._open()

    async def _run(self, doing: str, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        pool = self._require_open()
        async with self._errors(doing), pool.connection() as conn:
            cur = await conn.execute(sql, params)
            if cur.description is None:
                return [(cur.rowcount,)]
            return list(await cur.fetchall())

    async def put(self, namespace: Namespace, key: str, value: Any) -> None:
        """Store ``value`` (a JSON value) under ``key``, replacing what was there.

        Example:
            >>> # await store.put(("users", "ada", "preferences"), "food", "tacos")
        """
        encoded = _encode(namespace)
        text = to_json(tuple(namespace), key, value)
        await self._run(
            "put",
            "INSERT INTO flowcore_memory (namespace, key, value, updated_at) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (namespace, key) DO UPDATE SET "
            "value = excluded.value, updated_at = excluded.updated_at",
            (encoded, key, text, time.time()),
        )

    async def get(self, namespace: Namespace, key: str) -> MemoryItem | None:
        """The item under ``key``, or None.

        Example:
            >>> # item = await store.get(("users", "ada", "preferences"), "food")
        """
        rows = await self._run(
            "get",
            "SELECT value, updated_at FROM flowcore_memory WHERE namespace = %s AND key = %s",
            (_encode(namespace), key),
        )
        if not rows:
            return None
        return MemoryItem(tuple(namespace), key, json.loads(rows[0][0]), rows[0][1])

    async def delete(self, namespace: Namespace, key: str) -> bool:
        """Remove ``key`` (and its vectors); True if it existed.

        Example:
            >>> # await store.delete(("users", "ada", "preferences"), "food")
        """
        encoded = _encode(namespace)
        await self._run(
            "delete",
            "DELETE FROM flowcore_memory_vectors WHERE namespace = %s AND key = %s",
            (encoded, key),
        )
        rows = await self._run(
            "delete",
            "DELETE FROM flowcore_memory WHERE namespace = %s AND key = %s",
            (encoded, key),
        )
        return bool(rows[0][0])

    async def list(self, namespace: Namespace) -> builtins.list[MemoryItem]:
        """Every item directly in ``namespace``, newest first.

        Example:
            >>> # items = await store.list(("users", "ada", "preferences"))
        """
        rows = await self._run(
            "list",
            "SELECT key, value, updated_at FROM flowcore_memory WHERE namespace = %s "
            'ORDER BY updated_at DESC, key COLLATE "C"',
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
        rows = await self._run(
            "search",
            "SELECT namespace, key, value, updated_at FROM flowcore_memory WHERE namespace LIKE %s",
            (_like_prefix(_encode(prefix)),),
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
        rows = await self._run(
            "load vectors",
            "SELECT namespace, key, text_hash, vector FROM flowcore_memory_vectors "
            "WHERE embedder = %s AND dimensions = %s AND namespace = ANY(%s)",
            (embedder, dimensions, sorted({ns for ns, _ in wanted})),
        )
        found: dict[tuple[Namespace, str], tuple[str, bytes]] = {}
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
        if not rows:
            return
        columns = list(
            zip(
                *[(_encode(ns), key, digest, blob) for (ns, key), digest, blob in rows], strict=True
            )
        )
        # One statement for the batch (arrays unnested), so one round trip and one commit.
        await self._run(
            "save vectors",
            "INSERT INTO flowcore_memory_vectors "
            "SELECT ns, k, %s, %s, h, v FROM unnest(%s::text[], %s::text[], %s::text[], "
            "%s::bytea[]) AS t(ns, k, h, v) ON CONFLICT (namespace, key, embedder, dimensions) "
            "DO UPDATE SET text_hash = excluded.text_hash, vector = excluded.vector",
            (embedder, dimensions, *[list(c) for c in columns]),
        )
