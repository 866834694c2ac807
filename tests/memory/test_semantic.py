"""Semantic memory search: both stores rank by words and meaning, and fall back to words."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from flowcore.memory import InMemoryStore, SqliteStore
from flowcore.search import Embedder, WordLlamaEmbedder
from tests.search.embedders import BrokenEmbedder, ConceptEmbedder
from tests.search.wordllama_required import require_wordllama

PREFS = ("users", "ada", "preferences")
MEMORIES = {
    "lunch": "User prefers Thai food for lunch",
    "commute": "Takes the bus to work on weekdays",
    "music": "Listens to jazz while coding",
    "language": "Speaks French and English",
}

Factory = Callable[[Embedder | None], Any]


@pytest.fixture(params=["memory", "sqlite"])
async def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Factory]:
    opened: list[SqliteStore] = []

    async def make(embedder: Embedder | None) -> Any:
        if request.param == "memory":
            store: Any = InMemoryStore(embedder=embedder)
        else:
            store = SqliteStore(tmp_path / f"m{len(opened)}.db", embedder=embedder)
            await store.open()
            opened.append(store)
        for key, value in MEMORIES.items():
            await store.put(PREFS, key, value)
        return store

    yield make  # type: ignore[misc]
    for store in opened:
        await store.aclose()


async def test_a_question_finds_the_memory_that_shares_no_word_with_it(
    make_store: Factory,
) -> None:
    plain = await make_store(None)
    # Word matching alone finds only what shares "to" with the question.
    words_only = await plain.search(("users", "ada"), "where do I like to eat")
    assert "lunch" not in [h.key for h in words_only]
    assert plain.search_mode is None
    store = await make_store(ConceptEmbedder())
    hits = await store.search(("users", "ada"), "where do I like to eat", limit=2)
    assert hits[0].key == "lunch"
    assert hits[0].score is not None
    assert hits[0].score > hits[1].score
    assert store.search_mode == "hybrid"


async def test_word_matches_still_count(make_store: Factory) -> None:
    store = await make_store(ConceptEmbedder())
    [hit] = await store.search(("users", "ada"), "French", limit=1)
    assert hit.key == "language"


async def test_memories_are_embedded_once_and_again_when_they_change(
    make_store: Factory,
) -> None:
    embedder = ConceptEmbedder()
    store = await make_store(embedder)
    await store.search(("users", "ada"), "eat")
    assert embedder.embedded == len(MEMORIES) + 1  # every memory, then the query
    await store.search(("users", "ada"), "music")
    assert embedder.calls[-1] == ["music"]  # the query alone
    await store.put(PREFS, "lunch", "Now prefers sushi for dinner")
    await store.search(("users", "ada"), "eat")
    assert embedder.calls[-1] == ["lunch: Now prefers sushi for dinner", "eat"]


async def test_a_deleted_memory_is_not_found(make_store: Factory) -> None:
    store = await make_store(ConceptEmbedder())
    await store.search(("users", "ada"), "eat")
    assert await store.delete(PREFS, "lunch")
    hits = await store.search(("users", "ada"), "where do I like to eat")
    assert "lunch" not in [h.key for h in hits]


async def test_a_failing_embedder_falls_back_to_word_matching_and_logs_once(
    make_store: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    store = await make_store(BrokenEmbedder())
    with caplog.at_level(logging.WARNING, logger="flowcore.memory"):
        words = await store.search(("users", "ada"), "jazz coding")
        fallback = await store.search(("users", "ada"), "where do I like to eat")
    assert [h.key for h in words] == ["music"]
    # The store's word matching, as without an embedder: "lunch" shares no word.
    assert "lunch" not in [h.key for h in fallback]
    assert store.search_mode == "text"
    assert sum("falls back to word matching" in r.getMessage() for r in caplog.records) == 1


async def test_without_a_query_the_newest_come_first(make_store: Factory) -> None:
    store = await make_store(ConceptEmbedder())
    hits = await store.search(("users", "ada"))
    assert len(hits) == len(MEMORIES)
    assert store.search_mode == "text"


async def test_sqlite_keeps_memory_vectors_in_the_same_file(tmp_path: Path) -> None:
    embedder = ConceptEmbedder()
    async with SqliteStore(tmp_path / "m.db", embedder=embedder) as store:
        await store.put(PREFS, "lunch", MEMORIES["lunch"])
        await store.search(("users",), "eat")
    # A new process (a new store on the file) reuses the stored vectors.
    again = ConceptEmbedder()
    async with SqliteStore(tmp_path / "m.db", embedder=again) as store:
        [hit] = await store.search(("users",), "where do I like to eat")
    assert hit.key == "lunch"
    assert again.calls == [["where do I like to eat"]]


async def test_wordllama_finds_thai_lunch_for_where_do_i_like_to_eat(tmp_path: Path) -> None:
    require_wordllama()
    async with SqliteStore(tmp_path / "m.db", embedder=WordLlamaEmbedder()) as store:
        for key, value in MEMORIES.items():
            await store.put(PREFS, key, value)
        [hit] = await store.search(("users", "ada"), "where do I like to eat", limit=1)
    assert hit.key == "lunch"
    assert store.search_mode == "hybrid"
