"""How one LangGraph-shaped run's checkpoints and task writes reach its saver.

The mode rules (``sync``, ``async``, ``exit``) are the runtime's
:class:`~flowcore.runtime.durability.DurabilityWriter`, the same one native
runs save through; this module only picks the port it stores through:

* flowcore's own savers (when they batch): :class:`SaveBatch`, which builds
  each store record in the foreground, without reading the store, and hands
  the records to the writer (``save_many``: one transaction per batch);
* any other saver, or ``exit``: :class:`SaverCalls`, one ``aput`` or
  ``aput_writes`` per save. Such a saver returns the config of what it
  stored, which the run needs before it goes on, so its saves are never
  queued: ``async`` on it stores each save before the run goes on, as
  ``sync`` does.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flowcore.compat.langgraph._savers import RunnableConfig
from flowcore.compat.langgraph._savers_batch import SaveBatch
from flowcore.compat.langgraph._savers_shell import SaverShell
from flowcore.runtime.durability import Durability, DurabilityWriter
from flowcore.runtime.leases import LeaseKeeper

__all__ = ["CheckpointCall", "RunSaves", "SaverCalls", "WritesCall", "copy_checkpoint"]


@dataclass(slots=True)
class CheckpointCall:
    """The arguments of one ``aput``."""

    config: RunnableConfig
    checkpoint: dict[str, Any]
    metadata: dict[str, Any]
    versions: dict[str, Any]


@dataclass(slots=True)
class WritesCall:
    """The arguments of one ``aput_writes``; no ``config``: the newest checkpoint stored."""

    config: RunnableConfig | None
    writes: list[tuple[str, Any]]
    task_id: str
    task_path: str


class SaverCalls:
    """The runtime writer's port onto a LangGraph-style saver: one call per save.

    Example:
        >>> # port = SaverCalls(saver); await port.save_checkpoint(call); port.config
    """

    def __init__(self, saver: Any) -> None:
        self.saver = saver
        self.config: RunnableConfig | None = None
        """What the saver returned for the newest checkpoint it stored."""
        # A saver whose aput and aput_writes only call put and put_writes (flowcore's
        # in-memory one, unless a subclass changed them): called without the coroutines.
        kind = type(saver)
        base = getattr(kind, "_async_calls_sync", None)
        at_once = (
            base is not None and kind.aput is base.aput and kind.aput_writes is base.aput_writes
        )
        self._put: Any = saver.put if at_once else None
        self._put_writes: Any = saver.put_writes if at_once else None
        # Savers written before LangGraph added task_path take three arguments: it is
        # passed only to a method that names it, as LangGraph's loop does.
        chosen = saver.put_writes if at_once else saver.aput_writes
        self._task_path: bool = _takes_task_path(chosen)

    async def save_checkpoint(self, item: CheckpointCall) -> None:
        """Store one checkpoint through ``aput``."""
        if self._put is not None:
            self.config = self._put(item.config, item.checkpoint, item.metadata, item.versions)
            return
        self.config = await self.saver.aput(
            item.config, item.checkpoint, item.metadata, item.versions
        )

    async def save_writes(self, item: WritesCall) -> None:
        """Store one task's writes through ``aput_writes``."""
        config = item.config if item.config is not None else self.config
        if self._put_writes is not None:
            if self._task_path:
                self._put_writes(config, item.writes, item.task_id, item.task_path)
            else:
                self._put_writes(config, item.writes, item.task_id)
            return
        if self._task_path:
            await self.saver.aput_writes(config, item.writes, item.task_id, item.task_path)
        else:
            await self.saver.aput_writes(config, item.writes, item.task_id)


# Weak keys: savers defined inside functions (tests) come and go.
_TAKES_TASK_PATH: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _takes_task_path(method: Any) -> bool:
    """Whether a saver's ``put_writes`` / ``aput_writes`` has a ``task_path`` parameter."""
    key = getattr(method, "__func__", method)
    found = _TAKES_TASK_PATH.get(key)
    if found is None:
        try:
            found = "task_path" in inspect.signature(method).parameters
        except (TypeError, ValueError):
            found = True
        _TAKES_TASK_PATH[key] = found
    return found


# Held under "exit" in place of the checkpoint the run makes at its end (see RunSaves.hold).
_AT_EXIT = CheckpointCall({}, {}, {}, {})


