"""Vectors as compact bytes, and nearest-neighbour ranking by cosine similarity.

A vector is stored as little-endian float32 bytes (4 bytes a number, a
quarter of JSON's size). Ranking is brute force: with numpy installed (the
``embed`` extra brings it, WordLlama needs it) one matrix product ranks many
thousands of vectors in milliseconds; without it a pure-Python loop does the
same work more slowly. Either way callers run :func:`rank_by_cosine` in a
worker thread, never on the event loop.
"""

from __future__ import annotations

import hashlib
import math
import sys
from array import array
from collections.abc import Sequence
from typing import Any

__all__ = ["decode_vector", "encode_vector", "rank_by_cosine", "text_hash"]


def encode_vector(vector: Sequence[float]) -> bytes:
    """``vector`` as little-endian float32 bytes.

    Example:
        >>> len(encode_vector([0.0, 1.0, 2.0]))
        12
    """
    packed = array("f", vector)
    if sys.byteorder != "little":
        packed.byteswap()
    return packed.tobytes()


def decode_vector(blob: bytes) -> list[float]:
    """The floats :func:`encode_vector` wrote.

    Example:
        >>> decode_vector(encode_vector([0.5, -1.0]))
        [0.5, -1.0]
    """
    packed = array("f")
    packed.frombytes(blob)
    if sys.byteorder != "little":
        packed.byteswap()
    return packed.tolist()


def text_hash(text: str) -> str:
    """A short fingerprint of ``text``: a stored vector is reused while it matches.

    Example:
        >>> text_hash("a") == text_hash("a") != text_hash("b")
        True
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def rank_by_cosine(
    query: Sequence[float], keys: Sequence[str], blobs: Sequence[bytes], limit: int
) -> list[tuple[str, float]]:
    """``(key, similarity)`` of the ``limit`` stored vectors nearest ``query``, best first.

    Blocking CPU work: call it through ``asyncio.to_thread``. Ties keep
    ``keys`` order, so results are deterministic.

    Example:
        >>> blobs = [encode_vector([1.0, 0.0]), encode_vector([0.0, 1.0])]
        >>> rank_by_cosine([0.9, 0.1], ["x", "y"], blobs, 1)[0][0]
        'x'
    """
    if not keys or limit <= 0:
        return []
    numpy = _numpy()
    if numpy is not None:
        return _rank_numpy(numpy, query, keys, blobs, limit)
    q = list(query)
    q_norm = math.sqrt(sum(x * x for x in q)) or 1.0
    scored: list[tuple[float, int]] = []
    for i, blob in enumerate(blobs):
        v = decode_vector(blob)
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        dot = sum(a * b for a, b in zip(q, v, strict=False))
        scored.append((dot / (q_norm * norm), i))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [(keys[i], score) for score, i in scored[:limit]]


def _rank_numpy(
    np: Any, query: Sequence[float], keys: Sequence[str], blobs: Sequence[bytes], limit: int
) -> list[tuple[str, float]]:
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
    q = np.asarray(query, dtype="<f4")
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(q) or 1.0)
    norms[norms == 0] = 1.0
    scores = (matrix @ q) / norms
    # A stable sort on the negated scores: equal scores keep their key order.
    order = np.argsort(-scores, kind="stable")[:limit]
    return [(keys[int(i)], float(scores[int(i)])) for i in order]


def _numpy() -> Any:
    try:
        import numpy  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return numpy
