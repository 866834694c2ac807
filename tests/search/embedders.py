"""Deterministic embedders for search specs: a tiny concept model, a counter, a failure.

``ConceptEmbedder`` maps words to hand-made concept groups ("mail", "email",
"inbox" are one concept), so a paraphrase lands near the block it means while
sharing no word with it: what a real model does, small enough to reason about.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from flowcore.search import EmbeddingError, Vector

CONCEPTS: tuple[frozenset[str], ...] = (
    frozenset({"email", "mail", "inbox", "message", "letter", "notify"}),
    frozenset({"summary", "summarize", "shorten", "gist", "condense", "brief"}),
    frozenset({"translate", "translation", "spanish", "french", "language"}),
    frozenset({"weather", "rain", "umbrella", "forecast", "sunny"}),
    frozenset({"food", "eat", "lunch", "dinner", "thai", "restaurant", "cuisine"}),
    frozenset({"music", "jazz", "song", "listen"}),
    frozenset({"bus", "commute", "train", "travel"}),
)
_WORD = re.compile(r"[a-z]+")


class ConceptEmbedder:
    """Counts concept words; ``calls`` records every batch it was asked to embed."""

    def __init__(self, name: str = "concepts") -> None:
        self.name = name
        self.dimensions = len(CONCEPTS) + 1
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.calls.append(list(texts))
        return [self._vector(t) for t in texts]

    def _vector(self, text: str) -> Vector:
        vector = [0.0] * self.dimensions
        for word in _WORD.findall(text.lower()):
            for i, group in enumerate(CONCEPTS):
                if word in group:
                    vector[i] += 1.0
        vector[-1] = 0.1  # no text is the zero vector
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector]

    @property
    def embedded(self) -> int:
        """How many texts were embedded, over all calls."""
        return sum(len(c) for c in self.calls)


class BrokenEmbedder:
    """Always fails, as an unreachable endpoint does."""

    name = "broken"
    dimensions = 4

    def __init__(self) -> None:
        self.calls = 0

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.calls += 1
        raise EmbeddingError("broken: connection refused", embedder=self.name)
