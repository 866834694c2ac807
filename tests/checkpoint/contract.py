"""The checkpointer contract: specs every :class:`Checkpointer` implementation must pass.

The docstrings of :mod:`flowcore.checkpoint.protocol` are the contract; each
test here pins one sentence of them down. To check an implementation,
subclass :class:`CheckpointerContract` in a ``test_*.py`` module and say how
to make a fresh, ready store::

    class TestMyStore(CheckpointerContract):
        async def make_checkpointer(self, tmp_path: Path) -> Checkpointer:
            return await MyStore.open(tmp_path / "x")

The kit closes the store after each test with ``aclose()``. Stores that
lease threads (:class:`LeasingCheckpointer`) also say how to make one with a
given lease length, in ``make_checkpointer_with_lease_ttl``.
"""

from __future__ import annotations

import abc
import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from flowcore.checkpoint import (
    BatchCheckpointer,
    Checkpoint,
    Checkpointer,
    LeasingCheckpointer,
    PendingWrite,
    ThreadLease,
    WriteAt,
)
from flowcore.errors import (
    CheckpointError,
    CheckpointNotFoundError,
    SerializationError,
    ThreadBusyError,
)

__all__ = ["CheckpointerContract", "make_cp"]


def make_cp(
    thread_id: str,
    checkpoint_id: str,
    parent_id: str | None = None,
    *,
    step: int = 0,
    **fields: Any,
) -> Checkpoint:
    """A checkpoint with only the fields a test cares about."""
    return Checkpoint(thread_id, checkpoint_id, parent_id, step=step, created_at=1.5, **fields)


async def put_chain(store: Checkpointer, thread_id: str, ids: list[str]) -> None:
    """Put ``ids`` as one linear history, each the parent of the next."""
    parent: str | None = None
    for step, cid in enumerate(ids):
        await store.put(make_cp(thread_id, cid, parent, step=step))
        parent = cid


def ids_of(checkpoints: list[Checkpoint]) -> list[str]:
    return [c.checkpoint_id for c in checkpoints]


