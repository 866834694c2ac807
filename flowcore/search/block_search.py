"""``BlockSearch``: hybrid block search, full-text and semantic, with match validation.

A query runs two searches over the store's latest block versions: SQLite
FTS5 ranked by BM25 (words that appear in the block) and cosine similarity
of embeddings (meaning, when the words differ). The two rankings are fused
with reciprocal rank fusion, then each candidate is validated: it must run
the way the caller asks (``execution_type``) and fit the caller's IO
(:func:`~flowcore.search.io_compatible`). When the embedder is absent or
fails, search carries on with full text alone, logs that once, and says so
in each hit's ``mode``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.postgres_store import PostgresBlockStore
from flowcore.blocks.store import BlockNotFoundError, SqliteBlockStore
from flowcore.errors import InvalidInputError
from flowcore.search.block_vectors import BlockVectors
from flowcore.search.embedder import Embedder, EmbeddingError
from flowcore.search.fusion import RRF_K, reciprocal_rank_fusion
from flowcore.search.matching import execution_type_matches, io_compatible
from flowcore.search.stopwords import content_words

__all__ = ["BlockSearch", "SearchHit", "SearchMode"]

SearchMode = Literal["hybrid", "text", "vector"]
"""Which searches ran: both fused, full text alone, or vectors alone."""

_MODES = ("hybrid", "text", "vector")
logger = logging.getLogger("flowcore.search")


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One found block. Ranks are 1-based places in each search (None: not found by it).

    ``score`` is the fused RRF score (or ``1/(k+rank)`` of the one search
    that ran); ``mode`` says which searches ran for this query. In hybrid
    mode a BM25 hit that covers too little of the query keeps its
    ``fts_rank`` but adds nothing to ``score`` (see ``min_coverage``).
    ``similarity`` is the cosine of the block's and the query's vectors.

    Example:
        >>> # hit = (await search.search("mail a customer"))[0]
        >>> # hit.block.id, hit.mode, hit.fts_rank, hit.vector_rank
    """

    block: BlockDefinition
    score: float
    fts_rank: int | None
    vector_rank: int | None
    mode: SearchMode
    similarity: float | None = None


