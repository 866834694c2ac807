"""``InMemoryCheckpointer``: threads kept in this process, for tests and short-lived apps.

Values are stored serialized, as the SQLite store does, so a value that could
not be saved there fails here too, and what a caller gets back is never the
object it saved. With the default serializer, values made only of exact
builtin types are copied by a restricted pickler instead of JSON (see
:mod:`flowcore.checkpoint.copying`): the bytes never leave this process, the
copy is exact, and it costs a fraction of encoding JSON; anything else goes
through the JSON serializer, exactly as in SQLite.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from flowcore.checkpoint.copying import CopyCodec
from flowcore.checkpoint.lease import DEFAULT_LEASE_TTL, LeaseTable
from flowcore.checkpoint.protocol import (
    Checkpoint,
    PendingWrite,
    StoreItem,
    ThreadLease,
    WriteAt,
)
from flowcore.checkpoint.records import checkpoint_from_record, checkpoint_to_record
from flowcore.checkpoint.serde import Serializer
from flowcore.errors import CheckpointError, CheckpointNotFoundError

__all__ = ["InMemoryCheckpointer"]


@dataclass(slots=True)
class _Thread:
    order: list[str] = field(default_factory=list)  # checkpoint ids, oldest first
    checkpoints: dict[str, bytes] = field(default_factory=dict)
    parents: dict[str, str | None] = field(default_factory=dict)
    writes: dict[str, dict[str, tuple[int, bytes]]] = field(default_factory=dict)


class InMemoryCheckpointer:
    """A :class:`~flowcore.checkpoint.protocol.Checkpointer` held in a dict.

    It leases threads within this process (see
    :class:`~flowcore.checkpoint.protocol.LeasingCheckpointer`): two
    concurrent runs of one thread on one store cannot both run.

    Args:
        serializer: How values are copied; exact copies of builtins by default.
        lease_ttl: Seconds a thread's lease lasts without renewal (default 30).

    Example:
        >>> import asyncio
        >>> from flowcore.checkpoint import Checkpoint
        >>> store = InMemoryCheckpointer()
        >>> asyncio.run(store.put(Checkpoint("t", "c1", None, step=0, created_at=0.0)))
        >>> asyncio.run(store.get("t")).checkpoint_id
        'c1'
    """

    def __init__(
        self, serializer: Serializer | None = None, *, lease_ttl: float = DEFAULT_LEASE_TTL
    ) -> None:
        self._serde: Serializer = CopyCodec() if serializer is None else serializer
        self._threads: dict[str, _Thread] = {}
        self._seq = itertools.count()
        self._leases = LeaseTable(ttl=lease_ttl)
        self.lease_ttl = self._leases.ttl

    async def acquire_lease(self, thread_id: str, holder: str) -> ThreadLease:
        """Take or renew a thread's lease in this process (see :class:`LeasingCheckpointer`).

        Example:
            >>> import asyncio
            >>> asyncio.run(InMemoryCheckpointer().acquire_lease("t", "run-a")).holder
            'run-a'
        """
        return self._leases.take(thread_id, holder)

    async def release_lease(self, thread_id: str, holder: str) -> None:
        """Give a thread's lease back if ``holder`` has it (see :class:`LeasingCheckpointer`).

        Example:
            >>> # await store.release_lease("t", "run-a")
        """
        self._leases.drop(thread_id, holder)

    async def put(self, checkpoint: Checkpoint) -> None:
        """Store a new checkpoint (see :class:`Checkpointer.put`)."""
        # One item: no batch lists, and nothing stored unless it encoded.
        self._store_checkpoint(checkpoint, self._encode_checkpoint(checkpoint, _NONE_ADDED))

    async def put_write(self, thread_id: str, checkpoint_id: str, write: PendingWrite) -> None:
        """Store or replace one node's pending write (see :class:`Checkpointer.put_write`)."""
        data = self._encode_write(thread_id, checkpoint_id, write, _NONE_ADDED)
        self._store_write(thread_id, checkpoint_id, write.node, data)

    async def put_many(self, items: Sequence[StoreItem]) -> None:
        """Store checkpoints and writes in order, all or none (see :class:`BatchCheckpointer`).

        Example:
            >>> import asyncio
            >>> from flowcore.checkpoint import Checkpoint, PendingWrite, WriteAt
            >>> store = InMemoryCheckpointer()
            >>> asyncio.run(store.put_many([
            ...     Checkpoint("t", "c1", None, step=0, created_at=0.0),
            ...     WriteAt("t", "c1", PendingWrite("search", {"hits": 3})),
            ... ]))
            >>> [w.node for w in asyncio.run(store.get_writes("t", "c1"))]
            ['search']
        """
        # Check and encode everything first, so a failing item leaves the store as it was.
        added: set[tuple[str, str]] = set()
        encoded: list[tuple[StoreItem, bytes]] = []
        for item in items:
            if isinstance(item, WriteAt):
                data = self._encode_write(item.thread_id, item.checkpoint_id, item.write, added)
            else:
                data = self._encode_checkpoint(item, added)
                added.add((item.thread_id, item.checkpoint_id))
            encoded.append((item, data))
        for item, data in encoded:
            if isinstance(item, WriteAt):
                self._store_write(item.thread_id, item.checkpoint_id, item.write.node, data)
            else:
                self._store_checkpoint(item, data)

    def _encode_checkpoint(self, cp: Checkpoint, added: Collection[tuple[str, str]]) -> bytes:
        """Check ``cp`` against the store plus ``added`` (earlier in a batch); serialize it."""
        if self._known(cp.thread_id, cp.checkpoint_id, added):
            raise CheckpointError(
                f"checkpoint {cp.checkpoint_id!r} already exists in thread "
                f"{cp.thread_id!r}; checkpoint ids must be new"
            )
        if cp.parent_id is not None and not self._known(cp.thread_id, cp.parent_id, added):
            raise CheckpointNotFoundError(
                f"parent checkpoint {cp.parent_id!r} is not in thread {cp.thread_id!r}",
                thread_id=cp.thread_id,
                checkpoint_id=cp.parent_id,
            )
        return self._serde.dumps(checkpoint_to_record(cp), path="checkpoint")

    def _encode_write(
        self,
        thread_id: str,
        checkpoint_id: str,
        write: PendingWrite,
        added: Collection[tuple[str, str]],
    ) -> bytes:
        """Check that the write's checkpoint exists; serialize the write."""
        if not self._known(thread_id, checkpoint_id, added):
            raise CheckpointNotFoundError(
                f"checkpoint {checkpoint_id!r} is not in thread {thread_id!r}",
                thread_id=thread_id,
                checkpoint_id=checkpoint_id,
            )
        payload = write.payload
        return self._serde.dumps(
            payload if type(payload) is dict else dict(payload),
            path=f"write of node {write.node!r}",
        )

    def _known(
        self, thread_id: str, checkpoint_id: str, added: Collection[tuple[str, str]]
    ) -> bool:
        thread = self._threads.get(thread_id)
        return (thread is not None and checkpoint_id in thread.checkpoints) or (
            bool(added) and (thread_id, checkpoint_id) in added
        )

    def _store_checkpoint(self, cp: Checkpoint, data: bytes) -> None:
        thread = self._threads.get(cp.thread_id)
        if thread is None:
            thread = self._threads[cp.thread_id] = _Thread()
        thread.order.append(cp.checkpoint_id)
        thread.checkpoints[cp.checkpoint_id] = data
        thread.parents[cp.checkpoint_id] = cp.parent_id

    def _store_write(self, thread_id: str, checkpoint_id: str, node: str, data: bytes) -> None:
        writes = self._threads[thread_id].writes.setdefault(checkpoint_id, {})
        # A replaced write moves to the end, as if saved anew (oldest first).
        writes[node] = (next(self._seq), data)

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

    async def threads(self, prefix: str = "") -> list[str]:
        """Ids of the threads with a checkpoint that start with ``prefix``, sorted.

        Example:
            >>> # await store.threads("project-")
            >>> # ['project-1', 'project-2']
        """
        return sorted(t for t, thread in self._threads.items() if t.startswith(prefix))

    async def rewrite(
        self,
        thread_id: str,
        *,
        delete: Collection[str] = (),
        replace: Sequence[Checkpoint] = (),
    ) -> None:
        """Delete and replace checkpoints of a thread at once (see the protocol).

        Example:
            >>> # await store.rewrite("t", delete={"c1"}, replace=[new_c2_without_parent])
        """
        thread = self._threads.get(thread_id)
        doomed = set() if thread is None else set(delete) & thread.checkpoints.keys()
        encoded: dict[str, bytes] = {}
        parents = {} if thread is None else dict(thread.parents)
        for cp in replace:
            if thread is None or cp.checkpoint_id not in thread.checkpoints:
                raise _not_found(thread_id, cp.checkpoint_id)
            _check_replacement(thread_id, cp, doomed)
            encoded[cp.checkpoint_id] = self._serde.dumps(
                checkpoint_to_record(cp), path="checkpoint"
            )
            parents[cp.checkpoint_id] = cp.parent_id
        if thread is None:
            return
        for cid in doomed:
            del parents[cid]
        for cid, parent in parents.items():
            if parent is not None and parent not in parents:
                raise _orphan(thread_id, cid, parent)
        # Everything is checked: now change the thread in one go.
        thread.parents = parents
        thread.order = [cid for cid in thread.order if cid not in doomed]
        for cid in doomed:
            del thread.checkpoints[cid]
            thread.writes.pop(cid, None)
        thread.checkpoints.update(encoded)
        if not thread.order:
            del self._threads[thread_id]

    async def aclose(self) -> None:
        """Nothing to release; provided for the protocol."""


_NONE_ADDED: frozenset[tuple[str, str]] = frozenset()


def _not_found(thread_id: str, checkpoint_id: str) -> CheckpointNotFoundError:
    return CheckpointNotFoundError(
        f"checkpoint {checkpoint_id!r} is not in thread {thread_id!r}, so it cannot be replaced",
        thread_id=thread_id,
        checkpoint_id=checkpoint_id,
    )


def _check_replacement(thread_id: str, cp: Checkpoint, doomed: Collection[str]) -> None:
    """Refuse a replacement for another thread or for a checkpoint deleted by the same call."""
    if cp.thread_id != thread_id:
        raise CheckpointError(
            f"a replacement for thread {thread_id!r} names thread {cp.thread_id!r}; "
            "rewrite one thread at a time"
        )
    if cp.checkpoint_id in doomed:
        raise _not_found(thread_id, cp.checkpoint_id)


def _orphan(thread_id: str, checkpoint_id: str, parent_id: str) -> CheckpointError:
    return CheckpointError(
        f"rewriting thread {thread_id!r} would leave checkpoint {checkpoint_id!r} with parent "
        f"{parent_id!r}, which is not in the thread; replace {checkpoint_id!r} too, with "
        "another parent_id (or None)"
    )
