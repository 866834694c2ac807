"""Spec: the Postgres memory store's own parts (the shared behaviour is in test_store.py)."""

from __future__ import annotations

import pytest

from flowcore.errors import FlowcoreError
from flowcore.memory import Store

ADA = ("users", "ada")


async def test_vectors_round_trip_and_are_replaced_and_dropped_with_their_memory(
    pg_schema_url: str,
) -> None:
    from flowcore.memory.postgres import PostgresStore

    async with PostgresStore(pg_schema_url) as store:
        assert isinstance(store, Store)
        await store.put(ADA, "food", "tacos")
        await store.save_vectors([((ADA, "food"), "h1", b"\x00\x01")], "e", 2)
        await store.save_vectors([((ADA, "food"), "h2", b"\x02\x03")], "e", 2)
        assert await store.load_vectors([(ADA, "food")], "e", 2) == {
            (ADA, "food"): ("h2", b"\x02\x03")
        }
        assert await store.load_vectors([(ADA, "food")], "e", 3) == {}
        assert await store.delete(ADA, "food")
        assert await store.load_vectors([(ADA, "food")], "e", 2) == {}


async def test_a_like_wildcard_in_a_prefix_matches_only_itself(pg_schema_url: str) -> None:
    from flowcore.memory.postgres import PostgresStore

    async with PostgresStore(pg_schema_url) as store:
        await store.put(("u_1",), "a", 1)
        await store.put(("ux1",), "b", 2)
        assert [i.key for i in await store.search(("u_1",))] == ["a"]


async def test_an_unreachable_server_is_named_without_its_password() -> None:
    from flowcore.memory.postgres import PostgresStore

    store = PostgresStore("postgresql://app:hunter2@127.0.0.1:1/x?connect_timeout=1")
    store_open = store.open()
    with pytest.raises(FlowcoreError) as caught:
        await store_open
    assert "hunter2" not in str(caught.value)
    assert "app:***@127.0.0.1:1" in str(caught.value)
