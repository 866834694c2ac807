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
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Literal, Self, TypeVar

from flowcore.checkpoint import Serializer, SqliteCheckpointer
from flowcore.compat.langgraph._savers import (
    BaseCheckpointSaver,
    CheckpointTuple,
    RunnableConfig,
    next_version,
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


class SqliteSaver(BaseCheckpointSaver[str]):
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
    ) -> None:
        target: Target = sqlite3_file(conn) if isinstance(conn, sqlite3.Connection) else conn
        self._res = _Resources(_LoopThread("flowcore SqliteSaver"))

        async def open_inner() -> AsyncSqliteSaver:
            inner = AsyncSqliteSaver(target, serializer=serializer, synchronous=synchronous)
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

    def _run(self, work: Callable[[AsyncSqliteSaver], Coroutine[Any, Any, T]]) -> T:
        return self._res.runner.run(work(self._inner()))

    async def _arun(self, work: Callable[[AsyncSqliteSaver], Coroutine[Any, Any, T]]) -> T:
        return await self._res.runner.await_(work(self._inner()))

    # ------------------------------------------------------------------ sync API

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the latest of its thread and namespace.

        Example:
            >>> # saver.get_tuple({"configurable": {"thread_id": "1"}})
        """
        return self._run(lambda s: s.aget_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints, newest first: of a thread (all namespaces unless one is named).

        ``config=None`` lists every thread. ``filter`` keeps checkpoints whose
        metadata has those values; ``before`` those older than its
        ``checkpoint_id``; ``limit`` caps how many are yielded.

        Example:
            >>> # list(saver.list({"configurable": {"thread_id": "1"}}, limit=5))
        """
        items = self._inner().alist(config, filter=filter, before=before, limit=limit)
        return drain(items, self._res.runner.run)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> RunnableConfig:
        """Save a checkpoint as the child of the one ``config`` names; return its config.

        Example:
            >>> # saved = saver.put(config, checkpoint, {"source": "loop", "step": 1}, {})
        """
        return self._run(lambda s: s.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Save a task's ``(channel, value)`` writes, in one transaction.

        Example:
            >>> # saver.put_writes(saved, [("x", 2)], task_id="t1")
        """
        self._run(lambda s: s.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Remove a thread: every namespace, checkpoint and write.

        Example:
            >>> # saver.delete_thread("1")
        """
        self._run(lambda s: s.adelete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Remove the checkpoints whose metadata ``run_id`` is one of ``run_ids``.

        Example:
            >>> # saver.delete_for_runs(["run-1"])
        """
        self._run(lambda s: s.adelete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's checkpoints and writes to a thread that has none.

        Example:
            >>> # saver.copy_thread("a", "b")
        """
        self._run(lambda s: s.acopy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only each namespace's latest checkpoint (``keep_latest``) or none (``delete``).

        Example:
            >>> # saver.prune(["1"])
        """
        self._run(lambda s: s.aprune(thread_ids, strategy=strategy))

    def get_next_version(self, current: str | None, channel: Any = None) -> str:
        """The version after ``current``: a zero-padded counter plus a random tie-breaker.

        Example:
            >>> # saver.get_next_version(None)[:32]
            >>> # '00000000000000000000000000000001'
        """
        return next_version(current)

    # ------------------------------------------------------------------ async API

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple` (runs on the private thread; never blocks the caller's loop).

        Example:
            >>> # await saver.aget_tuple({"configurable": {"thread_id": "1"}})
        """
        return await self._arun(lambda s: s.aget_tuple(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`.

        Example:
            >>> # [t async for t in saver.alist({"configurable": {"thread_id": "1"}})]
        """
        items = self._inner().alist(config, filter=filter, before=before, limit=limit)
        while True:
            more, item = await self._res.runner.await_(next_or_end(items))
            if not more:
                return
            assert item is not None
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> RunnableConfig:
        """Async :meth:`put`.

        Example:
            >>> # saved = await saver.aput(config, checkpoint, metadata, {})
        """
        return await self._arun(lambda s: s.aput(config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`.

        Example:
            >>> # await saver.aput_writes(saved, [("x", 2)], task_id="t1")
        """
        await self._arun(lambda s: s.aput_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`.

        Example:
            >>> # await saver.adelete_thread("1")
        """
        await self._arun(lambda s: s.adelete_thread(thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`.

        Example:
            >>> # await saver.adelete_for_runs(["run-1"])
        """
        await self._arun(lambda s: s.adelete_for_runs(run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`.

        Example:
            >>> # await saver.acopy_thread("a", "b")
        """
        await self._arun(lambda s: s.acopy_thread(source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`.

        Example:
            >>> # await saver.aprune(["1"])
        """
        await self._arun(lambda s: s.aprune(thread_ids, strategy=strategy))
