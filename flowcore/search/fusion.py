"""Reciprocal rank fusion: one ranking out of several, by rank alone.

BM25 scores and cosine similarities live on different scales, so they are
not added; each list contributes ``1 / (k + rank)`` for each item it ranks
(rank 1 is best). ``k = 60`` is the constant of Cormack, Clarke and
Buettcher's paper (SIGIR 2009): it keeps one list's top hit from drowning
an item that both lists rank well.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

__all__ = ["RRF_K", "reciprocal_rank_fusion"]

K = TypeVar("K", bound=Hashable)

RRF_K = 60
"""The rank constant of reciprocal rank fusion."""


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[K]], *, k: int = RRF_K
) -> list[tuple[K, float]]:
    """Fuse best-first rankings into ``(item, score)``, best first.

    Ties (same fused score) go to the item with the best single rank, then to
    the earlier list, so the result is deterministic.

    Example:
        >>> reciprocal_rank_fusion([["a", "b"], ["b", "c"]])[0][0]
        'b'
    """
    if k < 1:
        raise ValueError(f"reciprocal_rank_fusion(k={k}): k must be at least 1 (60 is usual)")
    scores: dict[K, float] = {}
    best: dict[K, tuple[int, int]] = {}
    for list_index, ranking in enumerate(rankings):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            seen = best.get(item)
            if seen is None or (rank, list_index) < seen:
                best[item] = (rank, list_index)
    order = sorted(scores, key=lambda item: (-scores[item], best[item]))
    return [(item, scores[item]) for item in order]
