"""WordLlamaEmbedder: the embedded default, loaded from its wheel with no network."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from flowcore.blocks import SqliteBlockStore
from flowcore.search import BlockSearch, EmbeddingError, WordLlamaEmbedder

from .wordllama_required import require_wordllama


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_loads_from_the_package_without_any_network(monkeypatch: pytest.MonkeyPatch) -> None:
    require_wordllama()
    import requests

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"WordLlama tried the network: {args}")

    # WordLlama downloads through requests.get when a file is missing.
    monkeypatch.setattr(requests, "get", no_network)
    embedder = WordLlamaEmbedder()
    [eat, thai, car] = await embedder.embed(
        ["where do I like to eat", "User prefers Thai food for lunch", "the car is red"]
    )
    assert len(eat) == embedder.dimensions == 256
    assert math.isclose(math.sqrt(sum(x * x for x in eat)), 1.0, rel_tol=1e-4)
    assert cosine(eat, thai) > cosine(eat, car) + 0.2


async def test_vectors_can_be_truncated() -> None:
    require_wordllama()
    embedder = WordLlamaEmbedder(dimensions=64)
    [vector] = await embedder.embed(["send an email"])
    assert len(vector) == 64
    assert embedder.name == "wordllama-l2_supercat-64"


def test_an_unsupported_dimension_is_refused() -> None:
    with pytest.raises(EmbeddingError, match="choose one of"):
        WordLlamaEmbedder(dimensions=300)


async def test_without_the_package_embedding_fails_typed_and_search_falls_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)  # makes "import wordllama" fail
    embedder = WordLlamaEmbedder()
    with pytest.raises(EmbeddingError, match=r"pip install 'flowcore\[embed\]'"):
        await embedder.embed(["x"])
    async with SqliteBlockStore(tmp_path / "b.db") as store:
        hits = await BlockSearch(store, embedder).search("summarize a text")
    assert hits
    assert {h.mode for h in hits} == {"text"}


async def test_finds_a_paraphrased_builtin_block(tmp_path: Path) -> None:
    require_wordllama()
    async with SqliteBlockStore(tmp_path / "b.db") as store:
        search = BlockSearch(store, WordLlamaEmbedder())
        assert await search.search("make this article shorter", mode="text") == []
        hits = await search.search("make this article shorter")
    assert hits[0].block.id == "summarize"
    assert hits[0].mode == "hybrid"
