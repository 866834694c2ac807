"""``SqliteSaver``: LangGraph's sync SQLite saver, on flowcore's SQLite store.

LangGraph's ``invoke`` and ``stream`` call the saver from sync code, while
flowcore's :class:`~flowcore.checkpoint.SqliteCheckpointer` is async. So a
``SqliteSaver`` runs an :class:`AsyncSqliteSaver` on an event loop in a
private daemon thread and waits for each call there; its async methods
await that thread without blocking the caller's loop.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import weakref
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Literal, Self, TypeVar

from flowcore.checkpoint import DEFAULT_LEASE_TTL, Serializer, SqliteCheckpointer
from flowcore.compat.langgraph._savers import CheckpointTuple
from flowcore.compat.langgraph._savers_shell import (
    Listing,
    Operation,
    SaverShellWithSyncMaintenance,
)
from flowcore.compat.langgraph._savers_sqlite import (
    AsyncSqliteSaver,
    Target,
    drain,
    next_or_end,
    sqlite3_file,
)
from flowcore.errors import CheckpointError

__all__ = ["SqliteSaver"]

T = TypeVar("T")


class _LoopThread:
    """An event loop running in a daemon thread of its own."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the loop and wait for its result (never from the loop's thread)."""
        if threading.current_thread() is self.thread:
            work.close()
            raise RuntimeError("SqliteSaver: a sync call from its own event-loop thread")
        return asyncio.run_coroutine_threadsafe(work, self.loop).result()

    async def await_(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the loop; the caller's loop waits without blocking."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self.loop))

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        if self.thread.is_alive():
            self.run(self.loop.shutdown_asyncgens())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
        self.loop.close()


class _Resources:
    """What a SqliteSaver must release: kept apart so finalizers need not hold the saver."""

    def __init__(self, runner: _LoopThread) -> None:
        self.runner = runner
        self.inner: AsyncSqliteSaver | None = None
        self.lock = threading.Lock()

    def close(self) -> None:
        with self.lock:
            inner, self.inner = self.inner, None
            try:
                if inner is not None and self.runner.thread.is_alive():
                    self.runner.run(inner.aclose())
            finally:
                self.runner.stop()


def _close_before_thread_shutdown(ref: weakref.ReferenceType[_Resources]) -> None:
    resources = ref()
    if resources is not None:
        resources.close()


class SqliteSaver(SaverShellWithSyncMaintenance):
    """LangGraph's ``SqliteSaver``: threads in an SQLite file, for sync code.

    ``SqliteSaver.from_conn_string(path)`` is a context manager yielding the
    saver, as in LangGraph; ``SqliteSaver(path)`` (or a ``sqlite3``
    connection, of which only the file name is used) opens one at once, to
    be closed with :meth:`close`. It stores through a
    :class:`~flowcore.checkpoint.SqliteCheckpointer` driven by a private
    event-loop thread, so sync methods work anywhere, even inside a running
    event loop, and the async methods (``aget_tuple`` ...) work too: they
    await that thread without blocking. A saver left open is closed when the
    interpreter exits.

    Args:
        conn: The database file, ``":memory:"`` (a temporary file), or a
            ``sqlite3`` connection to the file.
        serializer: How values become bytes; JSON with tagged types by default.
        synchronous: ``"NORMAL"`` (default) or ``"FULL"`` (survives power loss).
        lease_ttl: Seconds a thread's lease lasts without renewal (default
            30): how long a run whose process died keeps its thread.

    Raises:
        CheckpointStoreError: If the file is not a database flowcore can use.

    Example:
        >>> import os, tempfile
        >>> config = {"configurable": {"thread_id": "1", "checkpoint_ns": ""}}
        >>> cp = {"v": 4, "id": "c1", "ts": "2026-01-01T00:00:00+00:00",
        ...       "channel_values": {"x": 1}, "channel_versions": {"x": 1},
        ...       "versions_seen": {}, "updated_channels": None}
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     with SqliteSaver.from_conn_string(os.path.join(tmp, "t.db")) as saver:
        ...         saved = saver.put(config, cp, {"source": "input", "step": -1}, {"x": 1})
        ...         saver.get_tuple(saved).checkpoint["channel_values"]
        {'x': 1}
    """

    def __init__(
        self,
        conn: str | os.PathLike[str] | sqlite3.Connection,
        *,
        serializer: Serializer | None = None,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        lease_ttl: float = DEFAULT_LEASE_TTL,
    ) -> None:
        target: Target = sqlite3_file(conn) if isinstance(conn, sqlite3.Connection) else conn
        self._res = _Resources(_LoopThread("flowcore SqliteSaver"))

        async def open_inner() -> AsyncSqliteSaver:
            inner = AsyncSqliteSaver(
                target, serializer=serializer, synchronous=synchronous, lease_ttl=lease_ttl
            )
            try:
                await inner.setup()
            except BaseException:
                await inner.aclose()
                raise
            return inner

        try:
            self._res.inner = self._res.runner.run(open_inner())
        except BaseException:
            self._res.close()
            raise
        ref = weakref.ref(self._res)
        register = getattr(threading, "_register_atexit", None)
        if register is not None:
            # Before the interpreter joins non-daemon threads (aiosqlite's), close ours.
            register(_close_before_thread_shutdown, ref)
        weakref.finalize(self, self._res.close)

    def __repr__(self) -> str:
        return f"SqliteSaver({self._res.inner!r})"

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, serializer: Serializer | None = None
    ) -> Iterator[Self]:
        """Open a saver on ``conn_string`` (a file path or ``":memory:"``); close it after.

        Example:
            >>> # with SqliteSaver.from_conn_string("threads.db") as saver:
            >>> #     app = builder.compile(checkpointer=saver)
        """
        with cls(conn_string, serializer=serializer) as saver:
            yield saver

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Finish queued writes, close the database and stop the private thread.

        Example:
            >>> # saver.close()
        """
        self._res.close()

    @property
    def store(self) -> SqliteCheckpointer:
        """The flowcore store underneath (it lives on the saver's private event loop).

        Example:
            >>> # saver.store.path
        """
        return self._inner().store

    def _inner(self) -> AsyncSqliteSaver:
        inner = self._res.inner
        if inner is None:
            raise CheckpointError(f"{self!r} has been closed; open a new saver")
        return inner

    # ------------------------------------------------------------------ how operations run

    def _run_sync(self, op: Operation[T]) -> T:
        return self._res.runner.run(self._inner()._run_async(op))

    async def _run_async(self, op: Operation[T]) -> T:
        return await self._res.runner.await_(self._inner()._run_async(op))

    def _iter_sync(self, listing: Listing) -> Iterator[CheckpointTuple]:
        return drain(self._inner()._iter_async(listing), self._res.runner.run)

    async def _iter_async(self, listing: Listing) -> AsyncIterator[CheckpointTuple]:
        items = self._inner()._iter_async(listing)
        while True:
            more, item = await self._res.runner.await_(next_or_end(items))
            if not more:
                return
            assert item is not None
            yield item
