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

import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from flowcore._postgres import redact_url
from flowcore._postgres_store import PostgresStoreBase
from flowcore.blocks.builtins import builtin_blocks
from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.exchange import (
    _same,
    conflict_error,
    definition_of,
    export_document,
    filter_sql,
    parse_document,
    query_words,
)
from flowcore.blocks.store import BlockNotFoundError, BlockStoreError, _not_found
from flowcore.errors import FlowcoreError

if TYPE_CHECKING:
    from psycopg import AsyncConnection

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


class PostgresBlockStore(PostgresStoreBase):
    """A :class:`~flowcore.blocks.store.BlockStore` in Postgres, seeded with the builtins.

    Example:
        >>> # async with PostgresBlockStore(os.environ["FLOWCORE_DATABASE_URL"]) as store:
        >>> #     hits = await store.search("summarize a text")
    """

    _what = "PostgresBlockStore"
    _kind = "blocks"
    _migrations = _MIGRATIONS
    _store_error = BlockStoreError
    _failure = "block store {where}: {doing} failed: {detail}"
    _migrate_doing = "open"
    _not_open_error = FlowcoreError
    _not_open = (
        "PostgresBlockStore is not open; use 'async with PostgresBlockStore(url)' or "
        "'await store.open()'"
    )

    def __init__(self, url: str, *, seed_builtins: bool = True, max_connections: int = 5) -> None:
        super().__init__(url, max_connections=max_connections)
        self.seed_builtins = seed_builtins

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

    async def open(self) -> None:
        """Connect, create the tables, and seed builtins into a new store.

        Example:
            >>> # await PostgresBlockStore(url).open()
        """
        await self._open()

    async def _after_migrate(self, conn: AsyncConnection[Any]) -> None:
        # Seeded once per database, under a lock, so racing openers seed it once.
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext('flowcore:seed'))")
            cur = await conn.execute("SELECT 1 FROM flowcore_blocks_meta WHERE key = 'seeded'")
            if await cur.fetchone() is None and self.seed_builtins:
                for block in builtin_blocks():
                    await _insert(conn, block, block.version)
            await conn.execute(
                "INSERT INTO flowcore_blocks_meta (key, value) VALUES ('seeded', '1') "
                "ON CONFLICT (key) DO NOTHING"
            )

    @contextlib.asynccontextmanager
    async def _conn(self, doing: str, *, tx: bool = False) -> AsyncIterator[AsyncConnection[Any]]:
        pool = self._require_open()
        async with self._errors(doing), pool.connection() as conn:
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
                found = definition_of(row)
        if found is None:
            raise _not_found(block_id, version, redact_url(self.url))
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
        sql, params = filter_sql(category, tags, "%s")
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
        words = query_words(query)
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
        return export_document(r[0] for r in rows)

    async def import_json(self, text: str) -> int:
        """Save each block of an exported document; returns how many versions were added.

        Nothing is saved unless every block is valid (the same checks as
        :meth:`SqliteBlockStore.import_json`).

        Example:
            >>> # added = await store.import_json(text)
        """
        blocks = await parse_document(text)
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
                    raise conflict_error(block)
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
    return definition_of(row)


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
