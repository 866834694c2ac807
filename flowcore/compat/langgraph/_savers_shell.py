"""LangGraph's saver methods, written once over a core (:class:`SaverOperations`).

The three savers differ only in their core (``SaverCore`` on a flowcore
store for the SQLite savers, ``MemoryCore``'s dicts for ``InMemorySaver``)
and in where and how a core operation runs: ``InMemorySaver`` finishes it
at once under a lock, ``AsyncSqliteSaver``
awaits it on the caller's event loop (and its sync methods wait for that loop
from other threads), ``SqliteSaver`` runs it on a private event-loop thread.
So each saver defines four hooks (run an operation from sync code, from async
code, and the same for a listing) and inherits every public method from
:class:`SaverShell`, which hands each call to them as one operation, e.g.
``lambda core: core.get_tuple(config)``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from flowcore.checkpoint import ThreadLease
from flowcore.compat.langgraph._saved_writes import stored_writes
from flowcore.compat.langgraph._savers import (
    BaseCheckpointSaver,
    CheckpointTuple,
    RunnableConfig,
    next_version,
)
from flowcore.compat.langgraph._savers_batch import SaveBatch

__all__ = [
    "Listing",
    "Operation",
    "SaverOperations",
    "SaverShell",
    "SaverShellWithSyncMaintenance",
    "custom_version_rule",
]

T = TypeVar("T")


class SaverOperations(Protocol):
    """What a shell's operations call: :class:`SaverCore`, or ``InMemorySaver``'s own core."""

    async def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the latest of its thread and namespace."""
        ...

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints matching ``config``, ``filter`` and ``before``, newest first."""
        ...

    async def put(
        self,
        config: RunnableConfig,
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> RunnableConfig:
        """Store ``checkpoint`` as the child of the checkpoint ``config`` names."""
        ...

    async def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes against the checkpoint ``config`` names."""
        ...

    async def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint and write of a thread, in every namespace."""
        ...

    async def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of a thread to a new thread, keeping the ids."""
        ...

    async def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only the latest checkpoint per namespace (``keep_latest``) or none."""
        ...

    async def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Remove the checkpoints whose metadata names one of ``run_ids``."""
        ...

    async def acquire_lease(self, thread_id: str, holder: str) -> ThreadLease | None:
        """Take or renew a thread's lease (None: the store behind does not lease)."""
        ...

    async def release_lease(self, thread_id: str, holder: str) -> None:
        """Give a thread's lease back if ``holder`` has it."""
        ...


Operation = Callable[[SaverOperations], Coroutine[Any, Any, T]]
"""One core call, e.g. ``lambda core: core.get_tuple(config)``."""
Listing = Callable[[SaverOperations], AsyncIterator[CheckpointTuple]]
"""A core's ``list`` call, e.g. ``lambda core: core.list(config)``."""


