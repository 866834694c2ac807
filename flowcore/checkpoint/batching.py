"""``BatchQueue``: a run's checkpoints and writes, stored in the background in batches.

Used for ``durability="async"`` by the engine and by the LangGraph adapter:
items queue while the store is busy and one background task hands each
queue-full to :meth:`BatchCheckpointer.put_many` (one SQLite transaction).
A store without ``put_many``, or a batch that fails, is stored one item at a
time, so what came before a bad item is stored and the error is the one a
single save raises. The error is kept and raised by the next :meth:`add`,
:meth:`raise_failure` or :meth:`close`; nothing after it is stored.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from flowcore.checkpoint.protocol import BatchCheckpointer, Checkpointer, StoreItem

__all__ = ["MAX_QUEUED_ITEMS", "BatchQueue"]

MAX_QUEUED_ITEMS = 256
"""Items a queue may hold before :meth:`BatchQueue.add` waits for the store."""


class BatchQueue:
    """Stores items in order, in batches, while the caller goes on.

    ``store_one`` stores a single item (used without ``put_many`` and after a
    failed batch); ``stored`` is told of every item known to be stored.

    Example:
        >>> # queue = BatchQueue(store, store_one)
        >>> # await queue.add(checkpoint); ...; await queue.close()
    """

    def __init__(
        self,
        store: Checkpointer,
        store_one: Callable[[StoreItem], Awaitable[None]],
        stored: Callable[[StoreItem], None] | None = None,
    ) -> None:
        self.store = store
        self._store_one = store_one
        self._stored = stored
        self._queued: list[StoreItem] = []
        self._worker: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None

    async def add(self, item: StoreItem) -> None:
        """Queue ``item``; wait only when ``MAX_QUEUED_ITEMS`` are already queued."""
        self.raise_failure()
        self._queued.append(item)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._drain())
        elif len(self._queued) >= MAX_QUEUED_ITEMS:
            # The store is this far behind: let it catch up, so memory stays bounded.
            await asyncio.shield(self._worker)
            self.raise_failure()

    async def flush(self) -> None:
        """Wait until everything queued so far was handed to the store (failures are kept)."""
        while self._worker is not None and not self._worker.done():
            await asyncio.shield(self._worker)

    async def close(self) -> None:
        """Store what is queued, stop the background task, raise a kept failure."""
        try:
            await self.flush()
        finally:
            if self._worker is not None:
                # Only left running when close itself was cancelled.
                self._worker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._worker
                self._worker = None
        self.raise_failure()

    def raise_failure(self) -> None:
        """Raise (once) the error a background store write met, if any."""
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    async def _drain(self) -> None:
        while self._queued:
            batch, self._queued = self._queued, []
            if self._failure is not None:
                continue  # the caller learns of the failure; what follows is not stored
            try:
                if not isinstance(self.store, BatchCheckpointer):
                    raise _OneByOne
                await self.store.put_many(batch)
            except Exception:
                try:
                    for item in batch:
                        await self._store_one(item)
                        self._note(item)
                except Exception as exc:
                    self._failure = exc
                continue
            for item in batch:
                self._note(item)

    def _note(self, item: StoreItem) -> None:
        if self._stored is not None:
            self._stored(item)


class _OneByOne(Exception):
    """The store has no ``put_many``."""
