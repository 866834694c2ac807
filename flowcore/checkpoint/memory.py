"""``InMemoryCheckpointer``: threads kept in this process, for tests and short-lived apps.

Values are stored serialized, exactly as the SQLite store does, so a value
that could not be saved there fails here too, and what a caller gets back is
never the object it saved.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from flowcore.checkpoint.protocol import Checkpoint, PendingWrite
from flowcore.checkpoint.records import checkpoint_from_record, checkpoint_to_record
from flowcore.checkpoint.serde import JsonSerializer, Serializer
from flowcore.errors import CheckpointError, CheckpointNotFoundError

__all__ = ["InMemoryCheckpointer"]


@dataclass(slots=True)
class _Thread:
    order: list[str] = field(default_factory=list)  # checkpoint ids, oldest first
    checkpoints: dict[str, bytes] = field(default_factory=dict)
    writes: dict[str, dict[str, tuple[int, bytes]]] = field(default_factory=dict)


class InMemoryCheckpointer:
    """A :class:`~flowcore.checkpoint.protocol.Checkpointer` held in a dict.

    Example:
        >>> import asyncio
        >>> from flowcore.checkpoint import Checkpoint
        >>> store = InMemoryCheckpointer()
        >>> asyncio.run(store.put(Checkpoint("t", "c1", None, step=0, created_at=0.0)))
        >>> asyncio.run(store.get("t")).checkpoint_id
        'c1'
    """

    def __init__(self, serializer: Serializer | None = None) -> None:
        self._serde = serializer or JsonSerializer()
        self._threads: dict[str, _Thread] = {}
        self._seq = itertools.count()

    async def put(self, checkpoint: Checkpoint) -> None:
        """Store a new checkpoint (see :class:`Checkpointer.put`)."""
        thread = self._threads.get(checkpoint.thread_id)
        if thread is not None and checkpoint.checkpoint_id in thread.checkpoints:
            raise CheckpointError(
                f"checkpoint {checkpoint.checkpoint_id!r} already exists in thread "
                f"{checkpoint.thread_id!r}; checkpoint ids must be new"
            )
        if checkpoint.parent_id is not None and (
            thread is None or checkpoint.parent_id not in thread.checkpoints
        ):
            raise CheckpointNotFoundError(
                f"parent checkpoint {checkpoint.parent_id!r} is not in thread "
                f"{checkpoint.thread_id!r}",
                thread_id=checkpoint.thread_id,
                checkpoint_id=checkpoint.parent_id,
            )
        data = self._serde.dumps(checkpoint_to_record(checkpoint), path="checkpoint")
        if thread is None:
            thread = self._threads[checkpoint.thread_id] = _Thread()
        thread.order.append(checkpoint.checkpoint_id)
        thread.checkpoints[checkpoint.checkpoint_id] = data

    async def put_write(self, thread_id: str, checkpoint_id: str, write: PendingWrite) -> None:
        """Store or replace one node's pending write (see :class:`Checkpointer.put_write`)."""
        thread = self._threads.get(thread_id)
        if thread is None or checkpoint_id not in thread.checkpoints:
            raise CheckpointNotFoundError(
                f"checkpoint {checkpoint_id!r} is not in thread {thread_id!r}",
                thread_id=thread_id,
                checkpoint_id=checkpoint_id,
            )
        data = self._serde.dumps(dict(write.payload), path=f"write of node {write.node!r}")
        thread.writes.setdefault(checkpoint_id, {})[write.node] = (next(self._seq), data)

    async def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """A checkpoint by id, or the latest (see :class:`Checkpointer.get`)."""
        thread = self._threads.get(thread_id)
        if thread is None or not thread.order:
            return None
        key = thread.order[-1] if checkpoint_id is None else checkpoint_id
        data = thread.checkpoints.get(key)
        return None if data is None else checkpoint_from_record(self._serde.loads(data))

    async def get_writes(self, thread_id: str, checkpoint_id: str) -> tuple[PendingWrite, ...]:
        """Pending writes of a checkpoint, oldest first."""
        thread = self._threads.get(thread_id)
        if thread is None:
            return ()
        saved = thread.writes.get(checkpoint_id, {})
        ordered = sorted(saved.items(), key=lambda item: item[1][0])
        return tuple(PendingWrite(node, self._serde.loads(data)) for node, (_, data) in ordered)

    async def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> list[Checkpoint]:
        """Checkpoints of a thread, newest first (see :class:`Checkpointer.history`)."""
        thread = self._threads.get(thread_id)
        if thread is None:
            if before is not None:
                raise CheckpointNotFoundError(
                    f"checkpoint {before!r} is not in thread {thread_id!r}",
                    thread_id=thread_id,
                    checkpoint_id=before,
                )
            return []
        ids = thread.order
        if before is not None:
            if before not in thread.checkpoints:
                raise CheckpointNotFoundError(
                    f"checkpoint {before!r} is not in thread {thread_id!r}",
                    thread_id=thread_id,
                    checkpoint_id=before,
                )
            ids = ids[: ids.index(before)]
        newest_first = list(reversed(ids))
        if limit is not None:
            newest_first = newest_first[:limit]
        return [
            checkpoint_from_record(self._serde.loads(thread.checkpoints[i])) for i in newest_first
        ]

    async def delete_thread(self, thread_id: str) -> None:
        """Forget a thread entirely."""
        self._threads.pop(thread_id, None)

    async def aclose(self) -> None:
        """Nothing to release; provided for the protocol."""