class SaverShell(BaseCheckpointSaver[str]):
    """LangGraph's saver methods, each one :class:`SaverCore` operation run by hooks.

    A shell (``InMemorySaver``, ``AsyncSqliteSaver``, ``SqliteSaver``) only
    says where and how an operation runs, in four hooks: :meth:`_run_sync`
    and :meth:`_run_async` for one operation, :meth:`_iter_sync` and
    :meth:`_iter_async` for a listing. This class gives the async API, the
    sync API LangGraph requires of every saver (``get_tuple``, ``list``,
    ``put``, ``put_writes``, ``delete_thread``) and ``get_next_version``;
    :class:`SaverShellWithSyncMaintenance` adds the sync maintenance methods.

    Example:
        >>> import asyncio
        >>> from flowcore.checkpoint import InMemoryCheckpointer
        >>> class Blocking(SaverShell):
        ...     core = SaverCore(InMemoryCheckpointer())
        ...     def _run_sync(self, op):
        ...         return asyncio.run(op(self.core))
        >>> Blocking().get_tuple({"configurable": {"thread_id": "1"}}) is None
        True
    """

    # ------------------------------------------------------------------ the hooks

    def _run_sync(self, op: Operation[T]) -> T:
        """Run ``op`` from sync code and return its result."""
        raise NotImplementedError

    async def _run_async(self, op: Operation[T]) -> T:
        """Run ``op`` from async code and return its result."""
        raise NotImplementedError

    def _iter_sync(self, listing: Listing) -> Iterator[CheckpointTuple]:
        """The items of ``listing``, for sync code."""
        raise NotImplementedError

    def _iter_async(self, listing: Listing) -> AsyncIterator[CheckpointTuple]:
        """The items of ``listing``, for async code."""
        raise NotImplementedError

    def _open_batch(self) -> SaveBatch | None:
        """A :class:`SaveBatch` for one run's ``durability="async"`` saves, or None.

        None (the default) keeps every save a call of :meth:`aput` or
        :meth:`aput_writes`; a shell whose operations run on the caller's event
        loop may batch them instead.
        """
        return None

    # ------------------------------------------------------------------ thread leases

    async def _acquire_lease(self, thread_id: str, holder: str) -> ThreadLease | None:
        """Take or renew ``thread_id``'s lease for one run (see ``LeaseKeeper``)."""
        return await self._run_async(lambda core: core.acquire_lease(thread_id, holder))

    async def _release_lease(self, thread_id: str, holder: str) -> None:
        """Give ``thread_id``'s lease back at the end of a run."""
        await self._run_async(lambda core: core.release_lease(thread_id, holder))

    # ------------------------------------------------------------------ sync API

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the latest of its thread and namespace.

        Example:
            >>> # saver.get_tuple({"configurable": {"thread_id": "1"}})
        """
        return self._run_sync(lambda core: core.get_tuple(config))

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
        return self._iter_sync(
            lambda core: core.list(config, filter=filter, before=before, limit=limit)
        )

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
            >>> # saved = saver.put(config, checkpoint, {"source": "loop", "step": 1}, {"x": "2"})
        """
        return self._run_sync(lambda core: core.put(config, checkpoint, metadata, new_versions))

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
        self._run_sync(
            lambda core: core.put_writes(config, stored_writes(writes), task_id, task_path)
        )

    def delete_thread(self, thread_id: str) -> None:
        """Remove a thread: every namespace, checkpoint and write.

        Example:
            >>> # saver.delete_thread("1")
        """
        self._run_sync(lambda core: core.delete_thread(thread_id))

    def get_next_version(self, current: str | None, channel: Any = None) -> str:
        """The version after ``current``: a zero-padded counter plus a random tie-breaker.

        Example:
            >>> SaverShell().get_next_version("00000000000000000000000000000001.5")[:32]
            '00000000000000000000000000000002'
        """
        return next_version(current)

    # ------------------------------------------------------------------ async API

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`.

        Example:
            >>> # await saver.aget_tuple({"configurable": {"thread_id": "1"}})
        """
        return await self._run_async(lambda core: core.get_tuple(config))

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
        listing = self._iter_async(
            lambda core: core.list(config, filter=filter, before=before, limit=limit)
        )
        async for item in listing:
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
        return await self._run_async(
            lambda core: core.put(config, checkpoint, metadata, new_versions)
        )

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
        await self._run_async(
            lambda core: core.put_writes(config, stored_writes(writes), task_id, task_path)
        )

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`.

        Example:
            >>> # await saver.adelete_thread("1")
        """
        await self._run_async(lambda core: core.delete_thread(thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Remove the checkpoints whose metadata ``run_id`` is one of ``run_ids``.

        Example:
            >>> # await saver.adelete_for_runs(["run-1"])
        """
        await self._run_async(lambda core: core.delete_for_runs(run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's checkpoints and writes to a thread that has none.

        Example:
            >>> # await saver.acopy_thread("a", "b")
        """
        await self._run_async(lambda core: core.copy_thread(source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only each namespace's latest checkpoint (``keep_latest``) or none (``delete``).

        Example:
            >>> # await saver.aprune(["1"], strategy="keep_latest")
        """
        await self._run_async(lambda core: core.prune(thread_ids, strategy=strategy))


class SaverShellWithSyncMaintenance(SaverShell):
    """A :class:`SaverShell` whose maintenance methods have sync twins too.

    LangGraph's ``AsyncSqliteSaver`` has no sync ``delete_for_runs``,
    ``copy_thread`` or ``prune``; ``InMemorySaver`` and ``SqliteSaver`` do.

    Example:
        >>> SaverShellWithSyncMaintenance.prune is not None
        True
    """

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Remove the checkpoints whose metadata ``run_id`` is one of ``run_ids``.

        Example:
            >>> # saver.delete_for_runs(["run-1"])
        """
        self._run_sync(lambda core: core.delete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's checkpoints and writes to a thread that has none.

        Example:
            >>> # saver.copy_thread("a", "b")
        """
        self._run_sync(lambda core: core.copy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only each namespace's latest checkpoint (``keep_latest``) or none (``delete``).

        Example:
            >>> # saver.prune(["1"], strategy="keep_latest")
        """
        self._run_sync(lambda core: core.prune(thread_ids, strategy=strategy))


def custom_version_rule(saver: Any) -> Callable[[Any], Any] | None:
    """The saver's own ``get_next_version``, when its class overrides flowcore's.

    A run counts channel versions itself (plain ints) unless the saver brings
    its own rule, as LangGraph lets a saver do: then every new version comes
    from ``saver.get_next_version(current, None)``, and its errors end the run.

    Example:
        >>> custom_version_rule(SaverShell()) is None
        True
    """
    method = getattr(type(saver), "get_next_version", None)
    if method is None or method in _OWN_VERSION_RULES:
        return None
    bound = saver.get_next_version
    return lambda current: bound(current, None)


_OWN_VERSION_RULES = (BaseCheckpointSaver.get_next_version, SaverShell.get_next_version)
