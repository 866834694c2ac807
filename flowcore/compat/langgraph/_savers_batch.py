"""Batched saving for one compat run: LangGraph's ``put``/``put_writes`` as records
handed to the runtime's :class:`~flowcore.runtime.durability.DurabilityWriter`.

The layout is :mod:`~flowcore.compat.langgraph._savers_core`'s; this is the port the
runtime writer stores through on flowcore's own savers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flowcore.checkpoint import (
    BatchCheckpointer,
    Checkpoint,
    PendingWrite,
    StoreItem,
    WriteAt,
)
from flowcore.checkpoint.protocol import ReleasingBatchCheckpointer
from flowcore.compat.langgraph._savers import RunnableConfig
from flowcore.compat.langgraph._savers_core import SaverCore
from flowcore.compat.langgraph._savers_layout import (
    channel_versions,
    holders,
)
from flowcore.compat.langgraph._savers_records import (
    _config,
    _configurable,
    _merged_writes,
    _record,
    _round_trips,
    _stored_entries,
    _thread_key,
    writes_target,
)
from flowcore.errors import (
    CheckpointError,
)
from flowcore.runtime.durability import Durability, DurabilityWriter
from flowcore.runtime.leases import LeaseKeeper

__all__ = [
    "SaveBatch",
]


# ---------------------------------------------------------------------- batched saving


class _Built:
    """A checkpoint a batch built, as the batch's next put and put_writes read it back."""

    __slots__ = ("blob_at", "checkpoint_id", "entries", "generation", "versions")

    def __init__(
        self, checkpoint_id: str, versions: Mapping[str, Any], blob_at: dict[str, str], gen: int
    ) -> None:
        self.checkpoint_id = checkpoint_id
        self.versions = versions
        self.blob_at = blob_at
        self.generation = gen
        # Per task: the write entries queued against this checkpoint so far.
        self.entries: dict[str, dict[int, dict[str, Any]]] = {}


