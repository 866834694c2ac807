"""Where blocks live: the ``BlockStore`` port and its SQLite implementation.

Blocks are versioned: saving a changed definition adds version n+1 and the
old versions stay readable, so a pipeline pinned to ``summarize@2`` keeps
working after someone improves ``summarize``. Search is SQLite FTS5 over the
name, description, ``use_when`` and tags of each block's latest version,
ranked by BM25.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import aiosqlite

from flowcore._async_context import AsyncOpenClose
from flowcore._sqlite import MIN_BUSY_TIMEOUT, SqliteFile, close_quietly
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
from flowcore.errors import FlowcoreError

__all__ = ["BlockNotFoundError", "BlockStore", "BlockStoreError", "SqliteBlockStore"]

_T = TypeVar("_T")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS flowcore_blocks_meta (
        key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS blocks (
        id TEXT NOT NULL,
        version INTEGER NOT NULL,
        category TEXT NOT NULL,
        definition TEXT NOT NULL,
        saved_at REAL NOT NULL,
        PRIMARY KEY (id, version))""",
    """CREATE TABLE IF NOT EXISTS block_tags (
        id TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (id, tag))""",
    """CREATE VIRTUAL TABLE IF NOT EXISTS blocks_fts USING fts5(
        id UNINDEXED, name, description, use_when, tags, tokenize = 'porter unicode61')""",
)


class BlockStoreError(FlowcoreError):
    """The block store's file cannot be opened or used.

    Example:
        >>> BlockStoreError("blocks.db is not a database").code
        'block-store'
    """

    code = "block-store"


class BlockNotFoundError(FlowcoreError, LookupError):
    """No block (or no such version of it) is stored under that id.

    Example:
        >>> BlockNotFoundError("no block 'x'", block="x").block
        'x'
    """

    code = "block-not-found"

    def __init__(self, message: str, *, block: str, version: int | None = None) -> None:
        super().__init__(message)
        self.block = block
        self.version = version


@runtime_checkable
class BlockStore(Protocol):
    """Stores block definitions by id and version, and finds them.

    Example:
        >>> # block = await store.get("summarize")          # latest
        >>> # pinned = await store.get("summarize", version=1)
    """

    async def save(self, block: BlockDefinition) -> BlockDefinition:
        """Store a block; a changed definition becomes the next version. Returns what was stored."""
        ...

    async def get(self, block_id: str, version: int | None = None) -> BlockDefinition:
        """The latest (or a pinned) version; raises :class:`BlockNotFoundError`."""
        ...

    async def list_blocks(
        self, *, category: str | None = None, tags: Sequence[str] = ()
    ) -> list[BlockDefinition]:
        """Latest versions, optionally of one category and carrying all given tags."""
        ...

    async def search(self, query: str, *, limit: int = 10) -> list[BlockDefinition]:
        """Latest versions ranked by how well they match ``query``."""
        ...

    async def delete(self, block_id: str) -> None:
        """Remove every version of a block; raises :class:`BlockNotFoundError`."""
        ...


