"""``InMemorySaver``: LangGraph's in-memory saver, on flowcore's in-memory checkpointer."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from flowcore.checkpoint import InMemoryCheckpointer, Serializer
from flowcore.compat.langgraph._savers import (
    BaseCheckpointSaver,
    CheckpointTuple,
    RunnableConfig,
    next_version,
)
from flowcore.compat.langgraph._savers_core import SaverCore

__all__ = ["InMemorySaver", "MemorySaver"]

T = TypeVar("T")


def _run_now(step: Coroutine[Any, Any, T] | Any) -> T:
    """Finish a coroutine that never waits, without an event loop.

    The in-memory store never suspends, so its coroutines complete on the
    first ``send``. One that does suspend is a bug here, reported loudly.
    """
    try:
        step.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    step.close()
    raise RuntimeError("InMemorySaver: the in-memory store unexpectedly waited for I/O")


class InMemorySaver(BaseCheckpointSaver[str]):
    """LangGraph's ``InMemorySaver``: threads kept in this process.

    Checkpoints, metadata and pending writes are stored serialized by
    flowcore's :class:`~flowcore.checkpoint.JsonSerializer` (or the
    ``serializer`` given), exactly as the SQLite savers store them: a value
    that could not be saved to SQLite fails here too, with a
    :class:`~flowcore.errors.SerializationError`, and what comes back is an
    equal copy, never the object saved. Safe to use from several threads;
    every method also has an ``a``-prefixed async twin.

    Args:
        serializer: How values become bytes; JSON with tagged types by default.

    Example:
        >>> saver = InMemorySaver()
        >>> config = {"configurable": {"thread_id": "1", "checkpoint_ns": ""}}
        >>> cp = {"v": 4, "id": "c1", "ts": "2026-01-01T00:00:00+00:00",
        ...       "channel_values": {"x": 1}, "channel_versions": {"x": 1},
        ...       "versions_seen": {}, "updated_channels": None}
        >>> saved = saver.put(config, cp, {"source": "input", "step": -1}, {"x": 1})
        >>> saver.get_tuple(saved).checkpoint["channel_values"]
        {'x': 1}
    """

    def __init__(self, *, serializer: Serializer | None = None) -> None:
        self.store = InMemoryCheckpointer(serializer)
        self._core = SaverCore(self.store)
        self._lock = threading.Lock()

    def _call(self, step: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            return _run_now(step)

    def _iterate(self, items: AsyncIterator[T]) -> Iterator[T]:
        while True:
            try:
                with self._lock:
                    item: T = _run_now(anext(items))
            except StopAsyncIteration:
                return
            yield item

    # ------------------------------------------------------------------ context managers

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    # ------------------------------------------------------------------ sync API

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the latest of its thread and namespace.

        Example:
            >>> InMemorySaver().get_tuple({"configurable": {"thread_id": "none"}}) is None
            True
        """
        return self._call(self._core.get_tuple(config))

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
            >>> list(InMemorySaver().list({"configurable": {"thread_id": "1"}}, limit=5))
            []
        """
        return self._iterate(self._core.list(config, filter=filter, before=before, limit=limit))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> RunnableConfig:
        """Save a checkpoint as the child of the one ``config`` names; return its config.

        Only the values of channels in ``new_versions`` (or whose version
        differs from the parent's) are stored again; the others are read
        from the checkpoint that stored them.

        Example:
            >>> # saver.put(config, checkpoint, {"source": "loop", "step": 1}, {"x": "2"})
        """
        return self._call(self._core.put(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Save a task's ``(channel, value)`` writes against the checkpoint ``config`` names.

        Example:
            >>> # saver.put_writes(saved, [("x", 2)], task_id="t1")
        """
        self._call(self._core.put_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Forget a thread: every namespace, checkpoint and write.

        Example:
            >>> InMemorySaver().delete_thread("unknown")
        """
        self._call(self._core.delete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Forget the checkpoints whose metadata ``run_id`` is one of ``run_ids``.

        Example:
            >>> InMemorySaver().delete_for_runs(["run-1"])
        """
        self._call(self._core.delete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's checkpoints and writes to a thread that has none.

        Example:
            >>> InMemorySaver().copy_thread("a", "b")
        """
        self._call(self._core.copy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only each namespace's latest checkpoint (``keep_latest``) or none (``delete``).

        Example:
            >>> InMemorySaver().prune(["1"], strategy="keep_latest")
        """
        self._call(self._core.prune(thread_ids, strategy=strategy))

    def get_next_version(self, current: str | None, channel: Any = None) -> str:
        """The version after ``current``: a zero-padded counter plus a random tie-breaker.

        Example:
            >>> InMemorySaver().get_next_version(None).startswith("0" * 31 + "1.")
            True
        """
        return next_version(current)

    # ------------------------------------------------------------------ async API

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`.

        Example:
            >>> # await saver.aget_tuple({"configurable": {"thread_id": "1"}})
        """
        return self._call(self._core.get_tuple(config))

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
        for item in self.list(config, filter=filter, before=before, limit=limit):
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
            >>> # saved = await saver.aput(config, checkpoint, metadata, {"x": "1"})
        """
        return self._call(self._core.put(config, checkpoint, metadata, new_versions))

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
        self._call(self._core.put_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`.

        Example:
            >>> # await saver.adelete_thread("1")
        """
        self._call(self._core.delete_thread(thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`.

        Example:
            >>> # await saver.adelete_for_runs(["run-1"])
        """
        self._call(self._core.delete_for_runs(run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`.

        Example:
            >>> # await saver.acopy_thread("a", "b")
        """
        self._call(self._core.copy_thread(source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`.

        Example:
            >>> # await saver.aprune(["1"], strategy="delete")
        """
        self._call(self._core.prune(thread_ids, strategy=strategy))


MemorySaver = InMemorySaver
"""LangGraph's older name for :class:`InMemorySaver`."""
