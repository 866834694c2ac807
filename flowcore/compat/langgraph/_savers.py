"""LangGraph's checkpoint-saver API: the tuple a saver returns, a base class, write channels.

The savers themselves live in ``_savers_memory`` (``InMemorySaver``),
``_savers_sqlite`` (``AsyncSqliteSaver``) and ``_savers_sync``
(``SqliteSaver``); how the SQLite ones map LangGraph checkpoints onto
flowcore's checkpoint stores is in ``_savers_core``, how ``InMemorySaver``
keeps them in ``_savers_memory_core``, and the methods they share in
``_savers_shell``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

__all__ = [
    "ERROR",
    "INTERRUPT",
    "RESUME",
    "SCHEDULED",
    "WRITES_IDX_MAP",
    "BaseCheckpointSaver",
    "CheckpointTuple",
    "RunnableConfig",
    "ensure_saver",
    "next_version",
]

RunnableConfig = dict[str, Any]
"""A LangGraph config: ``{"configurable": {"thread_id", "checkpoint_ns", "checkpoint_id"}}``."""

V = TypeVar("V", int, float, str)

ERROR = "__error__"
"""The write channel of a task's error."""
SCHEDULED = "__scheduled__"
"""The write channel marking a task as scheduled."""
INTERRUPT = "__interrupt__"
"""The write channel of a task's interrupts."""
RESUME = "__resume__"
"""The write channel of the answers given to a task's interrupts."""

WRITES_IDX_MAP: Mapping[str, int] = {ERROR: -1, SCHEDULED: -2, INTERRUPT: -3, RESUME: -4}
"""Special write channels and the fixed (negative) index a write to them takes.

A regular write is keyed by ``(task_id, position in its put_writes call)``
and the first one saved under a key is kept; a write to a special channel
is keyed by ``(task_id, fixed index)`` and replaces the earlier one.
"""


class CheckpointTuple(NamedTuple):
    """A checkpoint with its config, metadata, parent and pending writes.

    ``pending_writes`` holds ``(task_id, channel, value)`` triples, ordered
    by task path, task id and write index.

    Example:
        >>> t = CheckpointTuple({"configurable": {"thread_id": "1"}}, {"id": "c1"}, {})
        >>> t.parent_config is None, t.pending_writes is None
        (True, True)
    """

    config: RunnableConfig
    checkpoint: dict[str, Any]
    metadata: dict[str, Any]
    parent_config: RunnableConfig | None = None
    pending_writes: list[tuple[str, str, Any]] | None = None


class BaseCheckpointSaver(Generic[V]):
    """The shape of a LangGraph checkpoint saver, for savers written on flowcore.

    Subclasses implement ``get_tuple``, ``list``, ``put``, ``put_writes``,
    ``delete_thread`` and their async twins (``aget_tuple`` ...). ``get`` and
    ``aget`` come for free; ``get_next_version`` counts up from 1.

    Example:
        >>> class Nothing(BaseCheckpointSaver[int]):
        ...     def get_tuple(self, config):
        ...         return None
        >>> Nothing().get({"configurable": {"thread_id": "1"}}) is None
        True
    """

    def get(self, config: RunnableConfig) -> dict[str, Any] | None:
        """The checkpoint ``config`` names (or the latest of its thread), or None.

        Example:
            >>> # saver.get({"configurable": {"thread_id": "1"}})["id"]
        """
        found = self.get_tuple(config)
        return None if found is None else found.checkpoint

    async def aget(self, config: RunnableConfig) -> dict[str, Any] | None:
        """Async :meth:`get`.

        Example:
            >>> # (await saver.aget({"configurable": {"thread_id": "1"}}))["id"]
        """
        found = await self.aget_tuple(config)
        return None if found is None else found.checkpoint

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint tuple ``config`` names, or None (implemented by subclasses)."""
        raise NotImplementedError

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple` (implemented by subclasses)."""
        raise NotImplementedError

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        """What each channel's ancestors hold for it: the writes since its stored value.

        Walks from the parent of the checkpoint ``config`` names up the parent
        chain (a fork sees its own branch only). Per channel: ``writes``, the
        pending writes to it on the way, oldest first, and ``seed``, the
        nearest ancestor's stored value, left out when no ancestor stores one.
        flowcore stores a ``DeltaChannel`` key's value at every checkpoint, so
        its own runs never need this; savers offer it for LangGraph's API.

        Example:
            >>> # saver.get_delta_channel_history(config=config, channels=["log"])["log"]["writes"]
        """
        walk = _HistoryWalk(channels)
        found = self.get_tuple(config) if channels else None
        cursor = found.parent_config if found is not None else None
        while cursor is not None and walk.remaining:
            found = self.get_tuple(cursor)
            if found is None:
                break
            walk.visit(found)
            cursor = found.parent_config
        return walk.result()

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        """Async :meth:`get_delta_channel_history`.

        Example:
            >>> # await saver.aget_delta_channel_history(config=config, channels=["log"])
        """
        walk = _HistoryWalk(channels)
        found = await self.aget_tuple(config) if channels else None
        cursor = found.parent_config if found is not None else None
        while cursor is not None and walk.remaining:
            found = await self.aget_tuple(cursor)
            if found is None:
                break
            walk.visit(found)
            cursor = found.parent_config
        return walk.result()

    def get_next_version(self, current: V | None, channel: Any = None) -> V:
        """The version a channel takes after ``current``: 1, 2, 3 ...

        Example:
            >>> saver = BaseCheckpointSaver()
            >>> saver.get_next_version(None), saver.get_next_version(2)
            (1, 3)
        """
        if isinstance(current, str):
            raise NotImplementedError("this saver counts versions as numbers")
        return 1 if current is None else current + 1  # type: ignore[return-value]