class RunSaves:
    """One run's saves: the runtime writer, over the port that suits its saver.

    Example:
        >>> # saves = RunSaves(saver, "async")
        >>> # config = await saves.checkpoint(base, checkpoint, metadata, changed)
        >>> # await saves.close()
    """

    def __init__(self, saver: Any, durability: Durability) -> None:
        self.durability: Durability = durability
        self.batch: SaveBatch | None = None
        if durability != "exit" and isinstance(saver, SaverShell):
            self.batch = saver._open_batch()
        self.calls = SaverCalls(saver)
        # Without a batch a save must be stored before its config is known (see module).
        mode: Durability = "exit" if durability == "exit" else "sync"
        self.writer: DurabilityWriter[CheckpointCall, WritesCall] = DurabilityWriter(
            self.calls, mode
        )
        if self.batch is not None and durability == "sync":
            self.batch.use("sync")
        # flowcore's savers serialize what they are given before a save returns and keep
        # no reference to it, as does a sync batch: no private copy needed.
        self.copies = not (
            (self.batch is None and isinstance(saver, SaverShell))
            or (self.batch is not None and durability == "sync")
        )

    async def checkpoint(
        self,
        config: RunnableConfig,
        checkpoint: dict[str, Any],
        metadata: dict[str, Any],
        versions: dict[str, Any],
    ) -> RunnableConfig:
        """Save a checkpoint as the child of the one ``config`` names; its config."""
        if self.copies:
            checkpoint, metadata = copy_checkpoint(checkpoint), dict(metadata)
        if self.batch is not None:
            return await self.batch.put(config, checkpoint, metadata, versions)
        await self.writer.checkpoint(CheckpointCall(config, checkpoint, metadata, versions))
        assert self.calls.config is not None
        return self.calls.config

    async def writes(
        self,
        config: RunnableConfig,
        writes: list[tuple[str, Any]],
        task_id: str,
        task_path: str,
        *,
        rides: bool = False,
    ) -> None:
        """Save a task's writes against the checkpoint ``config`` names.

        ``rides``: the last task of a clean step, whose writes may be committed
        with the checkpoint that closes it (flowcore's savers under ``sync``).
        """
        if self.batch is not None:
            await self.batch.put_writes(config, writes, task_id, task_path, rides=rides)
        else:
            await self.writer.writes(WritesCall(config, writes, task_id, task_path))

    async def hold(self) -> None:
        """Under ``exit``: note that a checkpoint was made; it is built and stored at close."""
        await self.writer.checkpoint(_AT_EXIT)

    @property
    def holds_checkpoint(self) -> bool:
        """Whether ``exit`` has a checkpoint to store at close."""
        return self.writer.holds_checkpoint

    async def hold_writes(
        self, writes: list[tuple[str, Any]], task_id: str, task_path: str
    ) -> None:
        """Under ``exit``: writes to store at close, against the checkpoint stored then."""
        await self.writer.writes(WritesCall(None, writes, task_id, task_path), key=task_id)

    async def close(
        self, last: Callable[[], CheckpointCall] | None = None, *, ride: LeaseKeeper | None = None
    ) -> RunnableConfig | None:
        """Store what is queued or held; the config of the checkpoint ``exit`` stored, if any.

        ``last`` builds the checkpoint ``exit`` stores (from the run as it ends).
        ``ride``: the run's lease, given back with the batch's last commit
        (see :meth:`SaveBatch.close`).
        """
        if self.batch is not None:
            batch, self.batch = self.batch, None
            await batch.close(ride)
            return None
        if self.durability != "exit" or not self.writer.holds_checkpoint:
            await self.writer.close()
            return None
        assert last is not None
        call: list[CheckpointCall] = []

        def built(_: CheckpointCall) -> CheckpointCall:
            call.append(last())
            if self.copies:
                made = call[0]
                return CheckpointCall(
                    made.config,
                    copy_checkpoint(made.checkpoint),
                    dict(made.metadata),
                    made.versions,
                )
            return call[0]

        await self.writer.close(built)
        return self.calls.config if call else None


def copy_checkpoint(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a LangGraph checkpoint that shares no mutable map with it."""
    return {
        **checkpoint,
        "channel_values": dict(checkpoint.get("channel_values") or {}),
        "channel_versions": dict(checkpoint.get("channel_versions") or {}),
        "versions_seen": {k: dict(v) for k, v in (checkpoint.get("versions_seen") or {}).items()},
    }
