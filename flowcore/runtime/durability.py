"""When a run's checkpoints and task writes reach the store: the durability modes.

Both graph kinds save through one :class:`DurabilityWriter`; what differs is
only what a checkpoint and a write *are* (a native :class:`Checkpoint`, a
LangGraph saver call, a prepared store record) and how they are stored,
which is the :class:`DurableStore` port each graph kind supplies. The writer
decides when items reach that port:

* ``sync``: each checkpoint and write is stored before the run goes on. A
  task's write that ``rides`` with the checkpoint closing its step is queued
  instead, and that checkpoint joins the queue and waits for it, so a store
  with ``save_many`` commits the two together. With ``group_commit``, every
  save joins the queue and waits for it, so saves made together (by the
  parallel tasks of a step) share one commit;
* ``async``: items are queued in order and stored by one background task
  while the run goes on; what queued up while the store was busy is handed
  over as one batch (``save_many``: one transaction on SQLite), or one item
  at a time on a store without it or after a batch that failed, so what came
  before a bad item is stored and the error is the one a single save raises.
  A failed save is raised by the next save, :meth:`DurabilityWriter.flush`
  or :meth:`DurabilityWriter.close`; nothing after it is stored. At most
  ``max_queued`` items wait: a run that outpaces its store waits for it,
  so memory stays bounded;
* ``exit``: nothing is stored until :meth:`DurabilityWriter.close`; then
  the newest checkpoint alone (as the caller's ``last`` makes it, e.g. a
  merge of the checkpoints held since the last stored one), then the writes
  made since that checkpoint.

The writer does no I/O of its own beyond calling the port, and starts at
most one task (the ``async`` queue's), which :meth:`DurabilityWriter.close`
awaits or cancels.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, Literal, Protocol, TypeVar, get_args

__all__ = [
    "MAX_QUEUED_ITEMS",
    "BatchingStore",
    "Durability",
    "DurabilityWriter",
    "DurableStore",
]

Durability = Literal["sync", "async", "exit"]
"""When checkpoints and writes reach the store; see the module docstring."""

MAX_QUEUED_ITEMS = 256
"""Items an ``async`` writer may hold before a save waits for the store."""

C = TypeVar("C")
W = TypeVar("W")
C_contra = TypeVar("C_contra", contravariant=True)
W_contra = TypeVar("W_contra", contravariant=True)


class DurableStore(Protocol[C_contra, W_contra]):
    """Where a :class:`DurabilityWriter` stores one graph kind's checkpoints and writes.

    Example:
        >>> class Printed:
        ...     async def save_checkpoint(self, item: str) -> None: print("checkpoint", item)
        ...     async def save_writes(self, item: str) -> None: print("writes", item)
    """

    async def save_checkpoint(self, item: C_contra) -> None:
        """Store one checkpoint."""

    async def save_writes(self, item: W_contra) -> None:
        """Store one task's writes (against the checkpoint the item names)."""


class BatchingStore(DurableStore[C_contra, W_contra], Protocol):
    """A :class:`DurableStore` that also stores many items in one go (one commit).

    Optional: the writer uses ``save_many`` when the store has it. It may
    raise to refuse a batch; the writer then stores the items one by one.

    Example:
        >>> # await store.save_many([checkpoint, writes])
    """

    async def save_many(self, items: Sequence[C_contra | W_contra]) -> None:
        """Store ``items`` in order, all or none."""


class _Entry(Generic[C, W]):
    """One queued item and which of the store's two calls stores it alone."""

    __slots__ = ("is_checkpoint", "item")

    def __init__(self, is_checkpoint: bool, item: C | W) -> None:
        self.is_checkpoint = is_checkpoint
        self.item = item


