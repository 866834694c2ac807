"""The ``Embedder`` port: text in, one vector per text out.

Semantic search (blocks, long-term memory) talks to embeddings only through
this small protocol, so the model behind it is the application's choice:
:class:`~flowcore.search.WordLlamaEmbedder` runs on the CPU from weights
shipped inside its wheel (the embedded default, ``pip install flowcore[embed]``);
:class:`~flowcore.search.OpenAIEmbedder` calls an OpenAI-compatible
``/embeddings`` endpoint. Any object with ``name``, ``dimensions`` and an
async ``embed`` fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from flowcore.errors import FlowcoreError

__all__ = ["Embedder", "EmbeddingError", "Vector", "check_vectors"]

Vector = list[float]
"""One embedding: ``dimensions`` floats."""


class EmbeddingError(FlowcoreError):
    """An embedder could not produce vectors (model missing, endpoint down, bad reply).

    Searches catch it and fall back to full-text search; ``embedder`` names
    which embedder failed. Messages never carry an API key.

    Example:
        >>> EmbeddingError("no model", embedder="wordllama").code
        'embedding'
    """

    code = "embedding"

    def __init__(self, message: str, *, embedder: str) -> None:
        super().__init__(message)
        self.embedder = embedder


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of a fixed length.

    ``name`` identifies the model (stored beside each vector, so switching
    embedders re-embeds); ``dimensions`` is the length of every vector.
    ``embed`` must not block the event loop (run CPU work in a thread).

    Example:
        >>> class Constant:
        ...     name, dimensions = "constant", 2
        ...     async def embed(self, texts):
        ...         return [[1.0, 0.0] for _ in texts]
        >>> isinstance(Constant(), Embedder)
        True
    """

    @property
    def name(self) -> str:
        """The model's identity, e.g. ``"wordllama-l2-256"``."""
        ...

    @property
    def dimensions(self) -> int:
        """The length of every vector ``embed`` returns."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One vector per text, in order; raises :class:`EmbeddingError`."""
        ...


def check_vectors(embedder: Embedder, texts: Sequence[str], vectors: object) -> list[Vector]:
    """``vectors`` if it is one ``dimensions``-long list of floats per text, else an error.

    Example:
        >>> class E:
        ...     name, dimensions = "e", 2
        >>> check_vectors(E(), ["a"], [[0.5, 1.0]])
        [[0.5, 1.0]]
    """
    name = str(getattr(embedder, "name", type(embedder).__name__))
    if not isinstance(vectors, list) or len(vectors) != len(texts):
        got = len(vectors) if isinstance(vectors, list) else type(vectors).__name__
        raise EmbeddingError(
            f"embedder {name!r} returned {got} vectors for {len(texts)} texts; it must "
            "return one list of floats per text, in order",
            embedder=name,
        )
    out: list[Vector] = []
    for i, vector in enumerate(vectors):
        try:
            floats = [float(x) for x in vector]
        except (TypeError, ValueError):
            raise EmbeddingError(
                f"embedder {name!r}: vector {i} is not a sequence of numbers",
                embedder=name,
            ) from None
        if len(floats) != embedder.dimensions:
            raise EmbeddingError(
                f"embedder {name!r}: vector {i} has {len(floats)} numbers, but the embedder "
                f"says dimensions={embedder.dimensions}; make them agree",
                embedder=name,
            )
        out.append(floats)
    return out
