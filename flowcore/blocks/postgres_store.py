"""``PostgresBlockStore``: versioned blocks in Postgres, found by full-text search.

The twin of :class:`~flowcore.blocks.store.SqliteBlockStore`: the same
versions, tags, JSON export and import (with the same checks), and builtins
seeded once into a new database. Search uses a ``tsvector`` per block (its
latest version's name, description, ``use_when`` and tags, weighted in that
order, English stemming) under a GIN index; a query matches when any of its
words does (``websearch_to_tsquery`` with ``or``) and ranks by ``ts_rank``.

Saves of one block id are serialized by a transaction-scoped advisory lock,
so two processes saving at once get versions n+1 and n+2, never a clash.

Install the extra first: ``pip install 'flowcore[postgres]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from flowcore._postgres import migrate, open_pool, redact_url, scrub
from flowcore.blocks.builtins import builtin_blocks
from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.store import (
    _THREAD_ABOVE,
    BlockNotFoundError,
    BlockStoreError,
    _as_list,
    _block,
    _decode,
    _same,
)
from flowcore.errors import BlockDefinitionError, FlowcoreError

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresBlockStore"]

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE IF NOT EXISTS blocks (
            id TEXT NOT NULL,
            version INTEGER NOT NULL,
            category TEXT NOT NULL,
            definition TEXT NOT NULL,
            saved_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (id, version))""",
        """CREATE TABLE IF NOT EXISTS block_tags (
            id TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (id, tag))""",
        """CREATE TABLE IF NOT EXISTS blocks_search (
            id TEXT PRIMARY KEY, document TSVECTOR NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS blocks_search_document ON blocks_search USING GIN (document)",
        """CREATE TABLE IF NOT EXISTS flowcore_blocks_meta (
            key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    ),
)

_DOCUMENT = (
    "setweight(to_tsvector('english', %(name)s), 'A') || "
    "setweight(to_tsvector('english', %(description)s), 'B') || "
    "setweight(to_tsvector('english', %(tags)s), 'B') || "
    "setweight(to_tsvector('english', %(use_when)s), 'C')"
)