class SaveBatch:
    """The runtime writer's port onto flowcore's own savers, for one run.

    ``put`` and ``put_writes`` build the same records :class:`SaverCore`
    stores, but take the parent and the task's earlier writes from what this
    batch built last instead of reading the store, and hand the records to
    ``writer``, the runtime's :class:`DurabilityWriter` (``"async"``: queued
    and stored in the background in batches, ``save_many`` being one
    transaction on SQLite; ``"sync"``: stored before the run goes on, a
    step's riding writes committed with its checkpoint). So a run waits for
    neither its store's reads nor, under ``async``, its commits. When the
    batch did not build what it needs (the run's first checkpoint, writes
    against a loaded one, maintenance in between) it lets the queue reach the
    store and reads from it, as ``SaverCore`` does. Every ``SaverCore``
    operation first waits for the queues of the open batches, so nothing
    reads around them.

    A failed store write is raised by the next ``put``, ``put_writes`` or
    :meth:`close`; what was queued before it is stored, what came after is not.

    Example:
        >>> # batch = SaveBatch(core); config = await batch.put(...); await batch.close()
    """

    def __init__(self, core: SaverCore, durability: Durability = "async") -> None:
        self.core = core
        self._built: dict[str, _Built] = {}
        self.writer: DurabilityWriter[Checkpoint, WriteAt] = DurabilityWriter(
            self, durability, group_commit=True
        )
        # The run's lease while close() stores the last batch (see close).
        self._ride: LeaseKeeper | None = None
        core.batches.add(self)

    def use(self, durability: Durability) -> None:
        """Save under ``durability`` (``"sync"`` or ``"async"``); call before the first save."""
        if durability == "exit":
            raise ValueError("a SaveBatch saves under 'sync' or 'async'; 'exit' saves at the end")
        # Parallel tasks' writes saved together share one commit, under "sync" too.
        self.writer = DurabilityWriter(self, durability, group_commit=True)

    def _remembered(self, key: str, checkpoint_id: str) -> _Built | None:
        built = self._built.get(key)
        if (
            built is None
            or built.checkpoint_id != checkpoint_id
            or built.generation != self.core.generation
        ):
            return None
        return built

    async def put(
        self,
        config: RunnableConfig,
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> RunnableConfig:
        """Save ``checkpoint`` as the child of the checkpoint ``config`` names; its config."""
        if self.writer.failure is not None:
            self._raise_failure()
        conf = _configurable(config, "put")
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns") or "")
        key = _thread_key(thread_id, ns)
        cid = str(checkpoint["id"])
        parent_id = conf.get("checkpoint_id") or None
        parent_id = None if parent_id is None else str(parent_id)
        store = self.core.store
        if parent_id == cid or self._built.get(key, _NOT_BUILT).checkpoint_id == cid:
            # Saved again under the same id: the store decides, as for a single put.
            await self.flush()
            self._raise_failure()
            self._built.pop(key, None)
            return await self.core.put(config, checkpoint, metadata, new_versions)
        stored_parent: str | None = None
        parent_versions: Mapping[str, Any] = {}
        parent_blobs: Mapping[str, str] = {}
        if parent_id is not None:
            built = self._remembered(key, parent_id)
            if built is not None:
                stored_parent = parent_id
                parent_versions, parent_blobs = built.versions, built.blob_at
            else:
                await self.flush()
                self._raise_failure()
                parent = await store.get(key, parent_id)
                if parent is not None:
                    stored_parent = parent.checkpoint_id
                    parent_versions, parent_blobs = channel_versions(parent), holders(parent)
        record, blob_at, shadows = _record(
            key,
            config,
            checkpoint,
            metadata,
            new_versions,
            parent_id,
            stored_parent,
            parent_versions,
            parent_blobs,
            self.core.shadows.get(key),
        )
        versions = checkpoint.get("channel_versions") or {}
        if _round_trips(versions):
            self._built[key] = _Built(cid, dict(versions), blob_at, self.core.generation)
        else:
            # The next put compares versions as a single put reads them back from the store.
            self._built.pop(key, None)
        await self.writer.checkpoint(record)
        self.core.shadows.remember(key, shadows)
        return _config(thread_id, ns, cid)

    async def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
        *,
        rides: bool = False,
    ) -> None:
        """Save a task's writes against the checkpoint ``config`` names.

        ``rides``: under ``"sync"``, the writes wait for the checkpoint that
        follows and are committed with it (the last task of a clean step).
        """
        if self.writer.failure is not None:
            self._raise_failure()
        thread_id, ns, cid = writes_target(config)
        key = _thread_key(thread_id, ns)
        built = self._remembered(key, cid)
        if built is not None:
            entries = dict(built.entries.get(task_id, {}))
        else:
            await self.flush()
            self._raise_failure()
            entries = _stored_entries(await self.core.store.get_writes(key, cid), task_id)
        if _merged_writes(entries, writes, task_path):
            if built is not None:
                built.entries[task_id] = entries
            payload = {"writes": [entries[i] for i in sorted(entries)]}
            item = WriteAt(key, cid, PendingWrite(task_id, payload))
            await self.writer.writes(item, rides=rides)

    async def flush(self) -> None:
        """Wait until everything queued so far was handed to the store (failures are kept)."""
        await self.writer.drain()

    async def close(self, ride: LeaseKeeper | None = None) -> None:
        """Store what is queued, stop batching, and raise a store failure if there was one.

        ``ride``: the run's lease, when nothing else of the run is written
        after this batch. The last transaction of the batch (if one is still
        to be made) gives it back too, on a store that can
        (:class:`~flowcore.checkpoint.protocol.ReleasingBatchCheckpointer`),
        saving the release's own commit. If that transaction fails, the
        lease is still held and ``ride`` releases it on its own.
        """
        self._ride = ride
        try:
            await self.writer.close()
        finally:
            self._ride = None
            self.core.batches.discard(self)
            self._built.clear()

    def _raise_failure(self) -> None:
        self.writer.raise_failure()

    # ------------------------------------------ the runtime writer's DurableStore port
    async def save_checkpoint(self, item: Checkpoint) -> None:
        """Store one checkpoint record (as :meth:`SaverCore.put` stores it)."""
        await self.core._store_checkpoint(item)

    async def save_writes(self, item: WriteAt) -> None:
        """Store one task's writes record."""
        await self.core.store.put_write(item.thread_id, item.checkpoint_id, item.write)

    async def save_many(self, items: Sequence[StoreItem]) -> None:
        """Store records in one go (one transaction), on a store that can; else refuse."""
        store = self.core.store
        if not isinstance(store, BatchCheckpointer):
            raise CheckpointError("this store has no put_many: store one record at a time")
        # Set by close(): no save is queued after close begins, so this batch is the last.
        ride, self._ride = self._ride, None
        if ride is not None and isinstance(store, ReleasingBatchCheckpointer):
            names = ride.hand_over()
            if names is not None:
                thread_id, holder = names
                await store.put_many_and_release(items, _thread_key(thread_id, ""), holder)
                ride.handed_back()
                return
        await store.put_many(items)


_NOT_BUILT = _Built("", {}, {}, -1)
