"""Semantic memory search: embeddings fused with word matching, falling back to words.

A store given an :class:`~flowcore.search.Embedder` ranks memories two ways,
by the words they share with the query (:func:`~flowcore.memory.store.rank_items`)
and by the cosine similarity of their embeddings, and fuses the two rankings
with reciprocal rank fusion. So "where do I like to eat" finds
"User prefers Thai food for lunch", which shares no word with it. A memory
is embedded from its key and value; its vector is kept (in a dict, or in the
SQLite file beside the memories) and recomputed only when that text or the
embedder changes. If the embedder fails, the search ranks by words alone
and logs that once per store.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from flowcore.memory.store import MemoryItem, Namespace, rank_items
from flowcore.search.embedder import Embedder, EmbeddingError, check_vectors
from flowcore.search.fusion import RRF_K, reciprocal_rank_fusion
from flowcore.search.stopwords import content_words
from flowcore.search.vectors import encode_vector, rank_by_cosine, text_hash

__all__ = ["DictVectorCache", "MemoryVectorCache", "SemanticRanker", "memory_text"]

MemoryKey = tuple[Namespace, str]
logger = logging.getLogger("flowcore.memory")


def memory_text(item: MemoryItem) -> str:
    """The text a memory is embedded from: its key, then its value.

    Example:
        >>> memory_text(MemoryItem(("u",), "lunch", "User prefers Thai food", 0.0))
        'lunch: User prefers Thai food'
    """
    value = item.value if isinstance(item.value, str) else json.dumps(item.value, default=str)
    return f"{item.key.replace('_', ' ')}: {value}"


@runtime_checkable
class MemoryVectorCache(Protocol):
    """Where a store keeps memory vectors: ``(text hash, float32 bytes)`` per key.

    :class:`~flowcore.memory.SqliteStore` is one (a table in its file);
    :class:`DictVectorCache` keeps them in a dict.

    Example:
        >>> isinstance(DictVectorCache(), MemoryVectorCache)
        True
    """

    async def load_vectors(
        self, keys: Sequence[MemoryKey], embedder: str, dimensions: int
    ) -> dict[MemoryKey, tuple[str, bytes]]:
        """The stored ``(hash, vector)`` of each key that has one."""
        ...

    async def save_vectors(
        self, rows: Sequence[tuple[MemoryKey, str, bytes]], embedder: str, dimensions: int
    ) -> None:
        """Store ``(key, hash, vector)`` rows, replacing older ones."""
        ...


class SemanticRanker:
    """Ranks memory items by words and meaning, for one store and one embedder.

    ``mode`` after a search says what ran: ``"hybrid"`` or ``"text"``. The
    vector ranking ranks every memory under the prefix, so a hybrid search
    returns up to ``limit`` memories even when none is close: the scores and
    the order say which are.

    Example:
        >>> # ranker = SemanticRanker(WordLlamaEmbedder(), cache)
        >>> # items = await ranker.rank(items, "where do I like to eat", 5)
    """

    def __init__(self, embedder: Embedder, cache: MemoryVectorCache, *, rrf_k: int = RRF_K):
        self.embedder = embedder
        self.cache = cache
        self.rrf_k = rrf_k
        self.mode: Literal["hybrid", "text"] | None = None
        self._fallback_logged = False

    async def rank(
        self, items: Sequence[MemoryItem], query: str | None, limit: int
    ) -> list[MemoryItem]:
        """``items`` ranked for ``query``, best first; ``score`` is the fused RRF score.

        Without a query: newest first, as without an embedder.

        Example:
            >>> # best = (await ranker.rank(items, "favourite cuisine", 1))[0]
        """
        if not query or not items or limit < 1:
            self.mode = "text"
            return rank_items(items, query, limit)
        try:
            nearest = await self._nearest(items, query)
        except EmbeddingError as exc:
            if not self._fallback_logged:
                self._fallback_logged = True
                logger.warning("memory search falls back to word matching: %s", exc)
            self.mode = "text"
            return rank_items(items, query, limit)
        self.mode = "hybrid"
        by_key = {(i.namespace, i.key): i for i in items}
        # Function words ("to", "do") would match nearly everything: left out here.
        trimmed = " ".join(content_words(query))
        words = [(i.namespace, i.key) for i in rank_items(items, trimmed, len(items))]
        fused = reciprocal_rank_fusion([words, nearest], k=self.rrf_k)
        out: list[MemoryItem] = []
        for key, score in fused[:limit]:
            item = by_key[key]
            out.append(MemoryItem(item.namespace, item.key, item.value, item.updated_at, score))
        return out

    async def _nearest(self, items: Sequence[MemoryItem], query: str) -> list[MemoryKey]:
        name, dims = self.embedder.name, self.embedder.dimensions
        keys = [(i.namespace, i.key) for i in items]
        texts = [memory_text(i) for i in items]
        hashes = [text_hash(t) for t in texts]
        stored = await self.cache.load_vectors(keys, name, dims)
        blobs: dict[MemoryKey, bytes] = {}
        todo: list[int] = []
        for n, key in enumerate(keys):
            have = stored.get(key)
            if have is not None and have[0] == hashes[n]:
                blobs[key] = have[1]
            else:
                todo.append(n)
        batch = [texts[n] for n in todo] + [query]
        try:
            vectors = check_vectors(self.embedder, batch, await self.embedder.embed(batch))
        except EmbeddingError:
            raise
        except Exception as exc:  # a third-party embedder's own failure: still a fallback
            raise EmbeddingError(
                f"embedder {name!r} failed: {type(exc).__name__}: {exc}", embedder=name
            ) from exc
        query_vector = vectors.pop()
        rows: list[tuple[MemoryKey, str, bytes]] = []
        for n, vector in zip(todo, vectors, strict=True):
            blobs[keys[n]] = encode_vector(vector)
            rows.append((keys[n], hashes[n], blobs[keys[n]]))
        if rows:
            await self.cache.save_vectors(rows, name, dims)
        # Keys as strings for the ranking, mapped back after.
        index = {_flat(k): k for k in keys}
        ranked = await asyncio.to_thread(
            rank_by_cosine, query_vector, list(index), [blobs[k] for k in index.values()], len(keys)
        )
        return [index[flat] for flat, _ in ranked]


def _flat(key: MemoryKey) -> str:
    return json.dumps([list(key[0]), key[1]])


class DictVectorCache:
    """A :class:`MemoryVectorCache` in a dict, for :class:`~flowcore.memory.InMemoryStore`.

    Example:
        >>> import asyncio
        >>> cache = DictVectorCache()
        >>> key = (("users", "ada"), "food")
        >>> asyncio.run(cache.save_vectors([(key, "h1", b"1234")], "e", 1))
        >>> asyncio.run(cache.load_vectors([key], "e", 1))[key]
        ('h1', b'1234')
    """

    def __init__(self) -> None:
        self._rows: dict[tuple[str, int, MemoryKey], tuple[str, bytes]] = {}

    async def load_vectors(
        self, keys: Sequence[MemoryKey], embedder: str, dimensions: int
    ) -> dict[MemoryKey, tuple[str, bytes]]:
        """The stored rows of ``keys``."""
        found: dict[MemoryKey, tuple[str, bytes]] = {}
        for key in keys:
            row = self._rows.get((embedder, dimensions, key))
            if row is not None:
                found[key] = row
        return found

    async def save_vectors(
        self, rows: Sequence[tuple[MemoryKey, str, bytes]], embedder: str, dimensions: int
    ) -> None:
        """Store ``rows``."""
        for key, digest, blob in rows:
            self._rows[(embedder, dimensions, key)] = (digest, blob)

    def forget(self, key: MemoryKey) -> None:
        """Drop every vector of ``key`` (the memory was deleted)."""
        for row_key in [k for k in self._rows if k[2] == key]:
            del self._rows[row_key]