class DurabilityWriter(Generic[C, W]):
    """Saves one run's checkpoints (``C``) and task writes (``W``) under one mode.

    ``mode`` and ``group_commit`` are the rules of the module docstring;
    ``max_queued`` bounds the queue (``async``).

    Example:
        >>> # writer = DurabilityWriter(store, "async")
        >>> # await writer.checkpoint(cp); await writer.writes(w); await writer.close()
    """

    def __init__(
        self,
        store: DurableStore[C, W],
        mode: Durability,
        *,
        group_commit: bool = False,
        max_queued: int = MAX_QUEUED_ITEMS,
    ) -> None:
        if mode not in get_args(Durability):
            raise ValueError(f"durability must be 'sync', 'async' or 'exit', not {mode!r}")
        if max_queued < 1:
            raise ValueError(f"max_queued must be at least 1, not {max_queued!r}")
        self.store = store
        self.mode: Durability = mode
        self.max_queued = max_queued
        self.group_commit = group_commit
        self._save_many = getattr(store, "save_many", None)
        self._queued: list[_Entry[C, W]] = []
        self._worker: asyncio.Task[None] | None = None
        self.failure: BaseException | None = None
        """The error a queued save met, kept until :meth:`raise_failure` raises it."""
        self._held: list[C] = []  # at most one under "exit": the newest checkpoint
        self._held_writes: dict[Hashable, W] = {}

    # ------------------------------------------------------------- saving
    async def checkpoint(self, item: C) -> None:
        """Save a checkpoint: stored now (``sync``), queued (``async``) or held (``exit``).

        Under ``exit`` it replaces the held checkpoint and drops the writes
        held against the one before it: they are in this checkpoint now.
        """
        if self.mode == "sync":
            worker = self._worker
            # _queues(), inlined: a sync run saves a checkpoint at every step.
            if self.group_commit or self._queued or (worker is not None and not worker.done()):
                # Queued behind a riding write (or group commit): stored with what is queued.
                await self._add(_Entry(True, item))
                await self.flush()
            else:
                await self.store.save_checkpoint(item)
        elif self.mode == "async":
            await self._add(_Entry(True, item))
        else:
            self._held[:] = [item]
            self._held_writes.clear()

    async def writes(self, item: W, *, key: Hashable = None, rides: bool = False) -> None:
        """Save a task's writes against the newest checkpoint.

        ``rides``: under ``sync``, queue the writes for the checkpoint that
        follows (see :class:`~flowcore.runtime.StepWrites`) instead of storing
        them now. ``key``: under ``exit``, writes held under the same key
        replace each other (one task's latest writes).
        """
        if self.mode == "sync":
            worker = self._worker
            if rides:
                await self._add(_Entry(False, item))
            elif self.group_commit or self._queued or (worker is not None and not worker.done()):
                # Queued behind a riding write (or group commit): stored with what is queued.
                await self._add(_Entry(False, item))
                await self.flush()
            else:
                await self.store.save_writes(item)
        elif self.mode == "async":
            await self._add(_Entry(False, item))
        else:
            self._held_writes[object() if key is None else key] = item

    @property
    def holds_checkpoint(self) -> bool:
        """Whether an ``exit`` writer holds a checkpoint that :meth:`close` will store."""
        return bool(self._held)

    # ------------------------------------------------------------- waiting
    async def drain(self) -> None:
        """Wait until everything queued so far was handed to the store (failures are kept)."""
        while self._worker is not None and not self._worker.done():
            await asyncio.shield(self._worker)

    async def flush(self) -> None:
        """Wait until everything queued is stored; raise a failed save here."""
        await self.drain()
        self.raise_failure()

    def raise_failure(self) -> None:
        """Raise (once) the error a queued save met, if any."""
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure

    async def close(self, last: Callable[[C], C] | None = None) -> None:
        """Store what is queued or held, stop the background task, raise a failed save.

        Under ``exit``: the held checkpoint, as ``last`` makes it from the
        newest one held, then the writes held against it.
        """
        if self.mode == "exit":
            if self._held:
                head = self._held[-1]
                self._held.clear()
                await self.store.save_checkpoint(head if last is None else last(head))
            held, self._held_writes = self._held_writes, {}
            for item in held.values():
                await self.store.save_writes(item)
            return
        try:
            await self.drain()
        finally:
            if self._worker is not None:
                # Only left running when close itself was cancelled.
                self._worker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._worker
                self._worker = None
        self.raise_failure()

    # ------------------------------------------------------------ internals
    def _queues(self) -> bool:
        """Whether a sync save goes through the queue (and waits for it)."""
        if self.group_commit:
            return True
        return bool(self._queued) or (self._worker is not None and not self._worker.done())

    async def _add(self, entry: _Entry[C, W]) -> None:
        if self.failure is not None:
            self.raise_failure()
        self._queued.append(entry)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._drain_queue())
        elif len(self._queued) >= self.max_queued:
            # The store is this far behind: let it catch up, so memory stays bounded.
            await asyncio.shield(self._worker)
            self.raise_failure()

    async def _drain_queue(self) -> None:
        while self._queued:
            batch, self._queued = self._queued, []
            if self.failure is not None:
                continue  # the caller learns of the failure; what follows is not stored
            if self._save_many is not None:
                try:
                    await self._save_many([entry.item for entry in batch])
                    continue
                except Exception:
                    pass  # stored one by one below: the error is then a single save's
            try:
                for entry in batch:
                    await self._store_one(entry)
            except Exception as exc:
                self.failure = exc

    async def _store_one(self, entry: _Entry[C, W]) -> None:
        if entry.is_checkpoint:
            await self.store.save_checkpoint(entry.item)  # type: ignore[arg-type]
        else:
            await self.store.save_writes(entry.item)  # type: ignore[arg-type]
