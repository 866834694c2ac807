"""``PostgresStore``: long-term memory in Postgres, shared by every process and machine.

The twin of :class:`~flowcore.memory.sqlite.SqliteStore`: the same namespace
encoding (parts joined by ``\\x1f``, a trailing one so a prefix never splits
a part), values kept as the JSON text they were given, and the optional
vectors table for semantic search beside them.

Install the extra first: ``pip install 'flowcore[postgres]'``.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import time
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from flowcore._postgres import migrate, open_pool, redact_url, scrub
from flowcore.errors import FlowcoreError
from flowcore.memory.sqlite import _decode, _encode
from flowcore.memory.store import MemoryItem, Namespace, rank_items, to_json

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

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


class PostgresStore:
    """A :class:`~flowcore.memory.store.Store` in a Postgres database.

    Open it with ``async with`` or :meth:`open`; close it with :meth:`aclose`.
    With an ``embedder``, :meth:`search` also ranks by meaning.

    Example:
        >>> # async with PostgresStore(os.environ["FLOWCORE_DATABASE_URL"]) as store:
        >>> #     await store.put(("users", "ada", "preferences"), "food", "tacos")
    """

    def __init__(
        self, url: str, *, embedder: Embedder | None = None, max_connections: int = 5
    ) -> None:
        self.url = url
        self.embedder = embedder
        self.max_connections = max_connections
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] | None = None
        self._ranker: SemanticRanker | None = None

    def __repr__(self) -> str:
        return f"PostgresStore({redact_url(self.url)!r})"

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
        """Connect and create the tables if they are new.

        Example:
            >>> # await PostgresStore(url).open()
        """
        if self._pool is not None:
            return
        pool = await open_pool(
            self.url, what="PostgresStore", error=FlowcoreError, max_size=self.max_connections
        )
        try:
            async with self._errors("create tables"), pool.connection() as conn:
                await migrate(
                    conn,
                    store="memory",
                    steps=_MIGRATIONS,
                    error=FlowcoreError,
                    where=redact_url(self.url),
                )
        except BaseException:
            await pool.close()
            raise
        self._pool = pool

    async def aclose(self) -> None:
        """Close the pool.

        Example:
            >>> # await store.aclose()
        """
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    @contextlib.asynccontextmanager
    async def _errors(self, doing: str) -> AsyncIterator[None]:
        import psycopg

        try:
            yield
        except psycopg.Error as exc:
            raise FlowcoreError(
                f"memory store {redact_url(self.url)}: {doing} failed: {scrub(str(exc), self.url)}"
            ) from None

    async def _run(self, doing: str, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        if self._pool is None:
            raise FlowcoreError(
                "PostgresStore is not open; use 'async with PostgresStore(url)' or "
                "'await store.open()'"
            )
        async with self._errors(doing), self._pool.connection() as conn:
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
        items = [MemoryItem(_decode(r[0]), r[1], json.loads(r[2]), r[3]) for r in rows]
        if self.embedder is None:
            return rank_items(items, query, limit)
        if self._ranker is None:
            # Imported here: flowcore.search imports the blocks package, which imports memory.
            from flowcore.memory.semantic import SemanticRanker

            self._ranker = SemanticRanker(self.embedder, self)
        return await self._ranker.rank(items, query, limit)

    @property
    def search_mode(self) -> str | None:
        """What the last :meth:`search` ran: ``"hybrid"``, ``"text"``, or None (no embedder).

        Example:
            >>> PostgresStore("postgresql://localhost/x").search_mode is None
            True
        """
        return None if self._ranker is None else self._ranker.mode

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
        for ns, key, digest, blob in rows:
            target = wanted.get((ns, key))
            if target is not None:
                found[target] = (str(digest), bytes(blob))
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
