"""Spec: maintenance on both checkpoint stores (MaintainableCheckpointer).

A store lists the threads that have checkpoints by id prefix, and rewrites a
thread's history in one step: deleting checkpoints with their pending writes
and replacing the records of others in place. A rewrite that would leave a
checkpoint with a missing parent, or names a checkpoint that is not there,
changes nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from flowcore.checkpoint import (
    Checkpoint,
    InMemoryCheckpointer,
    MaintainableCheckpointer,
    PendingWrite,
    SqliteCheckpointer,
)
from flowcore.errors import CheckpointError, CheckpointNotFoundError, SerializationError

from .contract import ids_of, make_cp, put_chain


@pytest.fixture(params=["memory", "sqlite"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[MaintainableCheckpointer]:
    """Each store, fresh."""
    if request.param == "memory":
        yield InMemoryCheckpointer()
    else:
        async with SqliteCheckpointer(tmp_path / "threads.db") as sqlite_store:
            yield sqlite_store


async def test_both_stores_are_maintainable(store: MaintainableCheckpointer) -> None:
    assert isinstance(store, MaintainableCheckpointer)


async def test_threads_lists_thread_ids_with_a_prefix_sorted(
    store: MaintainableCheckpointer,
) -> None:
    for thread in ("b/2", "a/1", "b/1", "c"):
        await store.put(make_cp(thread, "c1"))
    assert await store.threads() == ["a/1", "b/1", "b/2", "c"]
    assert await store.threads("b/") == ["b/1", "b/2"]
    assert await store.threads("zz") == []
    await store.delete_thread("b/1")
    assert await store.threads("b") == ["b/2"]


async def test_rewrite_deletes_checkpoints_with_their_writes(
    store: MaintainableCheckpointer,
) -> None:
    await put_chain(store, "t", ["c1", "c2", "c3"])
    await store.put_write("t", "c1", PendingWrite("n", {"x": 1}))
    await store.put_write("t", "c3", PendingWrite("n", {"x": 3}))
    c3 = await store.get("t", "c3")
    assert c3 is not None
    await store.rewrite(
        "t", delete={"c1", "c2", "unknown"}, replace=[dataclasses.replace(c3, parent_id=None)]
    )
    assert ids_of(await store.history("t")) == ["c3"]
    assert await store.get_writes("t", "c1") == ()
    assert await store.get_writes("t", "c3") == (PendingWrite("n", {"x": 3}),)


async def test_a_replaced_checkpoint_keeps_its_place_in_history(
    store: MaintainableCheckpointer,
) -> None:
    await put_chain(store, "t", ["c1", "c2", "c3"])
    new = make_cp("t", "c2", "c1", step=7, metadata={"edited": True}, snapshot={"x": 1})
    await store.rewrite("t", replace=[new])
    assert ids_of(await store.history("t")) == ["c3", "c2", "c1"]
    assert await store.get("t", "c2") == new


async def test_deleting_every_checkpoint_removes_the_thread(
    store: MaintainableCheckpointer,
) -> None:
    await put_chain(store, "t", ["c1", "c2"])
    await store.rewrite("t", delete=["c1", "c2"])
    assert await store.threads() == []
    assert await store.get("t") is None


async def test_a_rewrite_that_orphans_a_checkpoint_changes_nothing(
    store: MaintainableCheckpointer,
) -> None:
    await put_chain(store, "t", ["c1", "c2", "c3"])
    with pytest.raises(CheckpointError, match=r"'c2'.*replace 'c2' too"):
        await store.rewrite("t", delete={"c1"})
    assert ids_of(await store.history("t")) == ["c3", "c2", "c1"]


async def test_replacing_a_missing_or_deleted_checkpoint_changes_nothing(
    store: MaintainableCheckpointer,
) -> None:
    await put_chain(store, "t", ["c1", "c2"])
    with pytest.raises(CheckpointNotFoundError):
        await store.rewrite("t", replace=[make_cp("t", "nope")])
    with pytest.raises(CheckpointNotFoundError):
        await store.rewrite("t", delete={"c2"}, replace=[make_cp("t", "c2")])
    with pytest.raises(CheckpointNotFoundError):
        await store.rewrite("unknown", replace=[make_cp("unknown", "c1")])
    assert ids_of(await store.history("t")) == ["c2", "c1"]


async def test_a_replacement_must_belong_to_the_thread_and_be_storable(
    store: MaintainableCheckpointer,
) -> None:
    await put_chain(store, "t", ["c1"])
    with pytest.raises(CheckpointError, match="one thread at a time"):
        await store.rewrite("t", replace=[make_cp("other", "c1")])
    bad = make_cp("t", "c1", metadata={"obj": object()})
    with pytest.raises(SerializationError):
        await store.rewrite("t", replace=[bad])
    stored = await store.get("t", "c1")
    assert stored is not None
    assert stored.metadata == {}


async def test_a_replacement_may_change_the_parent(store: MaintainableCheckpointer) -> None:
    await put_chain(store, "t", ["c1", "c2", "c3"])
    c3 = await store.get("t", "c3")
    assert isinstance(c3, Checkpoint)
    await store.rewrite("t", delete={"c2"}, replace=[dataclasses.replace(c3, parent_id="c1")])
    moved = await store.get("t", "c3")
    assert moved is not None
    assert moved.parent_id == "c1"
