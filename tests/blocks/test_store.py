"""Spec: the SQLite and Postgres block stores keep every version, filter, search and
round-trip JSON."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from flowcore.blocks import (
    BlockDefinition,
    BlockNotFoundError,
    BlockStore,
    BlockStoreError,
    SqliteBlockStore,
    builtin_blocks,
)
from flowcore.errors import BlockDefinitionError

BUILTINS = {
    "classify",
    "extract_json",
    "http_get",
    "human_approval",
    "query_memory",
    "save_memory",
    "summarize",
}


def block(block_id: str = "translate", **fields: object) -> BlockDefinition:
    data: dict[str, object] = {
        "id": block_id,
        "name": "Translate",
        "description": "Translate a text into another language",
        "kind": "llm",
        "prompt_template": "Translate {{ text }} into {{ language }}",
        "input_keys": ["text", "language"],
        "output_keys": ["translation"],
        "category": "process",
        "tags": ["text", "language"],
        "use_when": "The user writes in a language the next step does not read",
    }
    data.update(fields)
    return BlockDefinition.from_data(data)


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqliteBlockStore]:
    if request.param == "postgres":  # a real server, one schema per test (tests/pg.py)
        from flowcore.blocks.postgres_store import PostgresBlockStore

        async with PostgresBlockStore(request.getfixturevalue("pg_schema_url")) as pg:
            yield pg  # type: ignore[misc]  # the same BlockStore, with the same extras
        return
    async with SqliteBlockStore(tmp_path / "blocks.db") as opened:
        yield opened


async def test_a_new_store_holds_the_builtin_blocks(store: SqliteBlockStore) -> None:
    assert isinstance(store, BlockStore)
    assert {b.id for b in await store.list_blocks()} == BUILTINS
    assert await store.get("classify") == next(b for b in builtin_blocks() if b.id == "classify")


async def test_builtins_are_seeded_once_and_deleting_one_sticks(tmp_path: Path) -> None:
    async with SqliteBlockStore(tmp_path / "b.db") as first:
        await first.delete("http_get")
    async with SqliteBlockStore(tmp_path / "b.db") as again:
        assert {b.id for b in await again.list_blocks()} == BUILTINS - {"http_get"}


async def test_saving_a_changed_block_adds_a_version_and_keeps_the_old_one(
    store: SqliteBlockStore,
) -> None:
    v1 = await store.save(block())
    same = await store.save(block())
    v2 = await store.save(block(description="Translate text, keeping its tone"))

    assert (v1.version, same.version, v2.version) == (1, 1, 2)
    assert await store.versions("translate") == [1, 2]
    assert (await store.get("translate")).description.endswith("tone")
    assert (await store.get("translate", version=1)).description == block().description


async def test_blocks_are_filtered_by_category_and_all_given_tags(store: SqliteBlockStore) -> None:
    await store.save(block())
    await store.save(block("detect", tags=["text", "classification"], category="process"))

    assert {b.id for b in await store.list_blocks(category="memory")} == {
        "query_memory",
        "save_memory",
    }
    texts = {b.id for b in await store.list_blocks(tags=["text"])}
    assert {"translate", "detect", "summarize"} <= texts
    assert [b.id for b in await store.list_blocks(tags=["text", "language"])] == ["translate"]


async def test_search_ranks_the_best_match_first(store: SqliteBlockStore) -> None:
    await store.save(block())

    hits = [b.id for b in await store.search("translate this text into another language")]

    assert hits[0] == "translate"
    assert next(b.id for b in await store.search("approval by a person")) == "human_approval"
    assert [b.id for b in await store.search("fetch a web page", limit=1)] == ["http_get"]
    assert await store.search("   ") == []
    assert await store.search("zebra quantum") == []


async def test_search_finds_the_latest_text_of_a_changed_block(store: SqliteBlockStore) -> None:
    await store.save(block())
    await store.save(block(description="Render prose in a different tongue", use_when=""))

    assert "translate" not in [b.id for b in await store.search("another")]
    assert [b.id for b in await store.search("tongue")] == ["translate"]


async def test_missing_blocks_and_versions_are_typed_errors(store: SqliteBlockStore) -> None:
    with pytest.raises(BlockNotFoundError, match="'nope'") as info:
        await store.get("nope")
    assert isinstance(info.value, LookupError)
    with pytest.raises(BlockNotFoundError, match="version 9"):
        await store.get("summarize", version=9)
    with pytest.raises(BlockNotFoundError):
        await store.delete("nope")


async def test_export_and_import_round_trip_every_version(
    store: SqliteBlockStore, tmp_path: Path
) -> None:
    await store.save(block())
    await store.save(block(description="second"))
    text = await store.export_json()

    async with SqliteBlockStore(tmp_path / "other.db", seed_builtins=False) as other:
        added = await other.import_json(text)
        assert added == len(BUILTINS) + 2
        assert await other.versions("translate") == [1, 2]
        assert await other.get("translate") == await store.get("translate")
        assert await other.import_json(text) == 0  # importing again changes nothing


async def test_a_bad_import_is_refused_and_changes_nothing(store: SqliteBlockStore) -> None:
    before = await store.export_json()
    bad = json.dumps({"format": "flowcore-blocks", "blocks": [{"id": "x", "kind": "llm"}]})

    with pytest.raises(BlockDefinitionError) as info:
        await store.import_json(bad)
    with pytest.raises(BlockDefinitionError, match="format"):
        await store.import_json("[]")

    assert any(p.startswith("name") for p in info.value.problems)
    assert await store.export_json() == before


async def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"definitely not sqlite" * 100)

    with pytest.raises(BlockStoreError, match=r"notes\.txt"):
        await SqliteBlockStore(path).open()
    assert path.read_bytes() == b"definitely not sqlite" * 100


def _document(**fields: object) -> str:
    """An export holding one valid block, with ``fields`` (raw JSON text) spliced into it."""
    data = block("odd").model_dump(mode="json")
    text = json.dumps(data)[:-1] + "".join(f', "{k}": {v}' for k, v in fields.items()) + "}"
    return '{"format": "flowcore-blocks", "version": 1, "blocks": [' + text + "]}"


# Each import must fail as a BlockDefinitionError naming what and where, not as the
# RecursionError, ValueError or UnicodeEncodeError Python's own parser or SQLite raises.
HOSTILE_IMPORTS = {
    "nested past the parser": (
        _document(input_schema='{"x": ' + "[" * 5_000 + "]" * 5_000 + "}"),
        "document: nests lists or objects too deep to read",
    ),
    "nested past MAX_NESTING": (
        _document(input_schema='{"a": ' * 150 + "{}" + "}" * 150),
        r"blocks\[0\]\.input_schema\.a\.a.*more than 100 levels deep",
    ),
    "an int of 5000 digits": (
        _document(timeout_seconds="1" * 5_000),
        r"blocks\[0\]\.timeout_seconds: an int of about 5000 digits",
    ),
    "a negative int of 4400 digits": (
        _document(max_retries="-" + "9" * 4_400),
        r"blocks\[0\]\.max_retries: an int of about 4400 digits",
    ),
    "a lone surrogate": (
        _document(description='"caf\\udce9"'),
        r"blocks\[0\]\.description: the string holds a lone surrogate",
    ),
    "NaN": (_document(timeout_seconds="NaN"), r"blocks\[0\]\.timeout_seconds: nan is not"),
}


@pytest.mark.parametrize(("text", "problem"), HOSTILE_IMPORTS.values(), ids=HOSTILE_IMPORTS)
async def test_an_import_of_data_json_cannot_hold_is_refused_typed_with_its_path(
    store: SqliteBlockStore, text: str, problem: str
) -> None:
    before = await store.export_json()

    with pytest.raises(BlockDefinitionError, match=problem) as info:
        await store.import_json(text)

    if not problem.startswith("document"):
        assert info.value.block == "odd"
    assert await store.export_json() == before


async def test_a_long_import_decoded_in_a_worker_thread_is_refused_the_same_way(
    store: SqliteBlockStore,
) -> None:
    padded = _document(timeout_seconds="1" * 5_000, notes=json.dumps("n" * 100_000))
    with pytest.raises(BlockDefinitionError, match=r"blocks\[0\]\.timeout_seconds: an int"):
        await store.import_json(padded)
