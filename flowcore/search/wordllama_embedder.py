"""``WordLlamaEmbedder``: the embedded default, a small CPU model that loads offline.

WordLlama (PyPI ``wordllama``, MIT) ships its 256-dimension token embedding
table and tokenizer inside the wheel, so it needs no download, no GPU and no
API key: ``pip install 'flowcore[embed]'``. The package is imported only when
the first texts are embedded; flowcore imports without it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flowcore.search.embedder import EmbeddingError, Vector, check_vectors

__all__ = ["WordLlamaEmbedder"]

_DIMENSIONS = (64, 128, 256)  # truncations of the shipped 256-dim table


class WordLlamaEmbedder:
    """Embeds texts with WordLlama's ``l2_supercat`` model, on a worker thread.

    The model loads on first use (about half a second) and is shared by
    every call of this instance; loading and embedding run in a thread, never
    on the event loop. ``dimensions`` may truncate the vectors to 64 or 128.

    Example:
        >>> embedder = WordLlamaEmbedder()
        >>> embedder.name, embedder.dimensions
        ('wordllama-l2_supercat-256', 256)
        >>> # vectors = await embedder.embed(["summarize a text"])
    """

    def __init__(self, *, dimensions: int = 256) -> None:
        if dimensions not in _DIMENSIONS:
            raise EmbeddingError(
                f"WordLlamaEmbedder(dimensions={dimensions!r}): choose one of {_DIMENSIONS}",
                embedder="wordllama",
            )
        self._dimensions = dimensions
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """``wordllama-l2_supercat-<dimensions>``."""
        return f"wordllama-l2_supercat-{self._dimensions}"

    @property
    def dimensions(self) -> int:
        """The vector length (256 unless truncated)."""
        return self._dimensions

    def __repr__(self) -> str:
        return f"WordLlamaEmbedder(dimensions={self._dimensions})"

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Unit-length vectors, one per text.

        Raises:
            EmbeddingError: ``wordllama`` is not installed or its files are missing.

        Example:
            >>> # [v] = await WordLlamaEmbedder().embed(["send an email"])
        """
        batch = [str(t) for t in texts]
        if not batch:
            return []
        vectors = await asyncio.to_thread(self._embed_sync, batch)
        return check_vectors(self, batch, vectors)

    def _embed_sync(self, texts: list[str]) -> list[Vector]:
        model = self._load()
        try:
            array = model.embed(texts, norm=True)
        except Exception as exc:  # the model's own failure, whatever its type
            message = f"{self.name}: embedding failed: {exc}"
            raise EmbeddingError(message, embedder=self.name) from exc
        rows: list[Vector] = array.tolist()
        return rows

    def _load(self) -> Any:
        # Under a lock: two first calls at once must not load the model twice.
        with self._lock:
            if self._model is None:
                self._model = _load_model(self._dimensions, self.name)
            return self._model


def _load_model(dimensions: int, name: str) -> Any:
    try:
        import wordllama  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        raise EmbeddingError(
            "the embedded embedder needs the 'wordllama' package; install it with "
            "pip install 'flowcore[embed]' (or pass another Embedder)",
            embedder=name,
        ) from None
    # The wheel keeps its weights in wordllama/weights and its tokenizer in
    # wordllama/tokenizers. WordLlama.load looks for the tokenizer under the
    # package's "tokenizer" folder (singular) and would then try a download, so
    # it is pointed at the package directory as its cache, where both sit, with
    # downloads off: loading never touches the network.
    package_dir = Path(wordllama.__file__).parent
    try:
        return wordllama.WordLlama.load(
            cache_dir=package_dir,
            disable_download=True,
            trunc_dim=dimensions if dimensions != 256 else None,
        )
    except Exception as exc:  # a broken install: missing or unreadable files
        raise EmbeddingError(
            f"{name}: cannot load the model shipped with wordllama ({exc}); reinstall it "
            "with pip install --force-reinstall wordllama",
            embedder=name,
        ) from exc
