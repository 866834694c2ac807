"""``BlockVectors``: block embeddings kept in SQLite, in the block store's own file.

One row per (block id, version, embedder, dimensions) holds the vector as
float32 bytes and a hash of the text it was made from. Only a block's
description, ``use_when`` and tags are embedded (not its prompt or code), as
seed 003 does. A block is embedded again only when that text or the
embedder changes: a new version whose text is unchanged reuses the stored
vector, and switching embedders keeps the old vectors for switching back.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiosqlite

from flowcore.blocks.store import SqliteBlockStore
from flowcore.search.embedder import Embedder, EmbeddingError, check_vectors
from flowcore.search.vectors import encode_vector, rank_by_cosine, text_hash

__all__ = ["BlockVectors", "embedded_text"]

_SCHEMA = """CREATE TABLE IF NOT EXISTS block_vectors (
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    embedder TEXT NOT NULL,
    dimensions INTEGER NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (id, version, embedder, dimensions))"""
_HASH_INDEX = """CREATE INDEX IF NOT EXISTS block_vectors_by_hash
    ON block_vectors (embedder, dimensions, text_hash)"""
# Latest versions that have no vector from this embedder yet.
_MISSING = """SELECT b.id, b.version, b.definition FROM blocks b
    WHERE b.version = (SELECT MAX(version) FROM blocks WHERE id = b.id)
    AND NOT EXISTS (SELECT 1 FROM block_vectors v WHERE v.id = b.id AND v.version = b.version
                    AND v.embedder = ? AND v.dimensions = ?)"""
_LATEST_VECTORS = """SELECT v.id, v.vector FROM block_vectors v
    WHERE v.embedder = ? AND v.dimensions = ?
    AND v.version = (SELECT MAX(version) FROM blocks WHERE id = v.id)
    ORDER BY v.id"""
_BATCH = 64  # texts per embed call
_ROWS_PER_INSERT = 500  # 6 parameters a row, well under SQLite's 32766


def embedded_text(definition: dict[str, Any]) -> str:
    """The text a block is embedded from: description, ``use_when`` and tags.

    Example:
        >>> embedded_text({"description": "Send an email.", "use_when": "Notify someone.",
        ...                "tags": ["email"]})
        'Send an email.\\nNotify someone.\\nemail'
    """
    parts = [
        str(definition.get("description") or ""),
        str(definition.get("use_when") or ""),
        " ".join(str(t) for t in definition.get("tags") or ()),
    ]
    return "\n".join(parts)


class BlockVectors:
    """Embeds a store's latest block versions and ranks them against a query.

    Example:
        >>> # vectors = BlockVectors(store, WordLlamaEmbedder())
        >>> # await vectors.sync()          # embeds what is new or changed
        >>> # await vectors.nearest("write to a customer", limit=5)
    """

    def __init__(self, store: SqliteBlockStore, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self._lock = asyncio.Lock()  # one sync at a time per index
        self._ready = False

    async def _conn(self) -> aiosqlite.Connection:
        conn = self.store.connection()
        if not self._ready:

            async def create(conn: aiosqlite.Connection) -> None:
                await conn.execute_fetchall(_SCHEMA)
                await conn.execute_fetchall(_HASH_INDEX)

            await self.store.transaction(create)
            self._ready = True
        return conn

    async def sync(self) -> int:
        """Embed every latest block version that has no vector yet; returns how many were embedded.

        Vectors of unchanged text are copied, not recomputed (they do not count).

        Raises:
            EmbeddingError: The embedder failed; nothing half-done is stored.

        Example:
            >>> # embedded = await vectors.sync()
        """
        async with self._lock:
            conn = await self._conn()
            name, dims = self.embedder.name, self.embedder.dimensions
            # Reads are one call each and writes go through the store's transaction:
            # the connection is shared with the store's other users.
            missing = list(await conn.execute_fetchall(_MISSING, (name, dims)))
            if not missing:
                return 0
            texts = await asyncio.to_thread(_texts, [r[2] for r in missing])
            hashes = [text_hash(t) for t in texts]
            known = await self._known(conn, sorted(set(hashes)))
            fresh = {h: t for h, t in zip(hashes, texts, strict=True) if h not in known}
            todo = sorted(fresh.items())
            for start in range(0, len(todo), _BATCH):
                chunk = todo[start : start + _BATCH]
                batch = [t for _, t in chunk]
                vectors = check_vectors(self.embedder, batch, await self.embedder.embed(batch))
                for (h, _), vector in zip(chunk, vectors, strict=True):
                    known[h] = encode_vector(vector)
            rows = [
                (r[0], r[1], name, dims, h, known[h]) for r, h in zip(missing, hashes, strict=True)
            ]

            async def store_rows(conn: aiosqlite.Connection) -> None:
                for start in range(0, len(rows), _ROWS_PER_INSERT):
                    chunk_rows = rows[start : start + _ROWS_PER_INSERT]
                    # One statement per chunk, all in one transaction: one commit.
                    sql = "INSERT OR REPLACE INTO block_vectors VALUES " + ",".join(
                        ["(?, ?, ?, ?, ?, ?)"] * len(chunk_rows)
                    )
                    await conn.execute_fetchall(sql, [v for row in chunk_rows for v in row])
                # Vectors of deleted blocks go too (kept versions stay for reuse).
                await conn.execute_fetchall(
                    "DELETE FROM block_vectors WHERE id NOT IN (SELECT DISTINCT id FROM blocks)"
                )

            await self.store.transaction(store_rows)
            return len(todo)

    async def _known(self, conn: aiosqlite.Connection, hashes: list[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        name, dims = self.embedder.name, self.embedder.dimensions
        for start in range(0, len(hashes), 500):
            chunk = hashes[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for h, blob in await conn.execute_fetchall(
                "SELECT text_hash, vector FROM block_vectors WHERE embedder = ? AND "
                f"dimensions = ? AND text_hash IN ({marks})",
                (name, dims, *chunk),
            ):
                found[h] = bytes(blob)
        return found

    async def nearest(self, query: str, *, limit: int) -> list[tuple[str, float]]:
        """``(block id, cosine similarity)`` of the ``limit`` blocks nearest ``query``.

        Syncs first, so new and changed blocks are found.

        Raises:
            EmbeddingError: The embedder failed.

        Example:
            >>> # [("send_email", 0.71), ...] == await vectors.nearest("mail a client", limit=5)
        """
        await self.sync()
        [query_vector] = check_vectors(self.embedder, [query], await self.embedder.embed([query]))
        conn = await self._conn()
        rows = list(
            await conn.execute_fetchall(
                _LATEST_VECTORS, (self.embedder.name, self.embedder.dimensions)
            )
        )
        ids = [str(r[0]) for r in rows]
        blobs = [bytes(r[1]) for r in rows]
        return await asyncio.to_thread(rank_by_cosine, query_vector, ids, blobs, limit)


def _texts(definitions: list[str]) -> list[str]:
    out: list[str] = []
    for raw in definitions:
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:  # the store writes JSON; anything else is damage
            raise EmbeddingError(
                f"a stored block definition is not JSON ({exc}); re-import the blocks",
                embedder="-",
            ) from None
        out.append(embedded_text(data if isinstance(data, dict) else {}))
    return out