class BlockSearch:
    """Finds blocks in a block registry by meaning and by words.

    On a :class:`~flowcore.blocks.SqliteBlockStore` both searches run; on a
    :class:`~flowcore.blocks.postgres_store.PostgresBlockStore` full text
    only (Postgres' own text search): its vectors are kept in SQLite, so an
    embedder is refused there.

    ``embedder`` None searches full text only. ``pool`` is how many
    candidates each search contributes before fusion and validation. In
    hybrid mode a full-text hit joins the fusion only if it matches at least
    ``min_coverage`` of the query's content words (see ``_covering``); the
    text-only modes keep every BM25 hit.

    Example:
        >>> # search = BlockSearch(store, WordLlamaEmbedder())
        >>> # hits = await search.search("tell a customer by mail", execution_type="python",
        >>> #                            inputs={"properties": {"to": {"type": "string"}}})
    """

    def __init__(
        self,
        store: SqliteBlockStore | PostgresBlockStore,
        embedder: Embedder | None = None,
        *,
        rrf_k: int = RRF_K,
        pool: int = 50,
        min_coverage: float = 0.5,
    ) -> None:
        if pool < 1:
            raise InvalidInputError(f"BlockSearch(pool={pool}): pool must be at least 1")
        if not 0.0 <= min_coverage <= 1.0:
            raise InvalidInputError(
                f"BlockSearch(min_coverage={min_coverage}): a fraction from 0 to 1 (0 fuses "
                "every full-text hit)"
            )
        self.min_coverage = min_coverage
        self.store = store
        self.embedder = embedder
        self.rrf_k = rrf_k
        self.pool = pool
        self.vectors: BlockVectors | None = None
        if embedder is not None:
            if not isinstance(store, SqliteBlockStore):
                raise InvalidInputError(
                    "BlockSearch keeps block vectors in SQLite: on a Postgres registry pass no "
                    "embedder (full-text search), or search a SqliteBlockStore"
                )
            self.vectors = BlockVectors(store, embedder)
        self._fallback_logged = False

    async def index(self) -> int:
        """Embed the blocks that have no vector yet (search does this too); returns how many.

        Raises:
            EmbeddingError: The embedder failed, or there is none.

        Example:
            >>> # await search.index()
        """
        if self.vectors is None:
            raise EmbeddingError(
                "BlockSearch has no embedder; pass one, e.g. BlockSearch(store, "
                "WordLlamaEmbedder())",
                embedder="-",
            )
        return await self.vectors.sync()

    async def search(
        self,
        query: str,
        *,
        execution_type: str | None = None,
        inputs: Mapping[str, Any] | None = None,
        outputs: Mapping[str, Any] | None = None,
        limit: int = 5,
        mode: SearchMode = "hybrid",
    ) -> list[SearchHit]:
        """The ``limit`` best blocks for ``query`` that pass match validation.

        ``inputs`` is a JSON object schema of the fields the caller provides,
        ``outputs`` one of the fields it needs; a block must require no input
        beyond ``inputs`` and produce every field of ``outputs``.
        ``mode="text"`` or ``"vector"`` runs one search alone (a vector search
        without a working embedder raises :class:`EmbeddingError`); the
        default ``"hybrid"`` falls back to text when embeddings fail.

        Example:
            >>> # hits = await search.search("shorten an article", outputs={
            >>> #     "properties": {"summary": {"type": "string"}}})
        """
        if mode not in _MODES:
            raise InvalidInputError(f"search mode {mode!r}: choose one of {', '.join(_MODES)}")
        if limit < 1:
            return []
        pool = max(self.pool, limit)
        fts: list[str] = []
        nearest: list[tuple[str, float]] = []
        ran: SearchMode = mode
        if mode != "text":
            try:
                nearest = await self._nearest(query, pool)
            except EmbeddingError as exc:
                if mode == "vector":
                    raise
                self._log_fallback(exc)
                ran = "text"
        if ran != "vector":
            # Function words ("to", "the") match nearly every block: left out of BM25.
            fts = await self.store.search_ids(" ".join(content_words(query)), limit=pool)
        vector_ids = [block_id for block_id, _ in nearest]
        similarity = dict(nearest)
        fts_rank = {block_id: i for i, block_id in enumerate(fts, start=1)}
        vector_rank = {block_id: i for i, block_id in enumerate(vector_ids, start=1)}
        fused_fts = await self._covering(query, fts) if ran == "hybrid" else fts
        rankings = {"hybrid": [fused_fts, vector_ids], "text": [fts], "vector": [vector_ids]}[ran]
        hits: list[SearchHit] = []
        wanted = {"input_schema": inputs, "output_schema": outputs}
        for block_id, score in reciprocal_rank_fusion(rankings, k=self.rrf_k):
            try:
                block = await self.store.get(block_id)
            except BlockNotFoundError:
                continue  # deleted since it was ranked
            if not execution_type_matches(execution_type, block.kind):
                continue
            block_io = {"input_schema": block.input_schema, "output_schema": block.output_schema}
            if not io_compatible(wanted, block_io):
                continue
            hits.append(
                SearchHit(
                    block=block,
                    score=score,
                    fts_rank=fts_rank.get(block_id),
                    vector_rank=vector_rank.get(block_id),
                    mode=ran,
                    similarity=similarity.get(block_id),
                )
            )
            if len(hits) == limit:
                break
        return hits

    async def _covering(self, query: str, fts: list[str]) -> list[str]:
        """The BM25 hits that match at least ``min_coverage`` of the query's words.

        An OR query matches a block that shares one incidental word with a
        paraphrase ("order" in "orders shipped last month" and in "Order a
        list of records"); fused as an equal, such a hit pushes the block the
        vectors found down. Full-text evidence enters the fusion only when it
        covers enough of the query, which keyword queries do.
        """
        words = list(dict.fromkeys(content_words(query)))
        if len(words) <= 1 or not fts:
            return fts
        counts: dict[str, int] = dict.fromkeys(fts, 0)
        for word in words:
            for block_id in await self.store.search_ids(word, limit=len(fts), among=fts):
                counts[block_id] += 1
        need = self.min_coverage * len(words)
        return [block_id for block_id in fts if counts[block_id] >= need]

    async def _nearest(self, query: str, pool: int) -> list[tuple[str, float]]:
        if self.vectors is None:
            raise EmbeddingError("no embedder configured", embedder="-")
        try:
            return await self.vectors.nearest(query, limit=pool)
        except EmbeddingError:
            raise
        except Exception as exc:  # a third-party embedder's own failure: still a fallback
            raise EmbeddingError(
                f"embedder {self.vectors.embedder.name!r} failed: {type(exc).__name__}: {exc}",
                embedder=self.vectors.embedder.name,
            ) from exc

    def _log_fallback(self, exc: EmbeddingError) -> None:
        # Once per BlockSearch: a broken embedder must not flood the log on every query.
        if not self._fallback_logged:
            self._fallback_logged = True
            logger.warning("block search falls back to full text only: %s", exc)