class SqliteBlockStore(AsyncOpenClose):
    """A :class:`BlockStore` in one SQLite file, seeded with the builtin blocks.

    The runs of a process share one connection, and other processes may write
    the file: each read is one call (its statement stepped to the end, so no
    read snapshot is left for a write to upgrade, which SQLite would refuse at
    once with "database is locked" while another process writes), and writes
    are ``BEGIN IMMEDIATE`` transactions, one at a time (:meth:`transaction`).

    Example:
        >>> # async with SqliteBlockStore("blocks.db") as store:
        >>> #     hits = await store.search("summarize a text")
    """

    def __init__(self, path: str | os.PathLike[str], *, seed_builtins: bool = True) -> None:
        self.path = os.fspath(path)
        self.seed_builtins = seed_builtins
        self._conn: aiosqlite.Connection | None = None
        self._file = SqliteFile(
            Path(self.path), MIN_BUSY_TIMEOUT, BlockStoreError, "SqliteBlockStore", "block store "
        )
        # One transaction at a time on the shared connection: another run's
        # statements must not land inside it.
        self._write_lock = asyncio.Lock()

    async def _enter(self) -> None:
        await self.open()

    async def open(self) -> None:
        """Open the file, create the tables, and seed builtins into a new store."""
        if self._conn is not None:
            return
        try:
            conn = await aiosqlite.connect(
                self.path, timeout=MIN_BUSY_TIMEOUT, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise self._open_failed(exc) from exc
        try:
            await conn.execute_fetchall(f"PRAGMA busy_timeout={int(MIN_BUSY_TIMEOUT * 1000)}")
            if self.path != ":memory:":
                # Retried while another process opens the file (no busy handler for it).
                await self._file.enable_wal(conn)

            async def create(conn: aiosqlite.Connection) -> None:
                for sql in _SCHEMA:
                    await conn.execute_fetchall(sql)
                seeded = await conn.execute_fetchall(
                    "SELECT value FROM flowcore_blocks_meta WHERE key = 'seeded'"
                )
                if not list(seeded) and self.seed_builtins:
                    for block in builtin_blocks():
                        await self._insert(conn, block, block.version)
                await conn.execute_fetchall(
                    "INSERT OR REPLACE INTO flowcore_blocks_meta (key, value) "
                    "VALUES ('seeded', '1')"
                )

            await self._file.transaction(conn, create, failed=self._open_failed)
        except BaseException as exc:
            await close_quietly(conn)
            if isinstance(exc, sqlite3.Error) or (
                isinstance(exc, BlockStoreError) and "cannot open" not in str(exc)
            ):
                raise self._open_failed(exc) from exc
            raise
        self._conn = conn

    def _open_failed(self, exc: Exception) -> BlockStoreError:
        return BlockStoreError(
            f"cannot open block store {self.path}: {exc}; point it at a new file or at "
            "one it created"
        )

    async def transaction(self, run: Callable[[aiosqlite.Connection], Awaitable[_T]]) -> _T:
        """Run ``run`` in one ``BEGIN IMMEDIATE`` transaction, one at a time per store.

        For tables kept beside the blocks (``flowcore.search``): their writes
        go through here, never as loose statements on :meth:`connection`.
        Rolled back whole on any failure; an ``sqlite3.Error`` becomes
        :class:`BlockStoreError`.

        Example:
            >>> # await store.transaction(lambda conn: conn.execute_fetchall("DELETE ..."))
        """
        conn = self._db()
        async with self._write_lock:
            return await self._file.transaction(conn, run, failed=self._write_failed)

    def _write_failed(self, exc: sqlite3.Error) -> BlockStoreError:
        return BlockStoreError(f"write to block store {self.path} failed: {exc}")

    async def aclose(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    def _db(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise FlowcoreError(
                "SqliteBlockStore is not open; use 'async with SqliteBlockStore(path)' or "
                "'await store.open()'"
            )
        return self._conn

    # -------------------------------------------------------------- writing
    async def save(self, block: BlockDefinition) -> BlockDefinition:
        """Store a block. Unchanged: nothing happens. Changed: version n+1.

        Example:
            >>> # v2 = await store.save(block.model_copy(update={"description": "better"}))
        """

        async def save(conn: aiosqlite.Connection) -> BlockDefinition:
            latest = await self._latest(conn, block.id)
            if latest is not None and _same(latest, block):
                return latest
            version = 1 if latest is None else latest.version + 1
            return await self._insert(conn, block, version)

        return await self.transaction(save)

    async def _insert(
        self, conn: aiosqlite.Connection, block: BlockDefinition, version: int
    ) -> BlockDefinition:
        stored = block.model_copy(update={"version": version})
        await conn.execute_fetchall(
            "INSERT INTO blocks (id, version, category, definition, saved_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (stored.id, version, stored.category, stored.model_dump_json(), time.time()),
        )
        rows = await conn.execute_fetchall(
            "SELECT MAX(version) FROM blocks WHERE id = ?", (stored.id,)
        )
        row = next(iter(rows), None)
        if row is not None and row[0] is not None and row[0] > version:
            return stored  # an older version (from an import): search keeps the latest text
        await conn.execute_fetchall("DELETE FROM block_tags WHERE id = ?", (stored.id,))
        await conn.executemany(
            "INSERT OR IGNORE INTO block_tags (id, tag) VALUES (?, ?)",
            [(stored.id, tag) for tag in stored.tags],
        )
        await conn.execute_fetchall("DELETE FROM blocks_fts WHERE id = ?", (stored.id,))
        await conn.execute_fetchall(
            "INSERT INTO blocks_fts (id, name, description, use_when, tags) VALUES (?, ?, ?, ?, ?)",
            (stored.id, stored.name, stored.description, stored.use_when, " ".join(stored.tags)),
        )
        return stored

    async def delete(self, block_id: str) -> None:
        """Remove every version of a block.

        Example:
            >>> # await store.delete("old_block")
        """

        async def delete(conn: aiosqlite.Connection) -> None:
            gone = await conn.execute_fetchall(
                "DELETE FROM blocks WHERE id = ? RETURNING version", (block_id,)
            )
            if not list(gone):
                raise BlockNotFoundError(f"no block {block_id!r} to delete", block=block_id)
            await conn.execute_fetchall("DELETE FROM block_tags WHERE id = ?", (block_id,))
            await conn.execute_fetchall("DELETE FROM blocks_fts WHERE id = ?", (block_id,))

        await self.transaction(delete)

    # -------------------------------------------------------------- reading
    async def _latest(self, conn: aiosqlite.Connection, block_id: str) -> BlockDefinition | None:
        rows = await conn.execute_fetchall(
            "SELECT definition FROM blocks WHERE id = ? ORDER BY version DESC LIMIT 1",
            (block_id,),
        )
        return definition_of(next(iter(rows), None))

    async def get(self, block_id: str, version: int | None = None) -> BlockDefinition:
        """The latest version of a block, or the pinned ``version``.

        Example:
            >>> # await store.get("summarize", version=1)
        """
        conn = self._db()
        if version is None:
            found = await self._latest(conn, block_id)
        else:
            rows = await conn.execute_fetchall(
                "SELECT definition FROM blocks WHERE id = ? AND version = ?", (block_id, version)
            )
            found = definition_of(next(iter(rows), None))
        if found is None:
            raise _not_found(block_id, version, self.path)
        return found

    async def versions(self, block_id: str) -> list[int]:
        """Every stored version number of a block, oldest first.

        Example:
            >>> # await store.versions("summarize")   # [1, 2]
        """
        rows = await self._db().execute_fetchall(
            "SELECT version FROM blocks WHERE id = ? ORDER BY version", (block_id,)
        )
        return [int(r[0]) for r in rows]

    async def list_blocks(
        self, *, category: str | None = None, tags: Sequence[str] = ()
    ) -> list[BlockDefinition]:
        """Latest versions, filtered by category and tags (all must match), by id.

        Example:
            >>> # await store.list_blocks(category="memory")
        """
        sql, params = filter_sql(category, tags, "?")
        sql += " ORDER BY b.id"
        rows = await self._db().execute_fetchall(sql, params)
        return [BlockDefinition.model_validate_json(r[0]) for r in rows]

    async def search(self, query: str, *, limit: int = 10) -> list[BlockDefinition]:
        """Blocks whose name, description, use_when or tags match ``query``, best first.

        Any word may match (an OR query); more and rarer matches rank higher.

        Example:
            >>> # [b.id for b in await store.search("shorten long text")]
        """
        return [await self.get(i) for i in await self.search_ids(query, limit=limit)]

    async def search_ids(
        self, query: str, *, limit: int = 10, among: Sequence[str] | None = None
    ) -> list[str]:
        """The ids :meth:`search` would return, best first, without loading the blocks.

        ``among`` restricts the search to those block ids.

        Example:
            >>> # await store.search_ids("shorten long text", limit=3)
        """
        words = query_words(query)
        if not words or (among is not None and not among):
            return []
        match = " OR ".join(f'"{w}"' for w in words)
        sql = "SELECT id FROM blocks_fts WHERE blocks_fts MATCH ?"
        params: list[Any] = [match]
        if among is not None:
            sql += f" AND id IN ({','.join('?' * len(among))})"
            params.extend(among)
        rows = await self._db().execute_fetchall(
            sql + " ORDER BY bm25(blocks_fts) LIMIT ?", (*params, limit)
        )
        return [r[0] for r in rows]

    def connection(self) -> aiosqlite.Connection:
        """The open connection, for indexes kept in the same file (``flowcore.search``).

        Tables beside the blocks share the file, its WAL and its locks, so a
        block and its vectors are never in two places. Raises if not open.

        Example:
            >>> # conn = store.connection()
        """
        return self._db()

    # ----------------------------------------------------------- JSON files
    async def export_json(self) -> str:
        """Every version of every block as a JSON document.

        Example:
            >>> # text = await store.export_json()
        """
        rows = await self._db().execute_fetchall(
            "SELECT definition FROM blocks ORDER BY id, version"
        )
        return export_document(r[0] for r in rows)

    async def import_json(self, text: str) -> int:
        """Save each block of an exported document; returns how many versions were added.

        Nothing is saved unless every block is valid and plain JSON data (no
        lone surrogates, NaN or ints too long to write, nested at most
        ``MAX_NESTING`` deep); each fault raises :class:`BlockDefinitionError`
        naming the block and where in it the fault sits.

        Example:
            >>> # added = await store.import_json(text)
        """
        blocks = await parse_document(text)

        async def import_all(conn: aiosqlite.Connection) -> int:
            added = 0
            # Version numbers are kept as exported, so pins in pipelines still resolve.
            for block in sorted(blocks, key=lambda b: (b.id, b.version)):
                rows = await conn.execute_fetchall(
                    "SELECT definition FROM blocks WHERE id = ? AND version = ?",
                    (block.id, block.version),
                )
                row = next(iter(rows), None)
                if row is None:
                    await self._insert(conn, block, block.version)
                    added += 1
                elif not _same(BlockDefinition.model_validate_json(row[0]), block):
                    raise conflict_error(block)
            return added

        return await self.transaction(import_all)


def _not_found(block_id: str, version: int | None, where: str) -> BlockNotFoundError:
    what = f"block {block_id!r}" + (f" version {version}" if version else "")
    return BlockNotFoundError(
        f"no {what} in {where}; list the stored blocks with list_blocks() or search()",
        block=block_id,
        version=version,
    )
