"""Hybrid block search on a real SQLite block store: fusion, validation, fallback, re-embedding."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from flowcore.blocks import BlockDefinition, SqliteBlockStore
from flowcore.search import BlockSearch, EmbeddingError, embedded_text

from .embedders import BrokenEmbedder, ConceptEmbedder


def obj(**props: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {k: {"type": v} for k, v in props.items()},
        "required": list(props),
    }


BLOCKS = [
    BlockDefinition(
        id="send_email",
        name="Send email",
        description="Deliver an email to a recipient.",
        kind="tool",
        tool="smtp_send",
        use_when="Someone must be notified.",
        tags=("email",),
        input_schema=obj(to="string", body="string"),
        output_schema=obj(sent="boolean"),
    ),
    BlockDefinition(
        id="summarize_llm",
        name="Summarize",
        description="Condense a long text.",
        kind="llm",
        prompt_template="Summarize {{ text }}",
        tags=("summary",),
        input_schema=obj(text="string"),
        output_schema=obj(summary="string"),
    ),
    BlockDefinition(
        id="summarize_py",
        name="Summarize (first sentences)",
        description="Condense a long text by keeping its first sentences.",
        kind="python",
        source_code="async def execute(inputs, context):\n    return {'summary': ''}\n",
        tags=("summary",),
        input_schema=obj(text="string", sentences="integer"),
        output_schema=obj(summary="string"),
    ),
    BlockDefinition(
        id="weather",
        name="Weather",
        description="Forecast for a city.",
        kind="tool",
        tool="forecast",
        tags=("weather",),
        input_schema=obj(city="string"),
        output_schema=obj(forecast="object"),
    ),
]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteBlockStore]:
    async with SqliteBlockStore(tmp_path / "blocks.db", seed_builtins=False) as s:
        for block in BLOCKS:
            await s.save(block)
        yield s


async def test_a_paraphrase_is_found_by_vectors_and_by_hybrid_not_by_text(
    store: SqliteBlockStore,
) -> None:
    search = BlockSearch(store, ConceptEmbedder())
    query = "mail my landlord"  # no word of the block's text
    assert await search.search(query, mode="text") == []
    [top, *_] = await search.search(query, mode="vector")
    assert (top.block.id, top.mode, top.fts_rank, top.vector_rank) == (
        "send_email",
        "vector",
        None,
        1,
    )
    hybrid = await search.search(query)
    assert hybrid[0].block.id == "send_email"
    assert {h.mode for h in hybrid} == {"hybrid"}
    assert hybrid[0].similarity is not None
    assert hybrid[0].similarity > 0.9


async def test_a_keyword_query_is_ranked_by_both_and_fused(store: SqliteBlockStore) -> None:
    search = BlockSearch(store, ConceptEmbedder())
    [hit, *_] = await search.search("email recipient")
    assert (hit.block.id, hit.fts_rank, hit.vector_rank) == ("send_email", 1, 1)
    assert hit.score == pytest.approx(2 / 61)


async def test_execution_type_and_io_filter_the_candidates(store: SqliteBlockStore) -> None:
    search = BlockSearch(store, ConceptEmbedder())
    both = [h.block.id for h in await search.search("shorten this", limit=5)]
    assert {"summarize_llm", "summarize_py"} <= set(both)
    only_py = await search.search("shorten this", execution_type="python")
    assert [h.block.id for h in only_py] == ["summarize_py"]
    # The python block needs "sentences"; a caller with only "text" gets the LLM block.
    fits = await search.search(
        "shorten this",
        inputs={"properties": {"text": {"type": "string"}}},
        outputs={"properties": {"summary": {"type": "string"}}},
    )
    assert [h.block.id for h in fits] == ["summarize_llm"]
    assert await search.search("shorten this", outputs=obj(title="string")) == []


async def test_a_failing_embedder_falls_back_to_text_and_logs_once(
    store: SqliteBlockStore, caplog: pytest.LogCaptureFixture
) -> None:
    broken = BrokenEmbedder()
    search = BlockSearch(store, broken)
    with caplog.at_level(logging.WARNING, logger="flowcore.search"):
        first = await search.search("email recipient")
        second = await search.search("forecast city")
    assert [h.block.id for h in first][:1] == ["send_email"]
    assert [h.block.id for h in second][:1] == ["weather"]
    assert {h.mode for h in first + second} == {"text"}
    assert all(h.vector_rank is None for h in first + second)
    falls = [r for r in caplog.records if "falls back to full text" in r.getMessage()]
    assert len(falls) == 1
    assert "connection refused" in falls[0].getMessage()
    assert broken.calls == 2  # tried each time: a recovered embedder is used again


async def test_vector_mode_raises_instead_of_falling_back(store: SqliteBlockStore) -> None:
    with pytest.raises(EmbeddingError, match="connection refused"):
        await BlockSearch(store, BrokenEmbedder()).search("x", mode="vector")
    with pytest.raises(EmbeddingError, match="no embedder"):
        await BlockSearch(store).search("x", mode="vector")


async def test_without_an_embedder_search_is_text_only(store: SqliteBlockStore) -> None:
    hits = await BlockSearch(store).search("email recipient")
    assert [(h.block.id, h.mode) for h in hits] == [("send_email", "text")]


async def test_a_third_party_embedder_error_is_also_a_fallback(store: SqliteBlockStore) -> None:
    class Crashing(ConceptEmbedder):
        async def embed(self, texts: Any) -> Any:
            raise RuntimeError("model file truncated")

    hits = await BlockSearch(store, Crashing()).search("email recipient")
    assert [h.mode for h in hits] == ["text"]


async def test_blocks_are_embedded_once_and_again_only_when_their_text_changes(
    store: SqliteBlockStore,
) -> None:
    embedder = ConceptEmbedder()
    search = BlockSearch(store, embedder)
    assert await search.index() == 4
    assert await search.index() == 0
    await search.search("mail")  # searching embeds only the query
    assert embedder.calls[-1] == ["mail"]
    # A new version whose embedded text is unchanged reuses the vector.
    email = await store.get("send_email")
    v2 = await store.save(email.model_copy(update={"tool": "smtp_send_v2"}))
    assert v2.version == 2
    assert await search.index() == 0
    # A changed description is embedded again, that block alone.
    await store.save(v2.model_copy(update={"description": "Deliver an email, with retries."}))
    before = embedder.embedded
    assert await search.index() == 1
    assert embedder.embedded == before + 1
    assert embedder.calls[-1] == [embedded_text((await store.get("send_email")).model_dump())]


async def test_switching_embedders_embeds_again_and_keeps_both(store: SqliteBlockStore) -> None:
    first, second = ConceptEmbedder("concepts-a"), ConceptEmbedder("concepts-b")
    assert await BlockSearch(store, first).index() == 4
    assert await BlockSearch(store, second).index() == 4
    assert await BlockSearch(store, first).index() == 0
    async with store.connection().execute(
        "SELECT embedder, COUNT(*), MIN(length(vector)) FROM block_vectors GROUP BY embedder"
    ) as cur:
        rows = await cur.fetchall()
    # float32: 4 bytes a dimension (8 dimensions).
    assert sorted(tuple(r) for r in rows) == [("concepts-a", 4, 32), ("concepts-b", 4, 32)]


async def test_only_the_description_use_when_and_tags_are_embedded(
    store: SqliteBlockStore,
) -> None:
    embedder = ConceptEmbedder()
    await BlockSearch(store, embedder).index()
    texts = {t for call in embedder.calls for t in call}
    assert "Deliver an email to a recipient.\nSomeone must be notified.\nemail" in texts
    assert not any("Summarize {{ text }}" in t or "async def" in t for t in texts)


async def test_a_deleted_block_is_not_found_and_its_vectors_go(store: SqliteBlockStore) -> None:
    search = BlockSearch(store, ConceptEmbedder())
    await search.index()
    await store.delete("send_email")
    await store.save(BLOCKS[0].model_copy(update={"id": "other", "tags": ("x",)}))
    hits = await search.search("mail my landlord", mode="vector", limit=10)
    assert "send_email" not in [h.block.id for h in hits]
    async with store.connection().execute(
        "SELECT COUNT(*) FROM block_vectors WHERE id = 'send_email'"
    ) as cur:
        assert (await cur.fetchone()) == (0,)


async def test_the_store_search_is_unchanged(store: SqliteBlockStore) -> None:
    assert [b.id for b in await store.search("forecast city")] == ["weather"]
    assert await store.search_ids("email recipient", limit=1) == ["send_email"]


async def test_bad_arguments_are_refused(store: SqliteBlockStore) -> None:
    from flowcore.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="choose one of hybrid, text, vector"):
        await BlockSearch(store).search("x", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="pool must be at least 1"):
        BlockSearch(store, pool=0)
    with pytest.raises(InvalidInputError, match="min_coverage"):
        BlockSearch(store, min_coverage=2.0)
    assert await BlockSearch(store).search("email", limit=0) == []


async def test_one_incidental_shared_word_does_not_outrank_the_vector_match(
    store: SqliteBlockStore,
) -> None:
    await store.save(
        BlockDefinition(
            id="crm_lookup",
            name="CRM lookup",
            description="Look up a customer record.",
            kind="tool",
            tool="crm",
        )
    )
    query = "mail the customer a receipt"  # shares only "customer" with crm_lookup
    gated = await BlockSearch(store, ConceptEmbedder()).search(query, limit=2)
    assert [h.block.id for h in gated][:1] == ["send_email"]
    crm = next(h for h in gated if h.block.id == "crm_lookup")
    assert crm.fts_rank == 1  # found by BM25, but it covers 1 of 3 words: not fused
    assert crm.score == pytest.approx(1 / (60 + crm.vector_rank))  # type: ignore[operator]
    ungated = await BlockSearch(store, ConceptEmbedder(), min_coverage=0).search(query, limit=2)
    assert [h.block.id for h in ungated][:1] == ["crm_lookup"]


async def test_search_ids_can_be_limited_to_some_blocks(store: SqliteBlockStore) -> None:
    assert await store.search_ids("summary", among=["summarize_py"]) == ["summarize_py"]
    assert await store.search_ids("summary", among=[]) == []