class PostgresBlockStore:
    """A :class:`~flowcore.blocks.store.BlockStore` in Postgres, seeded with the builtins.

    Example:
        >>> # async with PostgresBlockStore(os.environ["FLOWCORE_DATABASE_URL"]) as store:
        >>> #     hits = await store.search("summarize a text")
    """

    def __init__(self, url: str, *, seed_builtins: bool = True, max_connections: int = 5) -> None:
        self.url = url
        self.seed_builtins = seed_builtins
        self.max_connections = max_connections
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] | None = None

    def __repr__(self) -> str:
        return f"PostgresBlockStore({redact_url(self.url)!r})"

    @property
    def path(self) -> str:
        """Where the blocks are, fit to print: the URL with its password hidden.

        Example:
            >>> PostgresBlockStore("postgresql://app:pw@db/flowcore").path
            'postgresql://app:***@db/flowcore'
        """
        return redact_url(self.url)

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
        """Connect, create the tables, and seed builtins into a new store.

        Example:
            >>> # await PostgresBlockStore(url).open()
        """
        if self._pool is not None:
            return
        pool = await open_pool(
            self.url,
            what="PostgresBlockStore",
            error=BlockStoreError,
            max_size=self.max_connections,
        )
        try:
            async with self._errors("open"), pool.connection() as conn:
                await migrate(
                    conn,
                    store="blocks",
                    steps=_MIGRATIONS,
                    error=BlockStoreError,
                    where=redact_url(self.url),
                )
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(hashtext('flowcore:seed'))")
                    cur = await conn.execute(
                        "SELECT 1 FROM flowcore_blocks_meta WHERE key = 'seeded'"
                    )
                    if await cur.fetchone() is None and self.seed_builtins:
                        for block in builtin_blocks():
                            await _insert(conn, block, block.version)
                    await conn.execute(
                        "INSERT INTO flowcore_blocks_meta (key, value) VALUES ('seeded', '1') "
                        "ON CONFLICT (key) DO NOTHING"
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
            raise BlockStoreError(
                f"block store {redact_url(self.url)}: {doing} failed: {scrub(str(exc), self.url)}"
            ) from None

    @contextlib.asynccontextmanager
    async def _conn(self, doing: str, *, tx: bool = False) -> AsyncIterator[AsyncConnection[Any]]:
        if self._pool is None:
            raise FlowcoreError(
                "PostgresBlockStore is not open; use 'async with PostgresBlockStore(url)' or "
                "'await store.open()'"
            )
        async with self._errors(doing), self._pool.connection() as conn:
            if tx:
                async with conn.transaction():
                    yield conn
            else:
                yield conn

    # -------------------------------------------------------------- writing
    async def save(self, block: BlockDefinition) -> BlockDefinition:
        """Store a block. Unchanged: nothing happens. Changed: version n+1.

        Example:
            >>> # v2 = await store.save(block.model_copy(update={"description": "better"}))
        """
        async with self._conn("save", tx=True) as conn:
            await _lock_block(conn, block.id)
            latest = await _latest(conn, block.id)
            if latest is not None and _same(latest, block):
                return latest
            version = 1 if latest is None else latest.version + 1
            return await _insert(conn, block, version)

    async def delete(self, block_id: str) -> None:
        """Remove every version of a block.

        Example:
            >>> # await store.delete("old_block")
        """
        async with self._conn("delete", tx=True) as conn:
            cur = await conn.execute("DELETE FROM blocks WHERE id = %s", (block_id,))
            if cur.rowcount == 0:
                raise BlockNotFoundError(f"no block {block_id!r} to delete", block=block_id)
            await conn.execute("DELETE FROM block_tags WHERE id = %s", (block_id,))
            await conn.execute("DELETE FROM blocks_search WHERE id = %s", (block_id,))

    # -------------------------------------------------------------- reading
    async def get(self, block_id: str, version: int | None = None) -> BlockDefinition:
        """The latest version of a block, or the pinned ``version``.

        Example:
            >>> # await store.get("summarize", version=1)
        """
        async with self._conn("get") as conn:
            if version is None:
                found = await _latest(conn, block_id)
            else:
                cur = await conn.execute(
                    "SELECT definition FROM blocks WHERE id = %s AND version = %s",
                    (block_id, version),
                )
                row = await cur.fetchone()
                found = None if row is None else BlockDefinition.model_validate_json(row[0])
        if found is None:
            what = f"block {block_id!r}" + (f" version {version}" if version else "")
            raise BlockNotFoundError(
                f"no {what} in {redact_url(self.url)}; list the stored blocks with "
                "list_blocks() or search()",
                block=block_id,
                version=version,
            )
        return found

    async def versions(self, block_id: str) -> list[int]:
        """Every stored version number of a block, oldest first.

        Example:
            >>> # await store.versions("summarize")   # [1, 2]
        """
        async with self._conn("versions") as conn:
            cur = await conn.execute(
                "SELECT version FROM blocks WHERE id = %s ORDER BY version", (block_id,)
            )
            return [int(r[0]) for r in await cur.fetchall()]

    async def list_blocks(
        self, *, category: str | None = None, tags: Sequence[str] = ()
    ) -> list[BlockDefinition]:
        """Latest versions, filtered by category and tags (all must match), by id.

        Example:
            >>> # await store.list_blocks(category="memory")
        """
        sql = (
            "SELECT b.definition FROM blocks b WHERE b.version = "
            "(SELECT MAX(version) FROM blocks WHERE id = b.id)"
        )
        params: list[Any] = []
        if category is not None:
            sql += " AND b.category = %s"
            params.append(category)
        for tag in tags:
            sql += " AND EXISTS (SELECT 1 FROM block_tags t WHERE t.id = b.id AND t.tag = %s)"
            params.append(tag)
        sql += ' ORDER BY b.id COLLATE "C"'
        async with self._conn("list") as conn:
            cur = await conn.execute(sql, params)
            rows = await cur.fetchall()
        return [BlockDefinition.model_validate_json(r[0]) for r in rows]

    async def search(self, query: str, *, limit: int = 10) -> list[BlockDefinition]:
        """Blocks whose name, description, use_when or tags match ``query``, best first.

        Any word may match (an OR query); more and better-placed matches rank higher.

        Example:
            >>> # [b.id for b in await store.search("shorten long text")]
        """
        return [await self.get(i) for i in await self.search_ids(query, limit=limit)]

    async def search_ids(
        self, query: str, *, limit: int = 10, among: Sequence[str] | None = None
    ) -> list[str]:
        """The ids :meth:`search` would return, best first, without loading the blocks.

        Example:
            >>> # await store.search_ids("shorten long text", limit=3)
        """
        words = [w for w in "".join(c if c.isalnum() else " " for c in query).split() if w]
        # "or" is websearch syntax, and an English stop word anyway.
        words = [w for w in words if w.lower() != "or"]
        if not words or (among is not None and not among):
            return []
        sql = (
            "SELECT id FROM blocks_search, websearch_to_tsquery('english', %(q)s) AS q "
            "WHERE document @@ q"
        )
        params: dict[str, Any] = {"q": " or ".join(words), "limit": limit}
        if among is not None:
            sql += " AND id = ANY(%(among)s)"
            params["among"] = list(among)
        sql += ' ORDER BY ts_rank(document, q) DESC, id COLLATE "C" LIMIT %(limit)s'
        async with self._conn("search") as conn:
            cur = await conn.execute(sql, params)
            return [str(r[0]) for r in await cur.fetchall()]

    # ----------------------------------------------------------- JSON files
    async def export_json(self) -> str:
        """Every version of every block as a JSON document.

        Example:
            >>> # text = await store.export_json()
        """
        async with self._conn("export") as conn:
            cur = await conn.execute(
                'SELECT definition FROM blocks ORDER BY id COLLATE "C", version'
            )
            rows = await cur.fetchall()
        return json.dumps(
            {"format": "flowcore-blocks", "version": 1, "blocks": [json.loads(r[0]) for r in rows]},
            indent=2,
        )

    async def import_json(self, text: str) -> int:
        """Save each block of an exported document; returns how many versions were added.

        Nothing is saved unless every block is valid (the same checks as
        :meth:`SqliteBlockStore.import_json`).

        Example:
            >>> # added = await store.import_json(text)
        """
        if isinstance(text, str | bytes | bytearray) and len(text) > _THREAD_ABOVE:
            doc = await asyncio.to_thread(_decode, text)
        else:
            doc = _decode(text)
        if not isinstance(doc, dict) or doc.get("format") != "flowcore-blocks":
            raise BlockDefinitionError(
                ['document: expected {"format": "flowcore-blocks", "blocks": [...]}']
            )
        blocks = [_block(i, data) for i, data in enumerate(_as_list(doc.get("blocks")))]
        added = 0
        async with self._conn("import", tx=True) as conn:
            # Version numbers are kept as exported, so pins in pipelines still resolve.
            for block in sorted(blocks, key=lambda b: (b.id, b.version)):
                await _lock_block(conn, block.id)
                cur = await conn.execute(
                    "SELECT definition FROM blocks WHERE id = %s AND version = %s",
                    (block.id, block.version),
                )
                row = await cur.fetchone()
                if row is None:
                    await _insert(conn, block, block.version)
                    added += 1
                elif not _same(BlockDefinition.model_validate_json(row[0]), block):
                    raise BlockDefinitionError(
                        [
                            f"{block.id}@{block.version}: this store already has a different "
                            "block under that id and version; give the changed block the next "
                            "version number, or save() it, which numbers it"
                        ],
                        block=block.id,
                    )
        return added


async def _lock_block(conn: AsyncConnection[Any], block_id: str) -> None:
    await conn.execute(
        "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"flowcore:block:{block_id}",)
    )


async def _latest(conn: AsyncConnection[Any], block_id: str) -> BlockDefinition | None:
    cur = await conn.execute(
        "SELECT definition FROM blocks WHERE id = %s ORDER BY version DESC LIMIT 1", (block_id,)
    )
    row = await cur.fetchone()
    return None if row is None else BlockDefinition.model_validate_json(row[0])


async def _insert(
    conn: AsyncConnection[Any], block: BlockDefinition, version: int
) -> BlockDefinition:
    stored = block.model_copy(update={"version": version})
    await conn.execute(
        "INSERT INTO blocks (id, version, category, definition, saved_at) "
        "VALUES (%s, %s, %s, %s, %s)",
        (stored.id, version, stored.category, stored.model_dump_json(), time.time()),
    )
    cur = await conn.execute("SELECT MAX(version) FROM blocks WHERE id = %s", (stored.id,))
    row = await cur.fetchone()
    if row is not None and row[0] is not None and row[0] > version:
        return stored  # an older version (from an import): search keeps the latest text
    await conn.execute("DELETE FROM block_tags WHERE id = %s", (stored.id,))
    if stored.tags:
        async with conn.cursor() as c:
            await c.executemany(
                "INSERT INTO block_tags (id, tag) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                [(stored.id, tag) for tag in stored.tags],
            )
    fields = {
        "id": stored.id,
        "name": stored.name,
        "description": stored.description,
        "use_when": stored.use_when,
        "tags": " ".join(stored.tags),
    }
    await conn.execute(
        f"INSERT INTO blocks_search (id, document) VALUES (%(id)s, {_DOCUMENT}) "
        "ON CONFLICT (id) DO UPDATE SET document = excluded.document",
        fields,
    )
    return stored