class _HistoryWalk:
    """The per-channel state of a walk up a checkpoint's ancestors (newest first)."""

    def __init__(self, channels: Sequence[str]) -> None:
        self.channels = list(channels)
        self.remaining = set(self.channels)
        self.newest_first: dict[str, list[tuple[str, str, Any]]] = {c: [] for c in self.channels}
        self.seeds: dict[str, Any] = {}

    def visit(self, found: CheckpointTuple) -> None:
        for write in reversed(found.pending_writes or ()):
            if write[1] in self.remaining:
                self.newest_first[write[1]].append(write)
        stored = found.checkpoint.get("channel_values") or {}
        for channel in [c for c in self.remaining if c in stored]:
            self.seeds[channel] = stored[channel]
            self.remaining.discard(channel)

    def result(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for channel in self.channels:
            entry: dict[str, Any] = {"writes": self.newest_first[channel][::-1]}
            if channel in self.seeds:
                entry["seed"] = self.seeds[channel]
            out[channel] = entry
        return out


def next_version(current: str | int | float | None) -> str:
    """LangGraph's saver versions: a zero-padded counter and a random tie-breaker.

    The counter keeps versions ordered as strings; the random part keeps two
    branches of a forked thread from producing equal versions.

    Example:
        >>> next_version(None).split(".")[0]
        '00000000000000000000000000000001'
    """
    if current is None:
        count = 0
    elif isinstance(current, int | float):
        count = int(current)
    else:
        count = int(str(current).split(".")[0])
    return f"{count + 1:032}.{random.random():016}"


def ensure_saver(checkpointer: Any) -> Any:
    """``checkpointer`` if it is one compile() accepts, else LangGraph's ``TypeError``.

    ``None``, ``True`` and ``False`` are accepted, and any object with a saver's
    read and write methods (flowcore's savers, LangGraph's ``BaseCheckpointSaver``
    subclasses such as its Postgres saver).

    Example:
        >>> ensure_saver(None) is None
        True
    """
    if checkpointer is None or checkpointer is True or checkpointer is False:
        return checkpointer
    if isinstance(checkpointer, BaseCheckpointSaver) or all(
        callable(getattr(checkpointer, name, None)) for name in _SAVER_METHODS
    ):
        return checkpointer
    raise TypeError(
        "Invalid checkpointer provided. Expected an instance of `BaseCheckpointSaver`, "
        f"`True`, `False`, or `None`. Received {type(checkpointer).__name__}. "
        "Pass a proper saver (e.g., InMemorySaver, AsyncPostgresSaver)."
    )


_SAVER_METHODS = ("aget_tuple", "aput", "aput_writes", "alist")
