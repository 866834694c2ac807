"""Spec: the in-memory long-term store keeps namespaced JSON values and finds them by words."""

from __future__ import annotations

import pytest

from flowcore.errors import FlowcoreError
from flowcore.memory import InMemoryStore, Store

PREFS = ("users", "ada", "preferences")


async def test_put_get_delete_round_trip_in_a_namespace() -> None:
    store = InMemoryStore()
    await store.put(PREFS, "food", {"likes": ["tacos"]})

    item = await store.get(PREFS, "food")

    assert item is not None
    assert (item.namespace, item.key, item.value) == (PREFS, "food", {"likes": ["tacos"]})
    assert await store.get(("users", "bob", "preferences"), "food") is None
    assert await store.delete(PREFS, "food") is True
    assert await store.delete(PREFS, "food") is False
    assert await store.get(PREFS, "food") is None


async def test_values_are_copied_so_later_mutation_does_not_change_memory() -> None:
    store = InMemoryStore()
    value = {"likes": ["tacos"]}
    await store.put(PREFS, "food", value)
    value["likes"].append("sushi")

    item = await store.get(PREFS, "food")
    assert item is not None
    assert item.value == {"likes": ["tacos"]}


async def test_list_shows_one_namespace_newest_first() -> None:
    store = InMemoryStore()
    await store.put(PREFS, "a", 1)
    await store.put(PREFS, "b", 2)
    await store.put(("users", "ada", "history"), "run1", "ok")

    assert [i.key for i in await store.list(PREFS)] == ["b", "a"]


async def test_search_ranks_items_under_a_prefix_by_shared_words() -> None:
    store = InMemoryStore()
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
async def test_a_bad_namespace_is_refused_with_an_example(namespace: tuple) -> None:
    with pytest.raises(FlowcoreError, match=r"non-empty tuple of non-empty strings"):
        await InMemoryStore().put(namespace, "k", 1)


async def test_a_value_that_is_not_json_is_refused_naming_the_key() -> None:
    with pytest.raises(FlowcoreError, match=r"'when'.*not JSON-serialisable"):
        await InMemoryStore().put(PREFS, "when", object())


def test_the_in_memory_store_satisfies_the_store_protocol() -> None:
    assert isinstance(InMemoryStore(), Store)
