"""``AsyncPostgresSaver``: LangGraph's async Postgres saver, on flowcore's Postgres store.

It keeps LangGraph threads in a :class:`~flowcore.checkpoint.postgres.PostgresCheckpointer`,
mapped as :mod:`flowcore.compat.langgraph._savers_core` describes, so one
database holds flowcore's threads and LangGraph's. It runs on the caller's
event loop, like :class:`~flowcore.compat.langgraph._savers_sqlite.AsyncSqliteSaver`,
whose sync-from-another-thread bridge it shares. Needs ``flowcore[postgres]``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Self, TypeVar

from flowcore._postgres import redact_url
from flowcore.checkpoint import DEFAULT_LEASE_TTL, Serializer
from flowcore.checkpoint.lease import check_lease_ttl
from flowcore.checkpoint.postgres import PostgresCheckpointer
from flowcore.compat.langgraph._savers import CheckpointTuple
from flowcore.compat.langgraph._savers_batch import SaveBatch
from flowcore.compat.langgraph._savers_core import SaverCore
from flowcore.compat.langgraph._savers_encoding import reusing
from flowcore.compat.langgraph._savers_shell import Listing, Operation, SaverShell
from flowcore.compat.langgraph._savers_sqlite import drain
from flowcore.errors import CheckpointError

__all__ = ["AsyncPostgresSaver"]

T = TypeVar("T")


class AsyncPostgresSaver(SaverShell):
    """LangGraph's ``AsyncPostgresSaver``: threads in Postgres, for async code.

    Open it with ``async with AsyncPostgresSaver.from_conn_string(url) as saver``
    (or ``async with AsyncPostgresSaver(url)``); the tables are created on
    open (``setup()`` is accepted and does the same). The sync methods work
    from other threads while the saver's event loop runs, as LangGraph's do.

    Args:
        conn_string: ``postgresql://user:password@host:port/database``.
        serializer: How values become bytes; JSON with tagged types by default.
        lease_ttl: Seconds a thread's lease lasts without renewal (default 30).

    Example:
        >>> # async with AsyncPostgresSaver.from_conn_string(url) as saver:
        >>> #     app = builder.compile(checkpointer=saver)
    """

    def __init__(
        self,
        conn_string: str,
        *,
        serializer: Serializer | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
    ) -> None:
        self._url = conn_string
        self._serializer = serializer
        self._lease_ttl = check_lease_ttl(lease_ttl)
        self._core: SaverCore | None = None
        self._store: PostgresCheckpointer | None = None
        self._closed = False
        self._setup_lock = asyncio.Lock()
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

    def __repr__(self) -> str:
        return f"AsyncPostgresSaver({redact_url(self._url)!r})"

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, serializer: Serializer | None = None
    ) -> AsyncIterator[Self]:
        """Open a saver on a ``postgresql://`` URL; close it after.

        Example:
            >>> # async with AsyncPostgresSaver.from_conn_string(url) as saver: ...
        """
        async with cls(conn_string, serializer=serializer) as saver:
            yield saver

    async def __aenter__(self) -> Self:
        await self.setup()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def store(self) -> PostgresCheckpointer:
        """The flowcore store underneath (open after :meth:`setup`).

        Example:
            >>> # await saver.store.threads("langgraph/")
        """
        if self._store is None:
            raise CheckpointError(f"{self!r} is not open; use 'async with' or 'await setup()'")
        return self._store

    async def setup(self) -> None:
        """Connect and create or migrate the tables; later calls do nothing.

        Example:
            >>> # await AsyncPostgresSaver(url).setup()
        """
        await self._ready()

    async def _ready(self) -> SaverCore:
        if self._core is not None:
            return self._core
        async with self._setup_lock:
            if self._core is not None:
                return self._core
            if self._closed:
                raise CheckpointError(f"{self!r} has been closed; open a new saver")
            store = await PostgresCheckpointer.open(
                self._url, serializer=reusing(self._serializer), lease_ttl=self._lease_ttl
            )
            self.loop = asyncio.get_running_loop()
            self._store, self._core = store, SaverCore(store)
            return self._core

    async def aclose(self) -> None:
        """Close the pool; calling it again does nothing.

        Example:
            >>> # await saver.aclose()
        """
        self._closed = True
        store, self._store, self._core = self._store, None, None
        if store is not None:
            await store.aclose()

    # ------------------------------------------------------------------ how operations run

    def _open_batch(self) -> SaveBatch | None:
        cls = type(self)
        # A subclass that changes how saves or operations run must see every save.
        own = (
            cls.aput is SaverShell.aput
            and cls.aput_writes is SaverShell.aput_writes
            and cls._run_async is AsyncPostgresSaver._run_async
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
                "synchronous calls to AsyncPostgresSaver only work from another thread while "
                "its event loop runs; in async code use the async methods "
                "(await saver.aget_tuple(...), await graph.ainvoke(...))"
            )
        return asyncio.run_coroutine_threadsafe(work, loop).result()
