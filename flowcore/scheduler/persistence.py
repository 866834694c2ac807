"""Threads on a checkpointer: loading a saved point and writing new ones.

The engine decides *what* a checkpoint holds; this module rebuilds state from
a chain of checkpoints, and writes checkpoints through the runtime's
:class:`~flowcore.runtime.durability.DurabilityWriter`, which applies the
durability the run asked for (``sync``, ``async`` or ``exit``; see
:mod:`flowcore.runtime.durability`). :class:`CheckpointStore` is that
writer's port onto a :class:`Checkpointer`; :class:`CheckpointWriter` adds
what a native checkpoint needs under ``exit`` (the checkpoints held since the
last stored one become one, with the full state).

A checkpoint stores only the writes since its parent. It also stores a full
snapshot when the writes since the last snapshot outweigh that snapshot (or
after many checkpoints), so storage grows linearly with steps while loading
replays at most about one state's worth of writes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flowcore.checkpoint.protocol import (
    BatchCheckpointer,
    Checkpoint,
    Checkpointer,
    PendingWrite,
    StoreItem,
    WriteAt,
    WriteGroup,
)
from flowcore.errors import CheckpointNotFoundError, CheckpointStoreError
from flowcore.runtime.durability import MAX_QUEUED_ITEMS, Durability, DurabilityWriter
from flowcore.state.schema import StateSchema

__all__ = [
    "MAX_DELTAS_PER_SNAPSHOT",
    "MAX_QUEUED_ITEMS",
    "CheckpointStore",
    "CheckpointWriter",
    "Durability",
    "SavedPoint",
    "SnapshotPolicy",
    "load_point",
    "new_checkpoint_id",
]

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


class CheckpointStore:
    """The runtime writer's port onto a native :class:`Checkpointer` (one thread).

    Tracks ``persisted_id``, the newest checkpoint known to be stored: the
    parent an ``exit`` run's one stored checkpoint names.

    Example:
        >>> # port = CheckpointStore(store, "thread-1", None)
    """

    def __init__(self, store: Checkpointer, thread_id: str, persisted_id: str | None) -> None:
        self.store = store
        self.thread_id = thread_id
        self.persisted_id = persisted_id

    async def save_checkpoint(self, item: Checkpoint) -> None:
        """Store one checkpoint."""
        await self.store.put(item)
        self.persisted_id = item.checkpoint_id

    async def save_writes(self, item: WriteAt) -> None:
        """Store one node's write against the checkpoint it names."""
        await self.store.put_write(item.thread_id, item.checkpoint_id, item.write)

    async def save_many(self, items: Sequence[StoreItem]) -> None:
        """Store ``items`` in one go, on a store that can (else refuse: one by one)."""
        if not isinstance(self.store, BatchCheckpointer):
            raise CheckpointStoreError("this store has no put_many: store one item at a time")
        await self.store.put_many(items)
        for item in reversed(items):
            if isinstance(item, Checkpoint):
                self.persisted_id = item.checkpoint_id
                break


class CheckpointWriter:
    """Writes one native run's checkpoints and node writes with the chosen durability.

    The mode rules are the runtime's :class:`DurabilityWriter`; this adds
    what a native checkpoint needs under ``exit``: the checkpoints made in
    between are merged into one, carrying the head's full snapshot, whose
    parent is ``persisted_id`` (the newest checkpoint known to be stored).

    Example:
        >>> # writer = CheckpointWriter(store, "thread-1", "sync", None)
        >>> # await writer.checkpoint(cp); await writer.close(snapshot)
    """

    __slots__ = ("durability", "port", "thread_id", "writer")

    def __init__(
        self,
        store: Checkpointer,
        thread_id: str,
        durability: Durability,
        persisted_id: str | None,
    ) -> None:
        self.thread_id = thread_id
        self.durability: Durability = durability
        self.port = CheckpointStore(store, thread_id, persisted_id)
        self.writer: DurabilityWriter[Checkpoint, WriteAt] = DurabilityWriter(self.port, durability)

    @property
    def store(self) -> Checkpointer:
        """The checkpointer this run's thread lives on."""
        return self.port.store

    @property
    def persisted_id(self) -> str | None:
        """The newest checkpoint known to be in the store."""
        return self.port.persisted_id

    async def checkpoint(self, cp: Checkpoint) -> None:
        """Store a new checkpoint (or hold it, in ``exit`` mode)."""
        await self.writer.checkpoint(cp)

    async def node_write(self, checkpoint_id: str, write: PendingWrite) -> None:
        """Store one node's write against the checkpoint its superstep started from."""
        # Keyed by node under "exit": a node's newest write is the one kept.
        await self.writer.writes(WriteAt(self.thread_id, checkpoint_id, write), key=write.node)

    async def close(self, head_snapshot: Mapping[str, Any] | None = None) -> None:
        """Store whatever is still held or queued; then stop the background task.

        In ``exit`` mode the newest held checkpoint is stored alone, carrying
        ``head_snapshot`` (the full state at that checkpoint), with the newest
        stored checkpoint as its parent.
        """

        def merged(head: Checkpoint) -> Checkpoint:
            if head_snapshot is None:
                raise AssertionError("exit durability needs the head snapshot")  # pragma: no cover
            return Checkpoint(
                thread_id=head.thread_id,
                checkpoint_id=head.checkpoint_id,
                parent_id=self.port.persisted_id,
                step=head.step,
                created_at=head.created_at,
                writes=(),
                snapshot=head_snapshot,
                cursor=head.cursor,
                metadata=head.metadata,
            )

        await self.writer.close(merged)