class CheckpointerContract(abc.ABC):
    """Subclass with ``make_checkpointer`` to run every contract spec on a store."""

    @abc.abstractmethod
    async def make_checkpointer(self, tmp_path: Path) -> Checkpointer:
        """A new, empty store, ready for use (opened if it needs opening)."""

    @abc.abstractmethod
    async def make_checkpointer_with_lease_ttl(
        self, tmp_path: Path, lease_ttl: float
    ) -> Checkpointer:
        """Like ``make_checkpointer``, with leases lasting ``lease_ttl`` seconds."""

    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[Checkpointer]:
        store = await self.make_checkpointer(tmp_path)
        try:
            yield store
        finally:
            await store.aclose()

    # ----------------------------------------------------------------- put and get

    async def test_it_is_a_checkpointer(self, store: Checkpointer) -> None:
        assert isinstance(store, Checkpointer)

    async def test_get_without_id_returns_the_latest_checkpoint(self, store: Checkpointer) -> None:
        await put_chain(store, "t", ["c1", "c2", "c3"])
        latest = await store.get("t")
        assert latest is not None
        assert latest.checkpoint_id == "c3"
        assert latest.parent_id == "c2"

    async def test_get_by_id_returns_that_checkpoint_not_the_latest(
        self, store: Checkpointer
    ) -> None:
        await put_chain(store, "t", ["c1", "c2", "c3"])
        found = await store.get("t", "c2")
        assert found == make_cp("t", "c2", "c1", step=1)

    async def test_every_field_round_trips(self, store: Checkpointer) -> None:
        await store.put(make_cp("t", "c0", snapshot={"values": {}, "outputs": {}}))
        saved = Checkpoint(
            "t",
            "c1",
            "c0",
            step=7,
            created_at=1234.25,
            writes=((("a", {"x": 1}), ("b", {"y": [1, 2]})), (("c", {"z": None}),)),
            snapshot={"values": {"x": 1, "y": [1, 2], "z": None}, "outputs": {"a": "ok"}},
            cursor={"next": ["d"], "pass": 2},
            metadata={"source": "loop", "nested": {"k": [True, 1.5]}},
        )
        await store.put(saved)
        got = await store.get("t", "c1")
        assert got == saved
        assert got is not None
        assert got.is_snapshot

    async def test_a_delta_checkpoint_is_not_a_snapshot(self, store: Checkpointer) -> None:
        await store.put(make_cp("t", "c1", writes=((("a", {"x": 1}),),)))
        got = await store.get("t")
        assert got is not None
        assert got.snapshot is None
        assert not got.is_snapshot

    async def test_unknown_thread_gives_none(self, store: Checkpointer) -> None:
        assert await store.get("nobody") is None
        assert await store.get("nobody", "c1") is None

    async def test_unknown_checkpoint_id_in_a_known_thread_gives_none(
        self, store: Checkpointer
    ) -> None:
        await put_chain(store, "t", ["c1"])
        assert await store.get("t", "c9") is None

    async def test_a_checkpoint_is_not_found_through_another_thread(
        self, store: Checkpointer
    ) -> None:
        await put_chain(store, "t1", ["c1"])
        await put_chain(store, "t2", ["other"])
        assert await store.get("t2", "c1") is None

    async def test_duplicate_id_in_a_thread_raises_and_changes_nothing(
        self, store: Checkpointer
    ) -> None:
        original = make_cp("t", "c1", metadata={"v": "first"})
        await store.put(original)
        with pytest.raises(CheckpointError, match="already exists") as caught:
            await store.put(make_cp("t", "c1", metadata={"v": "second"}))
        assert not isinstance(caught.value, CheckpointNotFoundError)
        assert await store.get("t", "c1") == original
        assert ids_of(await store.history("t")) == ["c1"]

    async def test_parent_must_exist_in_the_thread(self, store: Checkpointer) -> None:
        await put_chain(store, "t", ["c1"])
        with pytest.raises(CheckpointNotFoundError) as caught:
            await store.put(make_cp("t", "c2", "missing"))
        assert (caught.value.thread_id, caught.value.checkpoint_id) == ("t", "missing")
        assert await store.get("t", "c2") is None
        assert ids_of(await store.history("t")) == ["c1"]

    async def test_a_parent_in_another_thread_does_not_count(self, store: Checkpointer) -> None:
        await put_chain(store, "t1", ["c1"])
        with pytest.raises(CheckpointNotFoundError):
            await store.put(make_cp("t2", "c2", "c1"))
        assert await store.get("t2") is None
        assert await store.history("t2") == []

    async def test_the_same_id_may_be_used_in_two_threads(self, store: Checkpointer) -> None:
        await store.put(make_cp("t1", "c1", metadata={"thread": 1}))
        await store.put(make_cp("t2", "c1", metadata={"thread": 2}))
        one, two = await store.get("t1", "c1"), await store.get("t2", "c1")
        assert one is not None
        assert two is not None
        assert (one.metadata, two.metadata) == ({"thread": 1}, {"thread": 2})

    # ----------------------------------------------------------------- history

    async def test_history_is_newest_first(self, store: Checkpointer) -> None:
        await put_chain(store, "t", ["c1", "c2", "c3", "c4"])
        assert ids_of(await store.history("t")) == ["c4", "c3", "c2", "c1"]

    async def test_history_limit_keeps_the_newest(self, store: Checkpointer) -> None:
        await put_chain(store, "t", ["c1", "c2", "c3", "c4"])
        assert ids_of(await store.history("t", limit=2)) == ["c4", "c3"]
        assert await store.history("t", limit=0) == []
        assert ids_of(await store.history("t", limit=10)) == ["c4", "c3", "c2", "c1"]

    async def test_history_before_keeps_only_older_checkpoints(self, store: Checkpointer) -> None:
        await put_chain(store, "t", ["c1", "c2", "c3", "c4"])
        assert ids_of(await store.history("t", before="c3")) == ["c2", "c1"]
        assert await store.history("t", before="c1") == []
        assert ids_of(await store.history("t", before="c4", limit=1)) == ["c3"]

    async def test_history_before_an_unknown_checkpoint_raises_not_found(
        self, store: Checkpointer
    ) -> None:
        await put_chain(store, "t", ["c1"])
        with pytest.raises(CheckpointNotFoundError) as caught:
            await store.history("t", before="nope")
        assert (caught.value.thread_id, caught.value.checkpoint_id) == ("t", "nope")
        with pytest.raises(CheckpointNotFoundError):
            await store.history("unknown-thread", before="c1")

    async def test_history_of_an_unknown_thread_is_empty(self, store: Checkpointer) -> None:
        assert await store.history("nobody") == []
        assert await store.history("nobody", limit=3) == []

    async def test_history_across_a_fork_is_in_insertion_order(self, store: Checkpointer) -> None:
        await store.put(make_cp("t", "root"))
        await store.put(make_cp("t", "left", "root", step=1))
        await store.put(make_cp("t", "right", "root", step=1))
        await store.put(make_cp("t", "left-2", "left", step=2))
        assert ids_of(await store.history("t")) == ["left-2", "right", "left", "root"]
        assert ids_of(await store.history("t", before="left-2")) == ["right", "left", "root"]
        latest = await store.get("t")
        assert latest is not None
        assert latest.checkpoint_id == "left-2"

    async def test_history_is_per_thread(self, store: Checkpointer) -> None:
        await put_chain(store, "a", ["a1", "a2"])
        await put_chain(store, "b", ["b1"])
        await store.put(make_cp("a", "a3", "a2"))
        assert ids_of(await store.history("a")) == ["a3", "a2", "a1"]
        assert ids_of(await store.history("b")) == ["b1"]

    # ----------------------------------------------------------------- pending writes

    async def test_pending_writes_come_back_oldest_first(self, store: Checkpointer) -> None:
        await put_chain(store, "t", ["c1"])
        for node in ("b", "a", "c"):
            await store.put_write("t", "c1", PendingWrite(node, {"status": "done", "n": node}))
        writes = await store.get_writes("t", "c1")
        assert writes == (
            PendingWrite("b", {"status": "done", "n": "b"}),
            PendingWrite("a", {"status": "done", "n": "a"}),
            PendingWrite("c", {"status": "done", "n": "c"}),
        )

    async def test_saving_a_node_again_replaces_it_and_moves_it_last(
        self, store: Checkpointer
    ) -> None:
        await put_chain(store, "t", ["c1"])
        await store.put_write("t", "c1", PendingWrite("a", {"v": 1}))
        await store.put_write("t", "c1", PendingWrite("b", {"v": 2}))
        await store.put_write("t", "c1", PendingWrite("a", {"v": 3}))
        assert await store.get_writes("t", "c1") == (
            PendingWrite("b", {"v": 2}),
            PendingWrite("a", {"v": 3}),
        )

    async def test_pending_writes_belong_to_one_checkpoint_of_one_thread(
        self, store: Checkpointer
    ) -> None:
        await put_chain(store, "t", ["c1", "c2"])
        await put_chain(store, "u", ["c1"])
        await store.put_write("t", "c1", PendingWrite("a", {"at": "t/c1"}))
        await store.put_write("t", "c2", PendingWrite("a", {"at": "t/c2"}))
        await store.put_write("u", "c1", PendingWrite("a", {"at": "u/c1"}))
        assert await store.get_writes("t", "c1") == (PendingWrite("a", {"at": "t/c1"}),)
        assert await store.get_writes("t", "c2") == (PendingWrite("a", {"at": "t/c2"}),)
        assert await store.get_writes("u", "c1") == (PendingWrite("a", {"at": "u/c1"}),)

    async def test_get_writes_of_unknown_checkpoint_or_thread_is_empty(
        self, store: Checkpointer
    ) -> None:
        await put_chain(store, "t", ["c1"])
        assert await store.get_writes("t", "c1") == ()
        assert await store.get_writes("t", "nope") == ()
        assert await store.get_writes("nobody", "c1") == ()

    async def test_put_write_needs_the_checkpoint_in_that_thread(self, store: Checkpointer) -> None:
        await put_chain(store, "t", ["c1"])
        with pytest.raises(CheckpointNotFoundError) as caught:
            await store.put_write("t", "c9", PendingWrite("a", {}))
        assert (caught.value.thread_id, caught.value.checkpoint_id) == ("t", "c9")
        with pytest.raises(CheckpointNotFoundError):
            await store.put_write("other", "c1", PendingWrite("a", {}))
        assert await store.get_writes("t", "c9") == ()
        assert await store.get_writes("other", "c1") == ()

    # ----------------------------------------------------------------- delete

    async def test_delete_thread_removes_its_checkpoints_and_writes_only(
        self, store: Checkpointer
    ) -> None:
        await put_chain(store, "gone", ["c1", "c2"])
        await put_chain(store, "kept", ["c1", "c2"])
        await store.put_write("gone", "c2", PendingWrite("a", {"v": 1}))
        await store.put_write("kept", "c2", PendingWrite("a", {"v": 2}))
        await store.delete_thread("gone")
        assert await store.get("gone") is None
        assert await store.get("gone", "c1") is None
        assert await store.history("gone") == []
        assert await store.get_writes("gone", "c2") == ()
        assert ids_of(await store.history("kept")) == ["c2", "c1"]
        assert await store.get_writes("kept", "c2") == (PendingWrite("a", {"v": 2}),)

    async def test_a_deleted_thread_starts_afresh(self, store: Checkpointer) -> None:
        await put_chain(store, "t", ["c1", "c2"])
        await store.put_write("t", "c1", PendingWrite("a", {"old": True}))
        await store.delete_thread("t")
        await put_chain(store, "t", ["c1"])
        assert ids_of(await store.history("t")) == ["c1"]
        assert await store.get_writes("t", "c1") == ()

    async def test_deleting_an_unknown_thread_is_a_no_op(self, store: Checkpointer) -> None:
        await put_chain(store, "t", ["c1"])
        await store.delete_thread("nobody")
        assert ids_of(await store.history("t")) == ["c1"]

    # ----------------------------------------------------------------- values

    async def test_returned_values_are_equal_copies_never_the_saved_objects(
        self, store: Checkpointer
    ) -> None:
        values: dict[str, Any] = {"items": [1, 2], "inner": {"k": "v"}}
        saved = make_cp("t", "c1", snapshot={"values": values, "outputs": {}})
        await store.put(saved)
        values["items"].append(3)  # the caller keeps mutating what it saved
        got = await store.get("t")
        assert got is not None
        assert got.snapshot == {"values": {"items": [1, 2], "inner": {"k": "v"}}, "outputs": {}}
        assert got.snapshot is not saved.snapshot
        got.snapshot["values"]["inner"]["k"] = "changed"
        again = await store.get("t", "c1")
        assert again is not None
        assert again.snapshot is not None
        assert again.snapshot["values"]["inner"] == {"k": "v"}

    async def test_pending_write_payloads_are_copies_too(self, store: Checkpointer) -> None:
        await put_chain(store, "t", ["c1"])
        payload: dict[str, Any] = {"update": {"hits": [1]}}
        await store.put_write("t", "c1", PendingWrite("a", payload))
        payload["update"]["hits"].append(2)
        (got,) = await store.get_writes("t", "c1")
        assert got.payload == {"update": {"hits": [1]}}
        got.payload["update"]["hits"].append(9)
        (again,) = await store.get_writes("t", "c1")
        assert again.payload == {"update": {"hits": [1]}}

    async def test_tuples_survive_a_round_trip(self, store: Checkpointer) -> None:
        values = {"pair": (1, "a"), "nested": [(1, (2, 3))], "int_keys": {1: "one"}}
        await store.put(make_cp("t", "c1", snapshot={"values": values, "outputs": {}}))
        await store.put_write("t", "c1", PendingWrite("a", {"update": {"pair": (4, 5)}}))
        got = await store.get("t")
        assert got is not None
        assert got.snapshot is not None
        assert got.snapshot["values"] == values
        assert type(got.snapshot["values"]["pair"]) is tuple
        (write,) = await store.get_writes("t", "c1")
        assert write.payload == {"update": {"pair": (4, 5)}}
        assert type(write.payload["update"]["pair"]) is tuple

    async def test_sets_survive_a_round_trip(self, store: Checkpointer) -> None:
        values = {"tags": {"a", "b"}, "frozen": frozenset({1, 2})}
        await store.put(make_cp("t", "c1", snapshot={"values": values, "outputs": {}}))
        got = await store.get("t")
        assert got is not None
        assert got.snapshot is not None
        assert got.snapshot["values"] == values
        assert type(got.snapshot["values"]["tags"]) is set
        assert type(got.snapshot["values"]["frozen"]) is frozenset

    async def test_an_unstorable_value_in_put_raises_and_stores_nothing(
        self, store: Checkpointer
    ) -> None:
        await put_chain(store, "t", ["c1"])
        bad = make_cp("t", "c2", "c1", snapshot={"values": {"conn": object()}, "outputs": {}})
        with pytest.raises(SerializationError) as caught:
            await store.put(bad)
        assert "conn" in caught.value.path
        assert await store.get("t", "c2") is None
        assert ids_of(await store.history("t")) == ["c1"]
        assert await store.get("fresh") is None
        with pytest.raises(SerializationError):
            await store.put(make_cp("fresh", "c1", metadata={"lock": asyncio.Lock()}))
        assert await store.get("fresh") is None

    async def test_an_unstorable_pending_write_raises_and_keeps_the_old_one(
        self, store: Checkpointer
    ) -> None:
        await put_chain(store, "t", ["c1"])
        await store.put_write("t", "c1", PendingWrite("a", {"v": 1}))
        with pytest.raises(SerializationError):
            await store.put_write("t", "c1", PendingWrite("a", {"v": object()}))
        with pytest.raises(SerializationError):
            await store.put_write("t", "c1", PendingWrite("b", {"v": object()}))
        assert await store.get_writes("t", "c1") == (PendingWrite("a", {"v": 1}),)

    # ----------------------------------------------------------------- batches

    async def test_a_batch_stores_a_chain_and_its_writes_in_order(
        self, store: Checkpointer
    ) -> None:
        assert isinstance(store, BatchCheckpointer)
        await put_chain(store, "t", ["c0"])
        await store.put_many(
            [
                make_cp("t", "c1", "c0", step=1),
                WriteAt("t", "c1", PendingWrite("a", {"v": 1})),
                WriteAt("t", "c0", PendingWrite("late", {"v": 0})),
                make_cp("t", "c2", "c1", step=2, snapshot={"values": {"x": 2}, "outputs": {}}),
                WriteAt("t", "c1", PendingWrite("b", {"v": 2})),
                WriteAt("t", "c1", PendingWrite("a", {"v": 3})),
            ]
        )
        assert ids_of(await store.history("t")) == ["c2", "c1", "c0"]
        assert await store.get_writes("t", "c1") == (
            PendingWrite("b", {"v": 2}),
            PendingWrite("a", {"v": 3}),
        )
        assert await store.get_writes("t", "c0") == (PendingWrite("late", {"v": 0}),)
        head = await store.get("t")
        assert head is not None
        assert head.snapshot == {"values": {"x": 2}, "outputs": {}}
        await store.put_many([])
        assert ids_of(await store.history("t")) == ["c2", "c1", "c0"]

    async def test_a_batch_with_a_missing_parent_stores_none_of_it(
        self, store: Checkpointer
    ) -> None:
        assert isinstance(store, BatchCheckpointer)
        await put_chain(store, "t", ["c0"])
        with pytest.raises(CheckpointNotFoundError, match="'nope'") as caught:
            await store.put_many(
                [
                    make_cp("t", "c1", "c0"),
                    WriteAt("t", "c0", PendingWrite("a", {"v": 1})),
                    make_cp("t", "c2", "nope"),
                ]
            )
        assert caught.value.checkpoint_id == "nope"
        assert ids_of(await store.history("t")) == ["c0"]
        assert await store.get_writes("t", "c0") == ()

    async def test_a_batch_repeating_an_id_stores_none_of_it(self, store: Checkpointer) -> None:
        assert isinstance(store, BatchCheckpointer)
        await put_chain(store, "t", ["c0"])
        for batch in (
            [make_cp("t", "c1", "c0"), make_cp("t", "c0")],
            [make_cp("t", "c1", "c0"), make_cp("t", "c1", "c0")],
        ):
            with pytest.raises(CheckpointError, match="already exists") as caught:
                await store.put_many(batch)
            assert type(caught.value) is CheckpointError
            assert ids_of(await store.history("t")) == ["c0"]

    async def test_a_write_before_its_checkpoint_in_a_batch_fails(
        self, store: Checkpointer
    ) -> None:
        # In order, one by one, the write would find no checkpoint: so must the batch.
        assert isinstance(store, BatchCheckpointer)
        with pytest.raises(CheckpointNotFoundError, match="'c1'"):
            await store.put_many(
                [WriteAt("t", "c1", PendingWrite("a", {"v": 1})), make_cp("t", "c1")]
            )
        assert await store.get("t") is None
        with pytest.raises(CheckpointNotFoundError, match="'c9'"):
            await store.put_many([make_cp("t", "c1"), WriteAt("t", "c9", PendingWrite("a", {}))])
        assert await store.get("t") is None

    async def test_an_unstorable_value_in_a_batch_stores_none_of_it(
        self, store: Checkpointer
    ) -> None:
        assert isinstance(store, BatchCheckpointer)
        with pytest.raises(SerializationError):
            await store.put_many(
                [make_cp("t", "c1"), WriteAt("t", "c1", PendingWrite("a", {"v": object()}))]
            )
        assert await store.get("t") is None

    # ----------------------------------------------------------------- leases

    async def test_a_lease_is_taken_renewed_by_its_holder_and_released(
        self, store: Checkpointer
    ) -> None:
        assert isinstance(store, LeasingCheckpointer)
        before = time.time()
        lease = await store.acquire_lease("t", "run-a")
        assert (lease.thread_id, lease.holder) == ("t", "run-a")
        assert before + lease.ttl <= lease.expires_at <= time.time() + lease.ttl

        renewed = await store.acquire_lease("t", "run-a")
        assert renewed.holder == "run-a"
        assert renewed.expires_at >= lease.expires_at

        await store.release_lease("t", "run-a")
        assert (await store.acquire_lease("t", "run-b")).holder == "run-b"

    async def test_a_held_lease_refuses_another_holder_and_names_it(
        self, store: Checkpointer
    ) -> None:
        assert isinstance(store, LeasingCheckpointer)
        lease = await store.acquire_lease("t", "run-a")

        with pytest.raises(ThreadBusyError) as caught:
            await store.acquire_lease("t", "run-b")

        err = caught.value
        assert (err.thread_id, err.holder, err.code) == ("t", "run-a", "thread-busy")
        assert err.expires_at == pytest.approx(lease.expires_at)
        assert "run-a" in str(err)
        # Refusing changed nothing: the holder still renews, the other is still refused.
        assert (await store.acquire_lease("t", "run-a")).holder == "run-a"
        with pytest.raises(ThreadBusyError):
            await store.acquire_lease("t", "run-b")

    async def test_only_the_holder_releases_a_lease(self, store: Checkpointer) -> None:
        assert isinstance(store, LeasingCheckpointer)
        await store.acquire_lease("t", "run-a")

        await store.release_lease("t", "run-b")
        await store.release_lease("nobody-leased-this", "run-a")

        with pytest.raises(ThreadBusyError):
            await store.acquire_lease("t", "run-b")

    async def test_threads_are_leased_independently(self, store: Checkpointer) -> None:
        assert isinstance(store, LeasingCheckpointer)
        await store.acquire_lease("t1", "run-a")

        assert (await store.acquire_lease("t2", "run-b")).holder == "run-b"
        assert (await store.acquire_lease("t1/x", "run-c")).holder == "run-c"

    async def test_an_expired_lease_is_taken_over(self, tmp_path: Path) -> None:
        # Long enough that run-b's lease outlives the three calls after it was taken,
        # even on a busy machine.
        ttl = 1.0
        store = await self.make_checkpointer_with_lease_ttl(tmp_path, ttl)
        try:
            assert isinstance(store, LeasingCheckpointer)
            lease = await store.acquire_lease("t", "run-a")
            assert lease.ttl == ttl

            await asyncio.sleep(max(0.0, lease.expires_at - time.time()) + 0.05)

            assert (await store.acquire_lease("t", "run-b")).holder == "run-b"
            # The old holder lost it: it cannot renew, and its release changes nothing.
            with pytest.raises(ThreadBusyError):
                await store.acquire_lease("t", "run-a")
            await store.release_lease("t", "run-a")
            with pytest.raises(ThreadBusyError):
                await store.acquire_lease("t", "run-c")
        finally:
            await store.aclose()

    async def test_of_many_racing_takers_exactly_one_gets_the_lease(
        self, store: Checkpointer
    ) -> None:
        assert isinstance(store, LeasingCheckpointer)
        outcomes = await asyncio.gather(
            *(store.acquire_lease("t", f"run-{i}") for i in range(20)), return_exceptions=True
        )

        won = [o for o in outcomes if isinstance(o, ThreadLease)]
        refused = [o for o in outcomes if isinstance(o, ThreadBusyError)]
        assert (len(won), len(refused)) == (1, 19), outcomes
        assert {o.holder for o in refused} == {won[0].holder}

    # ----------------------------------------------------------------- concurrency

    async def test_concurrent_puts_on_distinct_threads_lose_nothing(
        self, store: Checkpointer
    ) -> None:
        threads, per_thread = 200, 5

        async def run(thread: int) -> None:
            await put_chain(store, f"t{thread}", [f"c{i}" for i in range(per_thread)])
            await store.put_write(f"t{thread}", f"c{per_thread - 1}", PendingWrite("n", {}))

        await asyncio.gather(*(run(t) for t in range(threads)))
        expected = [f"c{i}" for i in reversed(range(per_thread))]
        for thread in range(threads):
            history = await store.history(f"t{thread}")
            assert ids_of(history) == expected, f"thread t{thread}"
            assert [c.step for c in history] == list(reversed(range(per_thread)))
            assert len(await store.get_writes(f"t{thread}", expected[0])) == 1

    async def test_concurrent_puts_of_one_id_store_exactly_one(self, store: Checkpointer) -> None:
        attempts = [make_cp("t", "same", metadata={"attempt": i}) for i in range(10)]
        results = await asyncio.gather(*(store.put(c) for c in attempts), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        assert len(failures) == 9
        assert all(type(f) is CheckpointError for f in failures)
        got = await store.get("t")
        assert got is not None
        assert got == attempts[results.index(None)]
        assert ids_of(await store.history("t")) == ["same"]

    async def test_concurrent_writes_of_many_nodes_are_all_kept(self, store: Checkpointer) -> None:
        await put_chain(store, "t", ["c1"])
        nodes = [f"n{i}" for i in range(50)]
        await asyncio.gather(
            *(store.put_write("t", "c1", PendingWrite(n, {"n": n})) for n in nodes)
        )
        writes = await store.get_writes("t", "c1")
        assert sorted(w.node for w in writes) == sorted(nodes)
        assert all(w.payload == {"n": w.node} for w in writes)

    # ----------------------------------------------------------------- lifecycle

    async def test_aclose_may_be_called_twice(self, store: Checkpointer) -> None:
        await put_chain(store, "t", ["c1"])
        await store.aclose()
        await store.aclose()
