"""How a compat run saves: checkpoints, pending writes, durability, the run's end.

:class:`~flowcore.compat.langgraph._loop.Run` takes these methods
from :class:`RunSaving`, written against it (``self: Run``). mypy
refuses a self type narrower than the class that declares it, hence the
``type: ignore[misc]`` on each ``def``; it still checks every body and
every call against ``Run``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flowcore.compat.langgraph._debug_tasks import debug_task_entries
from flowcore.compat.langgraph._delta import DeltaValue
from flowcore.compat.langgraph._durable import CheckpointCall, RunSaves
from flowcore.compat.langgraph._loop_helpers import (
    _durability,
    empty_checkpoint,
    new_checkpoint_id,
    utc_now_iso,
)
from flowcore.compat.langgraph._node import (
    TASKS,
)
from flowcore.compat.langgraph._planner import (
    INTERRUPT,
    Task,
)
from flowcore.compat.langgraph._records import (
    CheckpointMade,
)
from flowcore.compat.langgraph._subgraph_detect import subgraph_task_state
from flowcore.compat.langgraph._untracked import (
    persisted_writes,
    stored_sends,
    untracked_keys,
)
from flowcore.runtime.leases import LeaseKeeper

if TYPE_CHECKING:
    from flowcore.compat.langgraph._loop import Run

__all__ = ["RunSaving"]

# The channels whose writes encode_write changes whatever their value, and the value
# types it never changes on another channel (an Overwrite is none of them).
_ENCODED_CHANNELS = frozenset({INTERRUPT, TASKS})
_PLAIN_WRITES = frozenset({str, int, float, bool, type(None), bytes, list, dict, tuple})


class RunSaving:
    """The methods of :class:`Run` for how a compat run saves."""

    # What these methods set on the object: declared here for the type checker.
    _untracked: frozenset[str] | None
    checkpoint: dict[str, Any]
    deferred: list[tuple[Task, Sequence[tuple[str, Any]]]]
    dirty: bool
    metadata: dict[str, Any]
    parent_config: dict[str, Any] | None
    saved_config: dict[str, Any] | None
    saved_versions: dict[str, Any]
    saves: RunSaves | None
    step: int

    # ------------------------------------------------------------ persistence
    def _ckpt_config(self: Run) -> dict[str, Any]:  # type: ignore[misc]
        conf = {"thread_id": self.thread_id, "checkpoint_ns": self.ns}
        if "checkpoint_id" in self.configurable:
            conf["checkpoint_id"] = self.configurable["checkpoint_id"]
        return {"configurable": conf}

    async def _put_checkpoint(self: Run, source: str) -> None:  # type: ignore[misc]
        if self.saver is None:
            # Made only if a task id needs it (see _UnreadId).
            self.checkpoint = {**self.checkpoint, "id": None}
        else:
            after = self.checkpoint.get("id") or self.last_checkpoint_id
            self.checkpoint = {**self.checkpoint, "id": new_checkpoint_id(after)}
        parents = dict(self.configurable.get("checkpoint_map") or {})
        self.metadata = {"source": source, "step": self.step, "parents": parents}
        if self.config_metadata:
            self.metadata = {**self.config_metadata, **self.metadata}
        if self.saver is not None and self.durability != "exit":
            # _save(), inlined: a checkpointed run saves at every step.
            call = self._checkpoint_call()
            saves = self.saves or self._saves()
            self._saved(
                await saves.checkpoint(call.config, call.checkpoint, call.metadata, call.versions)
            )
        else:
            # Values are read when (and if) the checkpoint is saved.
            self.dirty = True
            if self.saver is not None:
                await self._saves().hold()
        self.step += 1
        if self.saver is not None and "checkpoint" in self.wants:
            self._checkpoint_event()

    def _checkpoint_event(self: Run, *, reloaded: bool = False) -> None:  # type: ignore[misc]
        """Record the checkpoint just made (runs on a thread only).

        Called once the step has moved on, so the upcoming tasks it lists are
        planned (and their ids made) for the step they will run in. With
        ``reloaded``, the checkpoint is the saved one a resumed run starts from:
        its tasks show what the step's pending writes say of them.
        """
        # Under "exit" nothing is stored until the run ends, and then with the
        # run's first parent: that is the parent the record names.
        stored_as = (
            self.saved_config if self.durability == "exit" and not reloaded else self.parent_config
        )
        upcoming = self.prepare(for_execution=False)
        states = self._task_states(upcoming)
        entries = None
        if reloaded:
            graph = self.graph
            entries = debug_task_entries(
                upcoming,
                self.pending,
                self.output_keys,
                root=self.output_keys[0] if graph.root_output else None,
                states=states,
            )
        made = CheckpointMade(
            step=self.step - 1,
            thread_id=str(self.thread_id),
            checkpoint_id=str(self.checkpoint["id"]),
            parent_id=((stored_as or {}).get("configurable") or {}).get("checkpoint_id"),
            # Under "exit" the saved config is the one the run started from, not this one.
            config=(self.saved_config if reloaded or self.durability != "exit" else None)
            or {
                "configurable": {
                    "thread_id": str(self.thread_id),
                    "checkpoint_ns": self.ns,
                    "checkpoint_id": self.checkpoint["id"],
                }
            },
            parent_config=self.parent_config,
            metadata=dict(self.metadata),
            values=self.graph.read_output(self.channels, self.graph.stream_keys),
            upcoming=upcoming,
            task_states=states,
            task_entries=entries,
            reloaded=reloaded,
        )
        self.emit("checkpoint", made)

    def _task_states(self: Run, tasks: Sequence[Task]) -> dict[str, Any]:  # type: ignore[misc]
        """By task id, the config of the history each task's subgraph keeps."""
        found: dict[str, Any] = {}
        for task in tasks:
            spec = self.graph.nodes.get(task.name)
            if spec is None:
                continue
            state = subgraph_task_state(spec.action, self.thread_id, self.ns, task.name, task.id)
            if state is not None:
                found[task.id] = state
        return found

    def _checkpoint_call(self: Run) -> CheckpointCall:  # type: ignore[misc]
        """The saver call that stores the run's checkpoint as it stands now."""
        base = self.saved_config or {
            "configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.ns}
        }
        versions = self.checkpoint["channel_versions"]
        # As in LangGraph, a channel never written (no version) is not stored, even
        # when it holds an initial value (an operator channel's empty value).
        values = {
            k: v for k, v in self.graph.snapshot_channels(self.channels).items() if k in versions
        }
        if TASKS in values and self._untracked_keys():
            values[TASKS] = stored_sends(values[TASKS], self._untracked_keys())
        self.checkpoint["channel_values"] = values
        self.checkpoint["ts"] = utc_now_iso()
        self.checkpoint["updated_channels"] = sorted(self.updated)
        saved = self.saved_versions
        changed = {k: v for k, v in versions.items() if saved.get(k) != v}
        return CheckpointCall(base, self.checkpoint, self.metadata, changed)

    def _saved(self: Run, new_config: dict[str, Any]) -> None:  # type: ignore[misc]
        self.parent_config = self.saved_config
        self.saved_config = new_config
        self.saved_versions = dict(self.checkpoint["channel_versions"])
        self.dirty = False

    async def _save(self: Run) -> None:  # type: ignore[misc]
        call = self._checkpoint_call()
        self._saved(
            await self._saves().checkpoint(
                call.config, call.checkpoint, call.metadata, call.versions
            )
        )

    async def _put_writes(  # type: ignore[misc]
        self: Run, task: Task, writes: Sequence[tuple[str, Any]], *, last: bool = False
    ) -> None:
        """Save a task's writes; ``last``: they may ride with the step's checkpoint."""
        if self.saver is None or self.saved_config is None:
            return
        if self.durability == "exit":
            # Stored when the run ends (see _exit), on whichever checkpoint it ends at.
            self.deferred.append((task, writes))
            return
        encoded = self._encoded(writes)
        saves = self.saves or self._saves()
        # The task path as savers store it is the task's sort key (computed once per task).
        await saves.writes(self.saved_config, encoded, task.id, task.sort_key, rides=last)

    def _encoded(self: Run, writes: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:  # type: ignore[misc]
        """Writes as a saver stores them (none to an ``UntrackedValue`` key)."""
        untracked = self._untracked
        if untracked is None:
            untracked = self._untracked_keys()
        if untracked:
            writes = persisted_writes(writes, untracked)
        encode = self.graph.encode_write
        # Only interrupts, Sends and Overwrites are stored otherwise than as written:
        # the usual write skips the call.
        return [
            (c, v) if c not in _ENCODED_CHANNELS and type(v) in _PLAIN_WRITES else (c, encode(c, v))
            for c, v in writes
        ]

    def _untracked_keys(self: Run) -> frozenset[str]:  # type: ignore[misc]
        if self._untracked is None:
            self._untracked = untracked_keys(self.channels)
        return self._untracked

    def _saves(self: Run) -> RunSaves:  # type: ignore[misc]
        # Opened at the first save: an open batch makes the saver settle it before each
        # operation, which a run that saves nothing should not cost.
        if self.saves is None:
            self.saves = RunSaves(self.saver, _durability(self.durability))
        return self.saves

    async def _close_saves(self: Run, ride: LeaseKeeper | None = None) -> None:  # type: ignore[misc]
        """Wait for the queued saves: a run returns, pauses or fails only once they are stored.

        Under ``exit``, store the run's checkpoint now, then the writes of the
        tasks that finished since (in task order). ``ride``: the run's lease,
        released in the transaction of the last batch if there is one.
        """
        saves, self.saves = self.saves, None
        if saves is None:
            return
        if (
            saves.holds_checkpoint
            and self.saved_config is None
            and not self.ns
            and self._has_delta_keys()
        ):
            await self._save_root()
        if saves.holds_checkpoint and self.pending:
            by_task: dict[str, list[tuple[str, Any]]] = {}
            for task_id, chan, value in self.pending:
                by_task.setdefault(task_id, []).append((chan, value))
            for task in [*self.tasks, *self.calls.values()]:
                if task.id in by_task:
                    encoded = self._encoded(by_task[task.id])
                    await saves.hold_writes(encoded, task.id, task.sort_key)
        stored = await saves.close(self._checkpoint_call, ride=ride)
        if stored is not None:
            self._saved(stored)

    def _has_delta_keys(self: Run) -> bool:  # type: ignore[misc]
        """Whether the run wrote some ``DeltaChannel`` key (it has a version)."""
        versions = self.checkpoint["channel_versions"]
        return any(
            isinstance(channel, DeltaValue) and name in versions
            for name, channel in self.channels.items()
        )

    async def _save_root(self: Run) -> None:  # type: ignore[misc]
        """Store the empty checkpoint a new thread starts from, as the run's first parent.

        Under "exit" a run on a new thread stores only its last checkpoint; with a
        ``DeltaChannel`` key LangGraph also stores the empty one before it (step -2),
        so the thread can be forked from before its first input.
        """
        assert self.saver is not None
        root = {**empty_checkpoint(), "id": self.root_id}
        base = {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.ns}}
        self.saved_config = await self.saver.aput(base, root, {"step": -2}, {})

    def _ends_unsaved(self: Run) -> bool:  # type: ignore[misc]
        """Whether this run, ending normally now, stores nothing it holds.

        Under "exit" a subgraph run that keeps one task's history (its namespace
        names task ids) and ends without error or pause saves no checkpoint: its
        parent's checkpoint alone records the step. A ``checkpointer=True``
        subgraph (one history per thread) still saves.
        """
        if self.durability != "exit" or not self.ns or self.status == "out_of_steps":
            return False
        return any(":" in part for part in self.ns.split("|"))

    async def _exit(self: Run) -> None:  # type: ignore[misc]
        held = self.saves is not None and self.saves.holds_checkpoint
        # Nothing is written after the last batch unless writes are deferred (below):
        # then the batch may give the lease back in its own commit.
        await self._close_saves(None if self.deferred else self.lease_keeper)
        if not held and self.saver is not None and self.saved_config is not None and self.deferred:
            # No new checkpoint (a resumed run that paused again in the same step):
            # the writes belong to the checkpoint it resumed from.
            for task, writes in self.deferred:
                encoded = self._encoded(writes)
                await self.saver.aput_writes(self.saved_config, encoded, task.id, task.sort_key)
        self.deferred = []
