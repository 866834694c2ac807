"""Threads on a checkpointer: loading a saved point and writing new ones.

The engine decides *what* a checkpoint holds; this module rebuilds state from
a chain of checkpoints and writes checkpoints with the durability the run
asked for:

* ``sync``: every checkpoint and node write is stored before the run goes on;
* ``async``: stored by a background task while the run goes on. What the
  run saves while the store is busy is queued and handed over as one batch
  (one transaction on SQLite: group commit), in order. The queue holds at
  most ``MAX_QUEUED_ITEMS`` items: a run that outpaces its store waits there,
  so memory stays bounded;
* ``exit``: kept in memory and stored once, when the run ends however it
  ends (completed, failed, interrupted or cancelled).

A checkpoint stores only the writes since its parent. It also stores a full
snapshot when the writes since the last snapshot outweigh that snapshot (or
after many checkpoints), so storage grows linearly with steps while loading
replays at most about one state's worth of writes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from flowcore.checkpoint.batching import MAX_QUEUED_ITEMS, BatchQueue
from flowcore.checkpoint.protocol import (
    Checkpoint,
    Checkpointer,
    PendingWrite,
    StoreItem,
    WriteAt,
    WriteGroup,
)
from flowcore.errors import CheckpointNotFoundError, CheckpointStoreError
from flowcore.state.schema import StateSchema

__all__ = [
    "MAX_DELTAS_PER_SNAPSHOT",
    "MAX_QUEUED_ITEMS",
    "CheckpointWriter",
    "Durability",
    "SavedPoint",
    "SnapshotPolicy",
    "load_point",
    "new_checkpoint_id",
]

Durability = Literal["sync", "async", "exit"]
"""When checkpoints reach the store; see the module docstring."""

MAX_DELTAS_PER_SNAPSHOT = 200
"""Checkpoints allowed between two snapshots, whatever their weight."""


def new_checkpoint_id() -> str:
    """A fresh checkpoint id: time-ordered hex, unique across processes.

    Example:
        >>> len(new_checkpoint_id())
        32
    """
    # Nanosecond time first so ids sort roughly by creation, random tail for uniqueness.
    return f"{time.time_ns():016x}{os.urandom(8).hex()}"


@dataclass(slots=True)
class SavedPoint:
    """A checkpoint rebuilt into state: what a resumed run starts from."""

    checkpoint: Checkpoint
    values: dict[str, Any]
    outputs: dict[str, Any]
    pending: dict[str, Mapping[str, Any]]
    weight_since_snapshot: int
    snapshot_weight: int
    deltas_since_snapshot: int


async def load_point(
    store: Checkpointer,
    schema: StateSchema,
    thread_id: str,
    checkpoint_id: str | None = None,
) -> SavedPoint | None:
    """Load a checkpoint (the latest if no id) and replay its writes into state.

    Returns None when the thread has no checkpoint at all.

    Example:
        >>> # point = await load_point(store, compiled.schema, "thread-1")
    """
    head = await store.get(thread_id, checkpoint_id)
    if head is None:
        if checkpoint_id is None:
            return None
        raise CheckpointNotFoundError(
            f"checkpoint {checkpoint_id!r} is not in thread {thread_id!r}; list the "
            "thread's checkpoints with get_state_history() to pick one",
            thread_id=thread_id,
            checkpoint_id=checkpoint_id,
        )
    chain = [head]
    while chain[-1].snapshot is None:
        parent_id = chain[-1].parent_id
        parent = None if parent_id is None else await store.get(thread_id, parent_id)
        if parent is None:
            raise CheckpointStoreError(
                f"thread {thread_id!r}: checkpoint {chain[-1].checkpoint_id!r} has no "
                "snapshot and its parent is missing; the stored history is incomplete"
            )
        chain.append(parent)
    base = chain[-1]
    assert base.snapshot is not None
    values = dict(base.snapshot.get("values", {}))
    outputs = dict(base.snapshot.get("outputs", {}))
    weight = 0
    for cp in reversed(chain[:-1]):
        for group in cp.writes:
            values = schema.apply(values, group)
            for node, update in group:
                outputs[node] = update
            weight += weigh(group)
    pending = {w.node: w.payload for w in await store.get_writes(thread_id, head.checkpoint_id)}
    return SavedPoint(
        checkpoint=head,
        values=values,
        outputs=outputs,
        pending=pending,
        weight_since_snapshot=weight,
        snapshot_weight=weigh(base.snapshot),
        deltas_since_snapshot=len(chain) - 1,
    )


def weigh(value: Any) -> int:
    """A cheap size estimate of a JSON-like value, in roughly bytes.

    Example:
        >>> weigh({"a": [1, "xyz"]})
        20
    """
    kind = type(value)
    # Exact-type fast paths for what state is usually made of; same figures as below.
    if kind is str:
        return len(value) + 2
    if kind is int or kind is float or kind is bool or value is None:
        return 8
    # Plain loops rather than sum() over generators: weigh runs at every checkpoint.
    if kind is dict:
        total = 2
        for k, v in value.items():
            total += (len(k) + 2 if type(k) is str else weigh(k)) + weigh(v)
        return total
    if kind is list or kind is tuple:
        total = 2
        for v in value:
            total += weigh(v)
        return total
    if isinstance(value, str | bytes):
        return len(value) + 2
    if isinstance(value, Mapping):
        return 2 + sum(weigh(k) + weigh(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return 2 + sum(weigh(v) for v in value)
    return 8


@dataclass(slots=True)
class SnapshotPolicy:
    """Decides when a checkpoint carries a full snapshot (see module docstring)."""

    snapshot_weight: int = 0
    weight_since: int = 0
    deltas_since: int = 0
    force: bool = True

    def wants_snapshot(self, groups: Sequence[WriteGroup]) -> bool:
        """Account for a new checkpoint's writes; True if it should be a snapshot."""
        for group in groups:
            self.weight_since += weigh(group)
        self.deltas_since += 1
        return (
            self.force
            or self.weight_since >= self.snapshot_weight
            or self.deltas_since >= MAX_DELTAS_PER_SNAPSHOT
        )

    def took_snapshot(self, snapshot: Mapping[str, Any]) -> None:
        """Reset after a snapshot was written."""
        self.snapshot_weight = weigh(snapshot)
        self.weight_since = 0
        self.deltas_since = 0
        self.force = False


