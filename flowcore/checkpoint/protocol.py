"""The checkpointer port: what a store of checkpoints must do, and the records it keeps.

A *thread* is a named sequence of runs of one graph. Each checkpoint of a
thread records one step forward: the writes applied since its parent (a
delta), now and then a full snapshot so that loading never replays much, and
a cursor saying where the run goes on. While a superstep runs, each node's
result is saved as a :class:`PendingWrite` against the checkpoint the step
started from, so a crash or a failed sibling never makes that node run twice.

The store treats ``writes``, ``snapshot``, ``cursor``, ``metadata`` and
``PendingWrite.payload`` as opaque JSON-like data; the engine owns their
meaning. Every implementation stores values through a serializer, so what
comes back is an equal copy, never the object that was saved.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "BatchCheckpointer",
    "Checkpoint",
    "Checkpointer",
    "LeasingCheckpointer",
    "MaintainableCheckpointer",
    "PendingWrite",
    "ReleasingBatchCheckpointer",
    "StoreItem",
    "ThreadLease",
    "WriteAt",
    "WriteGroup",
]

WriteGroup = Sequence[tuple[str, Mapping[str, Any]]]
"""The writes of one superstep, as ``(node, update)`` pairs in the order applied."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One saved point in a thread's history.

    ``writes`` holds one :data:`WriteGroup` per superstep applied since
    ``parent_id`` (usually exactly one). ``snapshot``, when not None, is the
    complete state at this checkpoint, so loading can start here instead of
    replaying older writes. ``cursor`` says where the run continues; None
    means the run had nothing left to do.

    Example:
        >>> cp = Checkpoint("thread-1", "c1", None, step=0, created_at=0.0,
        ...                 snapshot={"values": {"x": 1}, "outputs": {}})
        >>> cp.is_snapshot
        True
    """

    thread_id: str
    checkpoint_id: str
    parent_id: str | None
    step: int
    created_at: float
    writes: Sequence[WriteGroup] = ()
    snapshot: Mapping[str, Any] | None = None
    cursor: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_snapshot(self) -> bool:
        """True when this checkpoint holds the whole state, not only a delta."""
        return self.snapshot is not None


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """What one node produced in a superstep that has not been checkpointed yet.

    Saved against the checkpoint the superstep started from, under the key
    ``(thread_id, checkpoint_id, node)``; saving again for the same node
    replaces the earlier record.

    Example:
        >>> PendingWrite("search", {"status": "completed", "update": {"hits": 3}}).node
        'search'
    """

    node: str
    payload: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class WriteAt:
    """A node's pending write addressed to its checkpoint: one item of a batch.

    Example:
        >>> WriteAt("thread-1", "c1", PendingWrite("search", {"hits": 3})).checkpoint_id
        'c1'
    """

    thread_id: str
    checkpoint_id: str
    write: PendingWrite


StoreItem = Checkpoint | WriteAt
"""One thing a batch stores: a new checkpoint, or a node write against one."""


@dataclass(frozen=True, slots=True)
class ThreadLease:
    """The right to run a thread, held by one run until ``expires_at`` (Unix time).

    ``holder`` names the run (host, pid and a random part); ``ttl`` is how
    long each take or renewal lasts, so a holder renews well before
    ``expires_at`` while it is alive, and a dead holder's lease lapses.

    Example:
        >>> ThreadLease("thread-1", "web-1:4242:9f2c", expires_at=130.0, ttl=30.0).holder
        'web-1:4242:9f2c'
    """

    thread_id: str
    holder: str
    expires_at: float
    ttl: float


@runtime_checkable
class Checkpointer(Protocol):
    """A durable (or in-memory) store of checkpoints, grouped by thread.

    Every method is a coroutine. Implementations must be safe for many
    concurrent runs on distinct threads within one event loop.

    Example:
        >>> from flowcore.checkpoint import InMemoryCheckpointer
        >>> isinstance(InMemoryCheckpointer(), Checkpointer)
        True
    """

    async def put(self, checkpoint: Checkpoint) -> None:
        """Store a new checkpoint.

        Raises :class:`~flowcore.errors.CheckpointError` if its id already
        exists in the thread, :class:`~flowcore.errors.CheckpointNotFoundError`
        if ``parent_id`` is not a checkpoint of the same thread, and
        :class:`~flowcore.errors.SerializationError` if a value cannot be
        stored; in each case nothing is written.
        """
        ...

    async def put_write(self, thread_id: str, checkpoint_id: str, write: PendingWrite) -> None:
        """Store (or replace) one node's pending write against a checkpoint.

        Raises :class:`~flowcore.errors.CheckpointNotFoundError` if the
        checkpoint does not exist in the thread.
        """
        ...

    async def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The checkpoint with this id in this thread, or the thread's latest.

        Returns None when the thread has no such checkpoint (or no checkpoint).
        """
        ...

    async def get_writes(self, thread_id: str, checkpoint_id: str) -> tuple[PendingWrite, ...]:
        """The pending writes saved against a checkpoint, oldest first."""
        ...

    async def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> list[Checkpoint]:
        """Checkpoints of a thread, newest first.

        ``before`` keeps only checkpoints saved before that one (raising
        :class:`~flowcore.errors.CheckpointNotFoundError` if it is not in the
        thread); ``limit`` caps how many are returned. An unknown thread has
        an empty history.
        """
        ...

    async def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint and pending write of a thread (no-op if unknown)."""
        ...

    async def aclose(self) -> None:
        """Release connections and background tasks; the store is unusable after."""
        ...


@runtime_checkable
class MaintainableCheckpointer(Checkpointer, Protocol):
    """A checkpointer that can also list its threads and edit a thread's history.

    An optional extension of :class:`Checkpointer` for maintenance work
    (pruning, deleting the checkpoints of some runs, adapters that keep
    several logical threads in one store). Both built-in stores implement it.

    Example:
        >>> from flowcore.checkpoint import InMemoryCheckpointer
        >>> isinstance(InMemoryCheckpointer(), MaintainableCheckpointer)
        True
    """

    async def threads(self, prefix: str = "") -> list[str]:
        """Ids of the threads that have a checkpoint and start with ``prefix``, sorted."""
        ...

    async def rewrite(
        self,
        thread_id: str,
        *,
        delete: Collection[str] = (),
        replace: Sequence[Checkpoint] = (),
    ) -> None:
        """Delete some checkpoints of a thread and replace the records of others, atomically.

        Deleted checkpoints lose their pending writes; ids in ``delete`` that
        are not in the thread are ignored. Each checkpoint in ``replace``
        overwrites the stored checkpoint with its id, keeping its place in
        the history and its pending writes.

        Raises :class:`~flowcore.errors.CheckpointNotFoundError` if a
        replaced id is not in the thread (or is deleted by the same call),
        and :class:`~flowcore.errors.CheckpointError` if afterwards a
        checkpoint would name a parent that is not in the thread (replace it
        with another ``parent_id`` too); in each case nothing changes.
        """
        ...


@runtime_checkable
class LeasingCheckpointer(Checkpointer, Protocol):
    """A checkpointer that leases threads, so a thread runs in one place at a time.

    Runs on a thread take its lease before loading it, renew it while they
    run (a heartbeat every third of the lease's ``ttl``) and release it
    however they end; a run that finds the lease held by another live run
    raises :class:`~flowcore.errors.ThreadBusyError`. Both built-in stores
    implement it (SQLite across processes sharing the file, in-memory within
    one process). A store without these calls still works, unleased.

    Example:
        >>> from flowcore.checkpoint import InMemoryCheckpointer
        >>> isinstance(InMemoryCheckpointer(), LeasingCheckpointer)
        True
    """

    async def acquire_lease(self, thread_id: str, holder: str) -> ThreadLease:
        """Take the thread's lease for ``holder``, or renew it if ``holder`` has it.

        Atomic: the current holder is read, its expiry checked and the new
        holder written as one step (one statement that takes SQLite's write
        lock before it reads), so of two runs racing for a thread exactly one
        wins. An
        expired lease is taken over.

        Raises :class:`~flowcore.errors.ThreadBusyError` if another holder's
        lease has not expired (naming it and when it expires).
        """
        ...

    async def release_lease(self, thread_id: str, holder: str) -> None:
        """Give the lease back; does nothing if ``holder`` no longer holds it."""
        ...


@runtime_checkable
class BatchCheckpointer(Checkpointer, Protocol):
    """A checkpointer that stores many checkpoints and writes in one go.

    An optional extension of :class:`Checkpointer`. The engine uses it for
    ``durability="async"``: checkpoints made while the store is busy are
    queued and handed over together, so a store with a costly commit (SQLite)
    pays it once per batch instead of once per superstep. Both built-in
    stores implement it.

    Example:
        >>> from flowcore.checkpoint import InMemoryCheckpointer
        >>> isinstance(InMemoryCheckpointer(), BatchCheckpointer)
        True
    """

    async def put_many(self, items: Sequence[StoreItem]) -> None:
        """Store ``items`` in order, as :meth:`put` and :meth:`put_write` would one by one.

        A checkpoint may be the parent of a later checkpoint of the batch and
        the target of its later writes. The first item that cannot be stored
        raises the error :meth:`put` or :meth:`put_write` would raise, and
        none of the batch is stored.
        """
        ...


@runtime_checkable
class ReleasingBatchCheckpointer(BatchCheckpointer, LeasingCheckpointer, Protocol):
    """A store whose last batch of a run can give the run's thread lease back with it.

    An optional extension: a run that ends with writes still queued stores
    them and releases its lease in one transaction instead of two. The
    SQLite store implements it.

    Example:
        >>> from flowcore.checkpoint import InMemoryCheckpointer
        >>> isinstance(InMemoryCheckpointer(), ReleasingBatchCheckpointer)
        False
    """

    async def put_many_and_release(
        self, items: Sequence[StoreItem], thread_id: str, holder: str
    ) -> None:
        """Store ``items`` as :meth:`put_many` does, and in the same transaction give
        back ``thread_id``'s lease if ``holder`` has it.

        If the items cannot be stored, nothing is: the lease is still held
        and the error is the one :meth:`put_many` raises.
        """
        ...
