"""``InMemorySaver``: LangGraph's in-memory saver, its threads kept in dicts of this process."""

from __future__ import annotations

import threading
from collections.abc import (
    AsyncIterator,
    Callable,
    Coroutine,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from contextlib import AbstractContextManager, ExitStack
from types import TracebackType
from typing import Any, ClassVar, Self, TypeVar

from flowcore.checkpoint import DEFAULT_LEASE_TTL, Serializer
from flowcore.compat.langgraph._saved_writes import stored_writes
from flowcore.compat.langgraph._savers import CheckpointTuple, RunnableConfig
from flowcore.compat.langgraph._savers_memory_core import MemoryCore, SerdeCodec, TypedView
from flowcore.compat.langgraph._savers_shell import (
    Listing,
    Operation,
    SaverShellWithSyncMaintenance,
)
from flowcore.errors import InvalidInputError

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


def _codec_for(serde: Any) -> Any:
    """The core codec for a ``serde``: flowcore's own serializer back from its view."""
    if isinstance(serde, TypedView):
        return serde.serializer
    if not (
        callable(getattr(serde, "dumps_typed", None))
        and callable(getattr(serde, "loads_typed", None))
    ):
        raise InvalidInputError(
            f"serde must have dumps_typed and loads_typed (LangGraph's SerializerProtocol), "
            f"got {type(serde).__name__}"
        )
    return SerdeCodec(serde)


class InMemorySaver(SaverShellWithSyncMaintenance):
    """LangGraph's ``InMemorySaver``: threads kept in this process.

    Checkpoints, metadata and pending writes are stored as serialized copies
    in dicts, laid out as the SQLite savers lay them out (values stored once
    per change, growing lists as tails; see ``_savers_memory_core``):
    builtin-only values are copied by a restricted pickler, the rest go
    through flowcore's :class:`~flowcore.checkpoint.JsonSerializer` (or
    all through the ``serializer`` given), so a value that could not be
    saved to SQLite fails here too, with a
    :class:`~flowcore.errors.SerializationError`, and what comes back is an
    equal copy, never the object saved. Safe to use from several threads;
    every method also has an ``a``-prefixed async twin, which does the same
    work without waiting (the store never waits for I/O).

    It takes LangGraph's constructor too: ``serde`` is a LangGraph
    serializer (``dumps_typed(obj) -> (type, data)``, ``loads_typed``) that
    then stores every value instead (the :attr:`serde` attribute may also be
    set before the saver is used); ``factory`` builds the mapping the
    threads are kept in (e.g. ``partial(PersistentDict, filename=...)``,
    which writes them to a file when the saver's context closes). ``stack``
    is the saver's :class:`contextlib.ExitStack`: it holds the storage a
    ``factory`` built, takes a subclass's own cleanups
    (``self.stack.callback(...)``), and is closed when a ``with`` (or
    ``async with``) block around the saver ends, as LangGraph's is.

    Args:
        serde: A LangGraph serializer for the stored values (not with
            ``serializer``).
        factory: Called with no arguments, it returns the mutable mapping
            the threads are stored in (default: a plain dict); a context
            manager is entered on :attr:`stack`.
        serializer: How values become bytes; by default, exact copies of
            builtin-only values and JSON with tagged types for the rest.
        lease_ttl: Seconds a thread's lease lasts without renewal (default
            30); two runs of one thread in this process cannot overlap.

    Example:
        >>> saver = InMemorySaver()
        >>> config = {"configurable": {"thread_id": "1", "checkpoint_ns": ""}}
        >>> cp = {"v": 4, "id": "c1", "ts": "2026-01-01T00:00:00+00:00",
        ...       "channel_values": {"x": 1}, "channel_versions": {"x": 1},
        ...       "versions_seen": {}, "updated_channels": None}
        >>> saved = saver.put(config, cp, {"source": "input", "step": -1}, {"x": 1})
        >>> saver.get_tuple(saved).checkpoint["channel_values"]
        {'x': 1}
        >>> list(saver.list({"configurable": {"thread_id": "2"}}))
        []
    """

    _async_calls_sync: ClassVar[type[Any] | None] = None
    """The class whose ``aput``/``aput_writes`` only call ``put``/``put_writes`` (set below)."""

    def __init__(
        self,
        *,
        serde: Any = None,
        factory: Callable[[], MutableMapping[str, Any]] | None = None,
        serializer: Serializer | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
    ) -> None:
        if serde is not None and serializer is not None:
            raise InvalidInputError(
                "InMemorySaver takes serde= (a LangGraph serializer) or serializer= "
                "(a flowcore one), not both"
            )
        self.stack = ExitStack()
        spaces = None
        if factory is not None:
            spaces = factory()
            if isinstance(spaces, AbstractContextManager):
                # Closed with the saver: a PersistentDict writes its file then.
                self.stack.enter_context(spaces)
        codec = _codec_for(serde) if serde is not None else serializer
        self._core = MemoryCore(codec, lease_ttl=lease_ttl, spaces=spaces)
        self._lock = threading.Lock()

    @property
    def serde(self) -> Any:
        """The LangGraph serializer the values go through (settable before the saver is used).

        With flowcore's own serializer, a view of it with ``dumps_typed``
        and ``loads_typed``. Setting it changes how later values are stored;
        what was stored before is read with the new one too, so set it first.

        Example:
            >>> saver = InMemorySaver()
            >>> saver.serde.loads_typed(saver.serde.dumps_typed({"x": (1, 2)}))
            {'x': (1, 2)}
        """
        codec = self._core.codec
        if isinstance(codec, SerdeCodec):
            return codec.serde
        return TypedView(codec)

    @serde.setter
    def serde(self, value: Any) -> None:
        with self._lock:
            self._core.codec = _codec_for(value)

    # ------------------------------------------------------------------ context managers

    def __enter__(self) -> Self:
        self.stack.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return self.stack.__exit__(exc_type, exc, tb)

    async def __aenter__(self) -> Self:
        self.stack.__enter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return self.stack.__exit__(exc_type, exc, tb)

    # ------------------------------------------------------------------ the hot path

    # A checkpointed run saves a checkpoint and a task's writes at every step: these are
    # plain calls of the core, without the closure, hook and coroutine layers of the rest.

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> RunnableConfig:
        """Save a checkpoint as the child of the one ``config`` names; return its config.

        Example:
            >>> # saved = saver.put(config, checkpoint, {"source": "loop", "step": 1}, {"x": "2"})
        """
        with self._lock:
            return self._core.save(config, checkpoint, metadata, new_versions)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> RunnableConfig:
        """Async :meth:`put` (done at once: the store never waits).

        Example:
            >>> # saved = await saver.aput(config, checkpoint, metadata, {"x": "1"})
        """
        return self.put(config, checkpoint, metadata, new_versions)

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
        with self._lock:
            self._core.save_writes(config, stored_writes(writes), task_id, task_path)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes` (done at once: the store never waits).

        Example:
            >>> # await saver.aput_writes(saved, [("x", 2)], task_id="t1")
        """
        self.put_writes(config, writes, task_id, task_path)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`, through it, as LangGraph's in-memory saver does.

        A subclass that overrides ``get_tuple`` alone (a test's faulty or
        counting saver) is then called by async runs too.

        Example:
            >>> # saved = await saver.aget_tuple({"configurable": {"thread_id": "1"}})
        """
        return self.get_tuple(config)

    # ------------------------------------------------------------------ how operations run

    def _run_sync(self, op: Operation[T]) -> T:
        with self._lock:
            return _run_now(op(self._core))

    async def _run_async(self, op: Operation[T]) -> T:
        return self._run_sync(op)

    def _iter_sync(self, listing: Listing) -> Iterator[CheckpointTuple]:
        items = listing(self._core)
        while True:
            try:
                with self._lock:
                    item: CheckpointTuple = _run_now(anext(items))
            except StopAsyncIteration:
                return
            yield item

    async def _iter_async(self, listing: Listing) -> AsyncIterator[CheckpointTuple]:
        for item in self._iter_sync(listing):
            yield item


# Its aput and aput_writes only call put and put_writes: a run's saves call those directly
# (see _durable.SaverCalls) while a subclass keeps both as they are here.
InMemorySaver._async_calls_sync = InMemorySaver

MemorySaver = InMemorySaver
"""LangGraph's older name for :class:`InMemorySaver`."""
