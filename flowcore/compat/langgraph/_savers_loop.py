"""The saver shell both async savers share: operations on the caller's event loop.

:class:`~flowcore.compat.langgraph._savers_sqlite.AsyncSqliteSaver` and
:class:`~flowcore.compat.langgraph._savers_postgres.AsyncPostgresSaver` run
every operation on the event loop they were opened on; their sync methods
work only from another thread while that loop runs (as LangGraph's do), and
a run's ``durability="async"`` saves may be batched. What differs is how the
store opens (``_ready``), which each subclass provides.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, ClassVar, Generic, TypeVar

from flowcore._async_context import AsyncOpenClose
from flowcore.checkpoint import MaintainableCheckpointer, Serializer
from flowcore.checkpoint.lease import check_lease_ttl
from flowcore.compat.langgraph._savers import CheckpointTuple
from flowcore.compat.langgraph._savers_batch import SaveBatch
from flowcore.compat.langgraph._savers_core import SaverCore
from flowcore.compat.langgraph._savers_shell import Listing, Operation, SaverShell
from flowcore.errors import CheckpointError

__all__ = ["LoopSaver", "drain", "next_or_end"]

T = TypeVar("T")
S = TypeVar("S", bound=MaintainableCheckpointer)


class LoopSaver(AsyncOpenClose, SaverShell, Generic[S]):
    """A :class:`SaverShell` whose operations run on the loop it was opened on.

    Subclasses call :meth:`_init_loop` from ``__init__`` and implement
    ``_open_store`` (open the flowcore store, once) and ``aclose``.

    Example:
        >>> # class MySaver(LoopSaver[PostgresCheckpointer]):
        >>> #     async def _open_store(self) -> PostgresCheckpointer: ...
    """

    #: The saver's name and a hint, for the error a sync call on the loop's own thread raises.
    _saver_name: ClassVar[str] = "LoopSaver"
    _sync_hint: ClassVar[str] = ""

    def _init_loop(self, serializer: Serializer | None, lease_ttl: float) -> None:
        self._serializer = serializer
        self._lease_ttl = check_lease_ttl(lease_ttl)
        self._core: SaverCore | None = None
        self._store: S | None = None
        self._closed = False
        self._setup_lock = asyncio.Lock()
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

    @property
    def store(self) -> S:
        """The flowcore store underneath (open after :meth:`setup`).

        Example:
            >>> # await saver.store.threads("langgraph/")
        """
        if self._store is None:
            raise CheckpointError(f"{self!r} is not open; use 'async with' or 'await setup()'")
        return self._store

    async def setup(self) -> None:
        """Open the store (created and migrated as needed); later calls do nothing.

        Example:
            >>> # await saver.setup()
        """
        await self._ready()

    async def aclose(self) -> None:
        """Close the store; calling it again does nothing."""
        raise NotImplementedError

    async def _open_store(self) -> S:
        """Open the flowcore store this saver keeps its threads in."""
        raise NotImplementedError

    async def _ready(self) -> SaverCore:
        if self._core is not None:
            return self._core
        async with self._setup_lock:
            if self._core is not None:
                return self._core
            if self._closed:
                raise CheckpointError(f"{self!r} has been closed; open a new saver")
            store = await self._open_store()
            self.loop = asyncio.get_running_loop()
            self._store, self._core = store, SaverCore(store)
            return self._core

    async def _enter(self) -> None:
        await self.setup()

    # ------------------------------------------------------------------ how operations run

    def _open_batch(self) -> SaveBatch | None:
        cls = type(self)
        # A subclass that changes how saves or operations run must see every save.
        own = (
            cls.aput is SaverShell.aput
            and cls.aput_writes is SaverShell.aput_writes
            and cls._run_async is LoopSaver._run_async
        )
        if not own or self._core is None:
            return None
        return SaveBatch(self._core)

    async def _run_async(self, op: Operation[T]) -> T:
        return await op(await self._ready())

    async def _iter_async(self, listing: Listing) -> AsyncIterator[CheckpointTuple]:
        core = await self._ready()
        async for item in listing(core):
            yield item

    def _run_sync(self, op: Operation[T]) -> T:
        return self._blocking(self._run_async(op))

    def _iter_sync(self, listing: Listing) -> Iterator[CheckpointTuple]:
        return drain(self._iter_async(listing), self._blocking)

    def _blocking(self, work: Coroutine[Any, Any, T]) -> T:
        loop = self.loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or (running is not None and running is loop):
            work.close()
            raise asyncio.InvalidStateError(
                f"synchronous calls to {self._saver_name} only work from another thread "
                "while its event loop runs; in async code use the async methods "
                f"(await saver.aget_tuple(...), await graph.ainvoke(...)){self._sync_hint}"
            )
        return asyncio.run_coroutine_threadsafe(work, loop).result()


async def next_or_end(items: AsyncIterator[T]) -> tuple[bool, T | None]:
    """The next item of ``items`` as ``(True, item)``, or ``(False, None)`` at the end.

    Example:
        >>> # more, item = await next_or_end(items)
    """
    try:
        return True, await anext(items)
    except StopAsyncIteration:
        return False, None


def drain(
    items: AsyncIterator[T], run: Callable[[Coroutine[Any, Any, tuple[bool, T | None]]], Any]
) -> Iterator[T]:
    """Iterate an async iterator from sync code, one ``run`` call per item.

    Example:
        >>> # for item in drain(aiter_items, blocking_runner): ...
    """
    while True:
        more, item = run(next_or_end(items))
        if not more:
            return
        yield item