@dataclass(slots=True)
class CheckpointWriter:
    """Writes one run's checkpoints and node writes with the chosen durability.

    ``persisted_id`` is the newest checkpoint known to be in the store: in
    ``exit`` mode, the checkpoints made in between are merged into one.
    """

    store: Checkpointer
    thread_id: str
    durability: Durability
    persisted_id: str | None
    _held: list[Checkpoint] = field(default_factory=list)
    _held_writes: dict[str, PendingWrite] = field(default_factory=dict)
    _queue: BatchQueue | None = None

    # ------------------------------------------------------------- writing
    async def checkpoint(self, cp: Checkpoint) -> None:
        """Store a new checkpoint (or hold it, in ``exit`` mode)."""
        if self.durability == "sync":
            await self.store.put(cp)
            self.persisted_id = cp.checkpoint_id
        elif self.durability == "exit":
            self._held.append(cp)
            self._held_writes.clear()
        else:
            await self._batches().add(cp)

    async def node_write(self, checkpoint_id: str, write: PendingWrite) -> None:
        """Store one node's write against the checkpoint its superstep started from."""
        if self.durability == "sync":
            await self.store.put_write(self.thread_id, checkpoint_id, write)
        elif self.durability == "exit":
            self._held_writes[write.node] = write
        else:
            await self._batches().add(WriteAt(self.thread_id, checkpoint_id, write))

    async def close(self, head_snapshot: Mapping[str, Any] | None = None) -> None:
        """Store whatever is still held or queued; then stop the background task.

        In ``exit`` mode the newest held checkpoint is stored alone, carrying
        ``head_snapshot`` (the full state at that checkpoint), with the newest
        stored checkpoint as its parent.
        """
        if self.durability == "exit":
            await self._flush_held(head_snapshot)
        elif self._queue is not None:
            await self._queue.close()

    # ------------------------------------------------------------ internals
    def _batches(self) -> BatchQueue:
        if self._queue is None:
            self._queue = BatchQueue(self.store, self._store_one, self._stored)
        return self._queue

    async def _store_one(self, item: StoreItem) -> None:
        if isinstance(item, WriteAt):
            await self.store.put_write(item.thread_id, item.checkpoint_id, item.write)
        else:
            await self.store.put(item)

    def _stored(self, item: StoreItem) -> None:
        if isinstance(item, Checkpoint):
            self.persisted_id = item.checkpoint_id

    async def _flush_held(self, head_snapshot: Mapping[str, Any] | None) -> None:
        if self._held:
            head = self._held[-1]
            if head_snapshot is None:
                raise AssertionError("exit durability needs the head snapshot")  # pragma: no cover
            merged = Checkpoint(
                thread_id=head.thread_id,
                checkpoint_id=head.checkpoint_id,
                parent_id=self.persisted_id,
                step=head.step,
                created_at=head.created_at,
                writes=(),
                snapshot=head_snapshot,
                cursor=head.cursor,
                metadata=head.metadata,
            )
            await self.store.put(merged)
            self.persisted_id = merged.checkpoint_id
            self._held.clear()
        if self._held_writes and self.persisted_id is not None:
            for write in self._held_writes.values():
                await self.store.put_write(self.thread_id, self.persisted_id, write)
            self._held_writes.clear()
