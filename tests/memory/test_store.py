"""Spec: every long-term store keeps namespaced JSON values and finds them by words.

Each behaviour runs against the in-memory store, the SQLite store (on a
real file) and the Postgres store (on a real server); the SQLite store must
also keep what it was given across reopens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from flowcore.errors import FlowcoreError
from flowcore.memory import InMemoryStore, SqliteStore, Store

PREFS = ("users", "ada", "preferences")


@pytest.fixture(params=["in-memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "in-memory":
        yield InMemoryStore()
    elif request.param == "postgres":  # a real server, one schema per test (tests/pg.py)
        from flowcore.memory.postgres import PostgresStore

        async with PostgresStore(request.getfixturevalue("pg_schema_url")) as pg:
            yield pg
    else:
        async with SqliteStore(tmp_path / "memory.db") as sqlite:
            yield sqlite


async def test_put_get_delete_round_trip_in_a_namespace(store: Store) -> None:
    await store.put(PREFS, "food", {"likes": ["tacos"]})

    item = await store.get(PREFS, "food")

    assert item is not None
    assert (item.namespace, item.key, item.value) == (PREFS, "food", {"likes": ["tacos"]})
    assert await store.get(("users", "bob", "preferences"), "food") is None
    assert await store.delete(PREFS, "food") is True
    assert await store.delete(PREFS, "food") is False
    assert await store.get(PREFS, "food") is None


async def test_values_are_copied_so_later_mutation_does_not_change_memory(
    store: Store,
) -> None:
    value = {"likes": ["tacos"]}
    await store.put(PREFS, "food", value)
    value["likes"].append("sushi")

    item = await store.get(PREFS, "food")
    assert item is not None
    assert item.value == {"likes": ["tacos"]}


async def test_list_shows_one_namespace_newest_first(store: Store) -> None:
    await store.put(PREFS, "a", 1)
    await store.put(PREFS, "b", 2)
    await store.put(("users", "ada", "history"), "run1", "ok")

    assert [i.key for i in await store.list(PREFS)] == ["b", "a"]


async def test_search_ranks_items_under_a_prefix_by_shared_words(store: Store) -> None:
    await store.put(PREFS, "favourite_food", "tacos from the corner place")
    await store.put(PREFS, "favourite_colour", "green")
    await store.put(("users", "ada", "history"), "last_order", "tacos, twice")
    await store.put(("users", "bob", "preferences"), "favourite_food", "tacos")

    hits = await store.search(("users", "ada"), "favourite tacos")

    assert [(h.namespace[-1], h.key, h.score) for h in hits] == [
        ("preferences", "favourite_food", 2.0),
        ("history", "last_order", 1.0),
        ("preferences", "favourite_colour", 1.0),
    ]  # ties: newest first
    assert all(h.namespace[:2] == ("users", "ada") for h in hits)
    assert len(await store.search(("users", "ada"), "favourite", limit=1)) == 1


@pytest.mark.parametrize("namespace", [(), ("users", ""), ("users", 3)])
async def test_a_bad_namespace_is_refused_with_an_example(store: Store, namespace: tuple) -> None:
    with pytest.raises(FlowcoreError, match=r"non-empty tuple of non-empty strings"):
        await store.put(namespace, "k", 1)


async def test_a_value_that_is_not_json_is_refused_naming_the_key(store: Store) -> None:
    with pytest.raises(FlowcoreError, match=r"'when'.*not JSON-serialisable"):
        await store.put(PREFS, "when", object())
    assert await store.get(PREFS, "when") is None


async def test_a_prefix_matches_whole_namespace_parts_only(store: Store) -> None:
    await store.put(("users", "ada"), "k", 1)
    await store.put(("users", "adam"), "k", 2)

    assert [i.value for i in await store.search(("users", "ada"))] == [1]


def test_both_stores_satisfy_the_store_protocol(tmp_path: Path) -> None:
    assert isinstance(InMemoryStore(), Store)
    assert isinstance(SqliteStore(tmp_path / "m.db"), Store)


async def test_the_sqlite_store_keeps_memories_across_reopening(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "memory.db") as first:
        await first.put(PREFS, "food", {"likes": ["tacos"]})
    async with SqliteStore(tmp_path / "memory.db") as second:
        item = await second.get(PREFS, "food")

    assert item is not None
    assert item.value == {"likes": ["tacos"]}
