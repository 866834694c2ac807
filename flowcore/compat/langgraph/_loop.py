"""One run of a compiled graph: LangGraph's superstep algorithm on flowcore's compat runtime.

A run is a series of supersteps. Before each, the nodes whose trigger
channels changed since they last ran are picked (plus one task per
``Send`` of the previous superstep); they run concurrently; their writes are
applied together, sorted by task path (node name, then ``Send`` order), never
by finish time; then the checkpoint is saved. Each node's writes are saved as
it finishes, so a failure or a pause elsewhere in the superstep never makes
it run again. The step counter, the recursion limit, interrupts and resume
follow LangGraph 1.2's rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from flowcore.checkpoint import ThreadLease
from flowcore.compat.langgraph._calls import run_with_calls, tasks_defined
from flowcore.compat.langgraph._channels import MISSING, Channel
from flowcore.compat.langgraph._context import TaskScope, running_scope, set_scope
from flowcore.compat.langgraph._delta import DeltaValue
from flowcore.compat.langgraph._durable import CheckpointCall, RunSaves, copy_checkpoint
from flowcore.compat.langgraph._error_handlers import (
    ERROR_SOURCE,
    NodeError,
    failure_from_record,
    failure_record,
    run_handled,
)
from flowcore.compat.langgraph._errors import (
    EmptyInputError,
    GraphDrained,
    GraphInterrupt,
    GraphRecursionError,
    InvalidUpdateError,
    NodeCancelledError,
    ParentCommand,
)
from flowcore.compat.langgraph._interrupt_options import is_invalid_resume
from flowcore.compat.langgraph._node import (
    TASKS,
    call_with_config,
    control_writes,
    retry_call,
    target_writes,
    update_writes,
)
from flowcore.compat.langgraph._planner import (
    ERROR,
    INTERRUPT,
    NO_WRITES,
    RESUME,
    Task,
    _version_key,
    fold_writes,
    plan_tasks,
    should_interrupt,
)
from flowcore.compat.langgraph._records import (
    KINDS,
    CheckpointMade,
    CustomChunk,
    Outcome,
    TaskEnd,
    TaskStart,
)
from flowcore.compat.langgraph._runtime import ExecutionInfo, RunControl, Runtime, ServerInfo
from flowcore.compat.langgraph._savers_records import merged_metadata
from flowcore.compat.langgraph._savers_shell import SaverShell
from flowcore.compat.langgraph._strict_resume import check_resume, strict_resume_on
from flowcore.compat.langgraph._tracing import RunObserver, observe
from flowcore.compat.langgraph._types import START, Command, Interrupt
from flowcore.compat.langgraph._untracked import (
    persisted_writes,
    stored_sends,
    untracked_keys,
)
from flowcore.compat.langgraph._update_steps import moved_past
from flowcore.runtime import call_node, run_lease
from flowcore.runtime.durability import Durability
from flowcore.runtime.steps import StepWrites, run_supersteps

if TYPE_CHECKING:
    from flowcore.compat.langgraph._pregel import CompiledStateGraph

__all__ = [
    "ERROR",
    "INTERRUPT",
    "NO_WRITES",
    "RESUME",
    "Run",
    "Task",
    "empty_checkpoint",
    "new_checkpoint_id",
]

NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"

Sink = Callable[[tuple[str, ...], str, Any], None]


def new_checkpoint_id(after: str | None = None) -> str:
    """A time-ordered id that sorts after ``after`` (so newest-first listing works).

    Example:
        >>> first = new_checkpoint_id()
        >>> new_checkpoint_id(first) > first
        True
    """
    global _last_made
    now = time.time_ns()
    if after:
        # A run passes the id it made last: its time is remembered, not parsed again.
        last = _last_made
        previous = last[1] if after is last[0] else _id_time(after)
        if now <= previous:
            now = previous + 1
    # The tail only has to keep two ids of the same nanosecond apart; it is not a secret.
    tail = random.getrandbits(64)
    # One format call for the 8-4-4-4-12 groups of the 32 hex digits of (time, tail).
    made = (
        f"{now >> 32:08x}-{(now >> 16) & 0xFFFF:04x}-{now & 0xFFFF:04x}-"
        f"{tail >> 48:04x}-{tail & 0xFFFFFFFFFFFF:012x}"
    )
    _last_made = (made, now)  # one tuple, replaced whole: other threads see a matching pair
    return made


# The id new_checkpoint_id made last, and its time.
_last_made: tuple[str, int] = ("", 0)


def _id_time(checkpoint_id: str) -> int:
    """The time (ns) at the start of an id made by :func:`new_checkpoint_id`; 0 if it has none."""
    try:
        return int(checkpoint_id.replace("-", "")[:16], 16)
    except ValueError:
        return 0


def empty_checkpoint() -> dict[str, Any]:
    """A checkpoint of a thread that never ran."""
    return {
        "v": 4,
        "id": new_checkpoint_id(),
        "ts": datetime.now(UTC).isoformat(),
        "channel_values": {},
        "channel_versions": {},
        "versions_seen": {},
        "updated_channels": None,
    }


class Run:
    """Everything one invocation needs, and the loop that drives it."""

    def __init__(
        self,
        graph: CompiledStateGraph,
        run_input: Any,
        config: Mapping[str, Any],
        *,
        sink: Sink,
        durability: str,
        interrupt_before: Sequence[str],
        interrupt_after: Sequence[str],
        parent_scope: TaskScope | None = None,
        checkpoint_ns: str = "",
    ) -> None:
        self.graph = graph
        self.input = run_input
        self.config = dict(config)
        self.configurable = dict(config.get("configurable") or {})
        # The run's own config keys (plain values) that each checkpoint's metadata carries.
        self.config_metadata = merged_metadata(config, {})
        self.sink = sink
        self.ns_path: tuple[str, ...] = tuple(p for p in checkpoint_ns.split("|") if p)
        self.resuming = False
        self.force_resume = False
        self.durability = durability
        self.interrupt_before = tuple(interrupt_before)
        self.interrupt_after = tuple(interrupt_after)
        self.parent_scope = parent_scope
        self.ns = checkpoint_ns
        self.thread_id = self.configurable.get("thread_id")
        self.saver = graph.checkpointer if self.thread_id is not None else None
        # The UntrackedValue keys, whose writes are never stored (found at the first save).
        self._untracked: frozenset[str] | None = None
        self.limit = int(config.get("recursion_limit", graph.default_recursion_limit))
        if self.limit < 1:
            raise ValueError("recursion_limit must be at least 1")
        self.max_concurrency = config.get("max_concurrency")
        self.channels: dict[str, Channel] = {}
        self.checkpoint: dict[str, Any] = empty_checkpoint()
        # The newest checkpoint id this run made, so that ids made later sort after it.
        self.last_checkpoint_id: str | None = self.checkpoint["id"]
        # Sorts before every checkpoint this run makes: the id of a new thread's root.
        self.root_id: str = self.checkpoint["id"]
        self.metadata: dict[str, Any] = {"step": -2}
        self.saved_config: dict[str, Any] | None = None
        self.parent_config: dict[str, Any] | None = None
        self.pending: list[tuple[str, str, Any]] = []
        self.tasks: list[Task] = []
        self.step = 0
        self.stop = 0
        self.status = "input"
        self.null_resume: list[Any] = []
        self.resume_by_id: dict[str, Any] = {}
        self.interrupts: list[Interrupt] = []
        self.last_values: Any = MISSING
        self.dirty = False
        self.updated: set[str] = set()
        # The record kinds (see _records) some consumer of the sink reads: a kind not
        # in it is never built. Every kind by default, so a run started outside
        # astream()/ainvoke()/run_stream() hides nothing.
        self.wants: set[str] = set(KINDS)
        # Channels whose version changed in the last apply (None: look at every node).
        self.changed: set[str] | None = None
        # One-step trigger channels holding a value: the only ones a new superstep clears.
        self.live: set[str] = set()
        self.top_version: Any = None
        self.output_keys: list[str] = list(graph.stream_keys)
        self.saved_versions: dict[str, Any] = {}
        # How saves reach the saver under the run's durability (see _durable).
        self.saves: RunSaves | None = None
        # The first task of the running superstep to fail (in time): the error the run raises.
        self.failure: BaseException | None = None
        # What a node's Runtime carries (see _runtime): set by the graph for each run.
        self.context: Any = None
        self.control: RunControl | None = None
        # The @task calls of the running superstep (see _calls), by id: under
        # durability "exit" their writes are stored with the step's when the run ends.
        self.calls: dict[str, Task] = {}
        # Under durability "exit", the task writes this run made, stored when it ends.
        self.deferred: list[tuple[Task, Sequence[tuple[str, Any]]]] = []
        # The tasks whose writes came from the node cache (see _cache), not from a call.
        self.cached_ids: set[str] = set()
        # The loop the run executes on and its thread: a sync node (in a worker thread)
        # that invokes another graph runs that child run here (see CompiledStateGraph.invoke).
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread: int | None = None
        # Replaying from a past checkpoint: its id (children of the run inherit it). A
        # subgraph with a history of its own loads its state as of that checkpoint.
        self.replay_of: str | None = None
        # Load the newest checkpoint made before this id instead of the newest of all.
        self.as_of: str | None = None
        # Namespaces of subgraphs with a history of their own entered by this replay
        # (shared with its child runs): only a first entry goes back in time.
        self.entered: set[str] = set()
        # The run's LangChain and graph-lifecycle callbacks (see _tracing): None when
        # its config has none, so an untraced run pays nothing for them.
        self.observer: RunObserver | None = None

    def emit(self, kind: str, payload: Any) -> None:
        """Hand one record of this run's event stream to its sink (see ``_records``).

        Callers build a record only if ``kind in self.wants``.
        """
        self.sink(self.ns_path, kind, payload)

    def write_custom(self, node: str, chunk: Any) -> None:
        """Send a custom stream chunk written by node ``node``."""
        if "custom" in self.wants:
            self.emit("custom", CustomChunk(node, chunk, self.step))

    def task_runtime(self, scope: TaskScope) -> Runtime[Any]:
        """The ``Runtime`` a node of this run sees (built only when one asks)."""
        configurable = self.configurable
        checkpoint_id = self.checkpoint.get("id") or self.last_checkpoint_id or ""
        info = ExecutionInfo(
            checkpoint_id=str(checkpoint_id),
            checkpoint_ns=f"{self.ns}|{scope.node}:{scope.task_id}".lstrip("|"),
            task_id=scope.task_id,
            thread_id=None if self.thread_id is None else str(self.thread_id),
            run_id=None if self.config.get("run_id") is None else str(self.config["run_id"]),
            node_attempt=max(int(getattr(scope.task, "attempts", 1) or 1), 1),
            node_first_attempt_time=scope.started_at,
        )
        server: ServerInfo | None = None
        if "assistant_id" in configurable and "graph_id" in configurable:
            server = ServerInfo(
                str(configurable["assistant_id"]),
                str(configurable["graph_id"]),
                configurable.get("langgraph_auth_user"),
            )
        return Runtime(
            context=self.context,
            store=self.graph.store,
            stream_writer=scope.writer,
            execution_info=info,
            server_info=server,
            control=self.control,
        )

    def scope_config(self, task: Task, step: int) -> dict[str, Any]:
        """The config task ``task`` of superstep ``step`` receives, when it asks for it."""
        config = self.graph.task_config(self.config, task, step, self.ns)
        observer = self.observer
        return config if observer is None else observer.node_config(task, config)

    # ------------------------------------------------------------ persistence
    def _ckpt_config(self) -> dict[str, Any]:
        conf = {"thread_id": self.thread_id, "checkpoint_ns": self.ns}
        if "checkpoint_id" in self.configurable:
            conf["checkpoint_id"] = self.configurable["checkpoint_id"]
        return {"configurable": conf}

    async def load(self) -> None:
        """Load the thread's checkpoint (or the one ``checkpoint_id`` names)."""
        self.channels = self.graph.new_channels()
        saved = None
        if self.saver is not None and self.as_of is not None:
            before = {"configurable": {"checkpoint_id": self.as_of}}
            async for item in self.saver.alist(self._ckpt_config(), before=before, limit=1):
                saved = item
        elif self.saver is not None:
            saved = await self.saver.aget_tuple(self._ckpt_config())
        if saved is not None:
            self.checkpoint = copy_checkpoint(saved.checkpoint)
            self.metadata = dict(saved.metadata or {})
            self.saved_config = saved.config
            self.parent_config = saved.parent_config
            self.pending = [
                (str(t), c, self.graph.decode_write(c, v)) for t, c, v in saved.pending_writes or ()
            ]
            self.graph.restore_channels(self.channels, self.checkpoint)
            self.saved_versions = dict(self.checkpoint["channel_versions"])
        self._recount()
        self.step = int(self.metadata.get("step", -2)) + 1
        self.stop = self.step + self.limit + 1

    def _recount(self) -> None:
        """Rebuild the incremental bookkeeping after channels were loaded wholesale."""
        self.live = {c for c in self.graph.ephemeral_channels if self.channels[c].is_available()}
        versions = self.checkpoint["channel_versions"]
        self.top_version = max(versions.values(), key=_version_key) if versions else None
        self.changed = None

    async def _put_checkpoint(self, source: str) -> None:
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
            await self._save()
        else:
            # Values are read when (and if) the checkpoint is saved.
            self.dirty = True
            if self.saver is not None:
                await self._saves().hold()
        self.step += 1
        if self.saver is not None and "checkpoint" in self.wants:
            self._checkpoint_event()

    def _checkpoint_event(self) -> None:
        """Record the checkpoint just made (runs on a thread only).

        Called once the step has moved on, so the upcoming tasks it lists are
        planned (and their ids made) for the step they will run in.
        """
        # Under "exit" nothing is stored until the run ends, and then with the
        # run's first parent: that is the parent the record names.
        stored_as = self.saved_config if self.durability == "exit" else self.parent_config
        made = CheckpointMade(
            step=self.step - 1,
            thread_id=str(self.thread_id),
            checkpoint_id=str(self.checkpoint["id"]),
            parent_id=((stored_as or {}).get("configurable") or {}).get("checkpoint_id"),
            config=self.saved_config
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
            upcoming=self.prepare(for_execution=False),
        )
        self.emit("checkpoint", made)

    def _checkpoint_call(self) -> CheckpointCall:
        """The saver call that stores the run's checkpoint as it stands now."""
        base = self.saved_config or {
            "configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.ns}
        }
        versions = self.checkpoint["channel_versions"]
        values = self.graph.snapshot_channels(self.channels)
        if TASKS in values and self._untracked_keys():
            values[TASKS] = stored_sends(values[TASKS], self._untracked_keys())
        self.checkpoint["channel_values"] = values
        self.checkpoint["ts"] = datetime.now(UTC).isoformat()
        self.checkpoint["updated_channels"] = sorted(self.updated)
        changed = {k: v for k, v in versions.items() if self.saved_versions.get(k) != v}
        return CheckpointCall(base, self.checkpoint, self.metadata, changed)

    def _saved(self, new_config: dict[str, Any]) -> None:
        self.parent_config = self.saved_config
        self.saved_config = new_config
        self.saved_versions = dict(self.checkpoint["channel_versions"])
        self.dirty = False

    async def _save(self) -> None:
        call = self._checkpoint_call()
        self._saved(
            await self._saves().checkpoint(
                call.config, call.checkpoint, call.metadata, call.versions
            )
        )

    async def _put_writes(
        self, task: Task, writes: Sequence[tuple[str, Any]], *, last: bool = False
    ) -> None:
        """Save a task's writes; ``last``: they may ride with the step's checkpoint."""
        if self.saver is None or self.saved_config is None:
            return
        if self.durability == "exit":
            # Stored when the run ends (see _exit), on whichever checkpoint it ends at.
            self.deferred.append((task, writes))
            return
        encoded = self._encoded(writes)
        # The task path as savers store it is the task's sort key (computed once per task).
        await self._saves().writes(self.saved_config, encoded, task.id, task.sort_key, rides=last)

    def _encoded(self, writes: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
        """Writes as a saver stores them (none to an ``UntrackedValue`` key)."""
        untracked = self._untracked_keys()
        if untracked:
            writes = persisted_writes(writes, untracked)
        return [(c, self.graph.encode_write(c, v)) for c, v in writes]

    def _untracked_keys(self) -> frozenset[str]:
        if self._untracked is None:
            self._untracked = untracked_keys(self.channels)
        return self._untracked

    def _saves(self) -> RunSaves:
        # Opened at the first save: an open batch makes the saver settle it before each
        # operation, which a run that saves nothing should not cost.
        if self.saves is None:
            self.saves = RunSaves(self.saver, _durability(self.durability))
        return self.saves

    async def _close_saves(self) -> None:
        """Wait for the queued saves: a run returns, pauses or fails only once they are stored.

        Under ``exit``, store the run's checkpoint now, then the writes of the
        tasks that finished since (in task order).
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
        stored = await saves.close(self._checkpoint_call)
        if stored is not None:
            self._saved(stored)

    # ------------------------------------------------------------------ input
    async def first(self) -> None:
        """Apply the run input: new input, a resume, or a ``Command``."""
        has_state = bool(self.checkpoint["channel_versions"])
        command = self.input if isinstance(self.input, Command) else None
        resuming = has_state and (self.input is None or command is not None or self.force_resume)
        # A subgraph's config holds an id only when a checkpoint_map addressed it.
        addressed = "checkpoint_id" in self.configurable
        time_travel = addressed and not (command is not None and command.resume is not None)
        if time_travel:
            self.replay_of = str(self.configurable["checkpoint_id"])
            if self.metadata.get("source") in ("update", "fork") and self.parent_config:
                # A fork is newer than what its subgraphs did after its parent: they
                # go back to where they stood at the parent.
                self.replay_of = str(self.parent_config["configurable"]["checkpoint_id"])
        if time_travel:
            # Replaying from a past checkpoint re-runs its tasks and re-asks its questions.
            self.pending = [w for w in self.pending if w[0] == NULL_TASK_ID]
        forks = resuming and time_travel and self.metadata.get("source") not in ("update", "fork")
        carried: list[tuple[str, Any]] = []
        superseded = (
            addressed
            and not time_travel
            and await moved_past(
                self.saver,
                {"thread_id": self.thread_id, "checkpoint_ns": self.ns},
                self.checkpoint.get("id"),
            )
        )
        if command is not None:
            carried = await self._apply_command(command, store=not forks)
        if superseded:
            # A resume at a checkpoint the thread has moved past reruns the tasks that
            # finished there (keeping the answers given), as a replay would.
            self.pending = [
                w for w in self.pending if w[0] == NULL_TASK_ID or w[1] in (INTERRUPT, RESUME)
            ]
        null_writes = [(c, v) for t, c, v in self.pending if t == NULL_TASK_ID]
        if null_writes or carried:
            self.apply_writes([], extra=[*null_writes, *carried])
        if resuming:
            self.changed = None
            self.resuming = True
            seen = self.checkpoint["versions_seen"].setdefault(INTERRUPT, {})
            seen.update(self.checkpoint["channel_versions"])
            if forks:
                self.pending = []
                await self._put_checkpoint("fork")
            self.emit_values(force=True)
            return
        if self.input is None:
            raise EmptyInputError(f"Received no input for {START}")
        # A Command on a new thread is the run's input too (its START task applies it).
        writes = self.graph.input_writes(self.input)
        if not writes:
            raise EmptyInputError(f"Received no input for {self.graph.input_keys}")
        if self.checkpoint["channel_versions"]:
            # A new input on a thread drops whatever the last run left unfinished.
            self.apply_writes(self.prepare(for_execution=False), extra=writes)
        else:
            self.apply_writes([], extra=writes)
        # A low-level graph's input may write its output channels (a StateGraph's never does).
        self.emit_values()
        self.pending = []
        await self._put_checkpoint("input")

    def _pending_interrupt_ids(self) -> list[str]:
        answered = {
            t for t, c, _ in self.pending if c not in (INTERRUPT, RESUME, ERROR, ERROR_SOURCE)
        }
        return [
            i.id
            for t, c, v in self.pending
            if c == INTERRUPT and t not in answered
            for i in _as_interrupts(v)
        ]

    async def _apply_command(self, command: Command[Any], *, store: bool) -> list[tuple[str, Any]]:
        if command.resume is not None:
            if self.saver is None:
                raise RuntimeError("Cannot use Command(resume=...) without checkpointer")
            resume = command.resume
            by_id = isinstance(resume, dict) and all(_is_interrupt_id(k) for k in resume)
            # Strict only at the thread's head, for the graph the caller ran (not a child run).
            strict = (
                strict_resume_on(self.configurable)
                and self.parent_scope is None
                and "checkpoint_id" not in self.configurable
            )
            if strict or not by_id:
                check_resume(resume, by_id, self._pending_interrupt_ids(), strict=strict)
            if by_id:
                self.resume_by_id.update(resume)
            else:
                self.null_resume.append(resume)
        writes: list[tuple[str, Any]] = []
        if command.update is not None:
            writes.extend(update_writes(command, self.graph.state_keys))
        writes.extend(control_writes(Command(goto=command.goto)))
        if not writes and command.resume is None:
            raise EmptyInputError("Received empty Command input")
        if not writes or not store:
            return writes
        # Savers keep the first write at each position of a task: the null task's
        # writes accumulate, so an earlier resume's update keeps its slot.
        earlier = [(c, v) for t, c, v in self.pending if t == NULL_TASK_ID]
        self.pending.extend((NULL_TASK_ID, c, v) for c, v in writes)
        if self.saver is not None and self.saved_config is not None:
            encoded = self._encoded([*earlier, *writes])
            await self.saver.aput_writes(self.saved_config, encoded, NULL_TASK_ID, "")
        return []

    # ----------------------------------------------------------------- tasks
    def prepare(self, *, for_execution: bool = True) -> list[Task]:
        """The tasks of the next superstep (the planner's :func:`plan_tasks`)."""
        return plan_tasks(
            self.graph,
            self.channels,
            self.checkpoint,
            self,
            self.ns,
            self.step,
            self.stop,
            self.changed,
            for_execution,
        )

    def apply_writes(
        self, tasks: Sequence[Task], *, extra: Sequence[tuple[str, Any]] = ()
    ) -> set[str]:
        """Fold the writes of a superstep into the channels, in task-path order."""
        updated, self.changed, self.top_version = fold_writes(
            self.graph, self.channels, self.checkpoint, tasks, extra, self.live, self.top_version
        )
        self.updated = updated
        return updated

    # ------------------------------------------------------------------- tick
    def tick(self) -> bool:
        """Prepare the next superstep; False when the run is over."""
        if self.step > self.stop:
            self.status = "out_of_steps"
            return False
        self.tasks = self.prepare()
        if not self.tasks:
            self.status = "done"
            return False
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, chan, value in self.pending:
            by_task.setdefault(task_id, []).append((chan, value))
        # Without saved writes there is nothing to mark done and no answer to hand out.
        for task in self.tasks if by_task else ():
            saved = by_task.get(task.id, [])
            for chan, value in saved:
                if chan == RESUME:
                    task.resume = list(value) if isinstance(value, list) else [value]
            done = [(c, v) for c, v in saved if c not in (INTERRUPT, RESUME, ERROR, ERROR_SOURCE)]
            for chan, value in saved:
                if chan == ERROR_SOURCE:
                    # The node failed and its handler took over: the handler runs again.
                    task.handled = failure_from_record(value)
            if done:
                task.writes = [(c, v) for c, v in done if c != NO_WRITES]
                task.done = True
            if self.graph.is_subgraph_node(task.name):
                continue  # its own run takes the answers meant for its nodes
            for interrupt in (i for c, v in saved if c == INTERRUPT for i in _as_interrupts(v)):
                if interrupt.id in self.resume_by_id:
                    task.resume.append(self.resume_by_id.pop(interrupt.id))
        return True

    def _should_interrupt(self, names: Sequence[str]) -> bool:
        return should_interrupt(self.checkpoint, self.tasks, names)

    # ------------------------------------------ the runtime's Superstep protocol
    def next_step(self) -> list[Task] | None:
        """The tasks of the next superstep (restored ones marked done), or None: over."""
        return self.tasks if self.tick() else None

    async def before_step(self, tasks: Sequence[Task]) -> None:
        """Pause before the step if asked; stream its tasks and the restored ones' updates.

        The checkpoint the step starts from was saved when the last step closed
        (or by :meth:`first`).
        """
        self.failure = None
        if self.interrupt_before and self._should_interrupt(self.interrupt_before):
            self.status = "interrupt_before"
            raise GraphInterrupt(())
        control = self.control
        if control is not None and control.drain_requested:
            # Stop at the step boundary (after a breakpoint there, which a resume would
            # pass): the checkpoint the step starts from is saved.
            raise GraphDrained(control.drain_reason or "shutdown")
        if "step_tasks" in self.wants:
            self.emit("step_tasks", (self.step, tasks))
        for task in tasks:
            if task.done:
                self.emit_task_updates(task, task.writes, cached=True)

    def restored(self, task: Task) -> Task | None:
        """A task whose writes an earlier attempt saved is not run again."""
        return task if task.done else None

    def stops(self, task: Task) -> bool:
        """Any failure stops the step's other tasks; the first (in time) is the run's error.

        An answer that did not fit its interrupt's schema lets the others finish
        (their answers may have started side effects); the run fails after the step.
        """
        if task.error is None or is_invalid_resume(task.error):
            return False
        if self.failure is None:
            self.failure = task.error
        return True

    def clean(self, task: Task) -> bool:
        """Whether a task ended neither failed nor paused."""
        return task.error is None and not task.paused

    async def after_step(self, tasks: Sequence[Task], results: Sequence[Task]) -> None:
        """Raise the step's failure or pause; else apply its writes and save a checkpoint."""
        # Only the first step after a resume goes on where subgraphs stopped; a later
        # entry of a subgraph with a history of its own is a new input to it.
        self.resuming = False
        failure = self.failure
        paused = False
        # Plain loops: no generator or list per step for the usual clean step.
        for task in results:
            if failure is None:
                failure = task.error
            if task.interrupts or task.paused:
                paused = True
        if failure is not None:
            raise failure
        if paused:
            interrupted = [i for t in results for i in t.interrupts]
            self.interrupts.extend(interrupted)
            raise GraphInterrupt(tuple(interrupted))
        self.apply_writes(self.tasks)
        self.pending = []
        self.calls.clear()
        self.emit_values()
        await self._put_checkpoint("loop")
        if self.interrupt_after and self._should_interrupt(self.interrupt_after):
            self.status = "interrupt_after"
            self.tasks = self.prepare(for_execution=False)
            raise GraphInterrupt(())

    async def run_task(self, task: Task, writes: StepWrites) -> Task:
        """Run one task and save its writes; a failure is left in ``task.error``."""
        node = self.graph.nodes.get(task.name)
        if "task_start" in self.wants and task.name != START:
            self.emit("task_start", TaskStart(self.step, task))
        scope = TaskScope(
            self,
            task,
            self.step,
            list(task.resume),
            self.null_resume if self.parent_scope is None else self.parent_scope.null_resume,
        )
        # A child run may run its tasks inline in its parent task's context: the
        # parent's scope comes back when this task ends.
        outer = running_scope()
        token = set_scope(scope)
        try:
            if task.name != START and node is None:
                raise InvalidUpdateError(f"Invalid node name {task.name}")
            cache = self.graph.cache
            policy = None if node is None or cache is None else node.cache_policy
            if policy is None or cache is None:
                if tasks_defined():
                    task.writes = await run_with_calls(
                        self, task, scope, lambda: self._call_node(task, scope)
                    )
                else:
                    task.writes = await self._call_node(task, scope)
            else:
                key = cache.key(task.name, policy, task.input)
                hit = await cache.lookup(key)
                if hit is not None:
                    task.writes = hit
                    self.cached_ids.add(task.id)
                else:
                    task.writes = await run_with_calls(
                        self, task, scope, lambda: self._call_node(task, scope)
                    )
                    # Reached only when the node returned: a failure or pause is not kept.
                    await cache.store(key, task.writes, policy.ttl)
        except GraphInterrupt as exc:
            task.interrupts = exc.interrupts
            task.paused = True
            # A pause of a @task call is saved under the call (see _calls), which takes
            # the answer; the node only records the answers it took itself.
            asked: list[tuple[str, Any]] = (
                [] if getattr(exc, "recorded", False) else [(INTERRUPT, list(exc.interrupts))]
            )
            if scope.resume:
                asked.append((RESUME, list(scope.resume)))
            if asked:
                await self._put_writes(task, asked)
                self.pending.extend((task.id, c, v) for c, v in asked)
            self.emit("updates", {INTERRUPT: tuple(exc.interrupts)})
            if exc.interrupts:
                # A subgraph's breakpoint asks no question: nothing to show in values.
                values = self.graph.read_output(self.channels, self.output_keys)
                # A root-state graph's values are not a dict: the pause is shown on its own.
                shown = values if isinstance(values, dict) else {}
                self.emit("values", {**shown, INTERRUPT: tuple(exc.interrupts)})
            self._task_result(task, "interrupt")
            return task
        except ParentCommand as exc:
            # With no parent graph to take it, the command reaches the caller (as in
            # LangGraph): a graph may be run as another's node by code of its own.
            task.error = exc
            self._task_result(task, "parent_command")
            return task
        except asyncio.CancelledError:
            task.error = task.error or asyncio.CancelledError()
            self._task_result(task, "cancelled")
            raise
        except Exception as exc:
            task.error = exc
            await self._put_writes(task, [(ERROR, repr(exc))])
            self.pending.append((task.id, ERROR, repr(exc)))
            self._task_result(task, "error")
            return task
        finally:
            set_scope(outer)
            del token
        if scope.pushed:
            task.writes = [*scope.pushed, *task.writes]
        task.done = True
        stored = task.writes or [(NO_WRITES, None)]
        if task.handled is not None:
            # Saved first when the node failed: kept first, so the writes after it are new.
            stored = [(ERROR_SOURCE, failure_record(task.handled)), *stored]
        if scope.given:  # the answers the task was given or took (scope.resume)
            stored = [*stored, (RESUME, list(scope.resume))]
        if self.saver is not None:
            await self._put_writes(task, stored, last=writes.rides_with_checkpoint())
            task_id = task.id
            self.pending.extend([(task_id, c, v) for c, v in stored])
        elif not self.pending:
            # Without a saver the writes of finished tasks are never read back from
            # pending; after a pause only whether it is empty matters (execute()).
            self.pending.append((NO_WRITES, NO_WRITES, None))
        if task.name != START:
            if "updates" in self.wants:
                self.emit_task_updates(task, task.writes)
            if "task_end" in self.wants:
                self.emit("task_end", TaskEnd(self.step, task, "done", self.output_keys))
        return task

    async def _node_result(self, task: Task, scope: TaskScope, spec: Any) -> Any:
        """What node ``task.name`` returned, through its retry policy and time limits."""
        graph = self.graph
        action = spec.action
        if "messages_seen" in self.wants:
            self.emit("messages_seen", task.input)
        # A Send's own timeout needs the timed path, even for a node that has none.
        direct = graph.direct_call(task.name) if task.timeout is None else None
        if direct is not None:
            scope.calls = 0
            result = await call_node(direct, True, (task.input,))
        elif (
            spec.retry is None
            and spec.timeout is None
            and task.timeout is None
            and not hasattr(action, "_arun_subgraph")
        ):
            # Nothing to retry and no subgraph: the plain call, without the wrappers.
            scope.calls = 0
            result = await call_with_config(
                action,
                task.input,
                scope.get_config,
                {"writer": scope.writer, "runtime": scope.runtime, "store": graph.store},
                graph.call_shape(action),
            )
        else:
            task.attempts = 0

            async def attempt() -> Any:
                scope.calls = 0
                task.attempts += 1
                if hasattr(action, "_arun_subgraph"):
                    try:
                        return await action._arun_subgraph(task.input, scope, self)
                    except ParentCommand as exc:
                        # A node of the subgraph addressed this graph: it is this
                        # node's result.
                        return replace(exc.command, graph=None)
                return await call_with_config(
                    action,
                    task.input,
                    scope.get_config,
                    {"writer": scope.writer, "runtime": scope.runtime, "store": graph.store},
                    graph.call_shape(action),
                )

            timeout = task.timeout or spec.timeout
            result = await retry_call(attempt, spec.retry, timeout, task.name)
        return result

    async def record_failure(self, task: Task, failure: NodeError) -> None:
        """Save that ``task``'s node failed and its error handler takes over."""
        marker = [(ERROR_SOURCE, failure_record(failure))]
        if self.saver is not None:
            await self._put_writes(task, marker)
            self.pending.extend((task.id, c, v) for c, v in marker)

    def _task_result(self, task: Task, outcome: Outcome) -> None:
        """Record how a task that did not return ended (its error, pause or stop is in it)."""
        if task.name != START and "task_end" in self.wants:
            self.emit("task_end", TaskEnd(self.step, task, outcome, self.output_keys))

    async def _call_node(self, task: Task, scope: TaskScope) -> list[tuple[str, Any]]:
        observer = self.observer
        if observer is None or task.name == START:
            return await self._node_writes(task, scope, None)
        return await observer.call_node(
            task, self.step, lambda seen: self._node_writes(task, scope, seen)
        )

    async def _node_writes(
        self, task: Task, scope: TaskScope, seen: Callable[[Any], None] | None
    ) -> list[tuple[str, Any]]:
        """Call the task's node; its writes. ``seen`` is handed what the node returned."""
        graph = self.graph
        if task.name == START:
            result = task.input
            writes = update_writes(result, graph.input_key_set)
            writes.extend(control_writes(result))
        else:
            spec = graph.nodes[task.name]
            try:
                # Graphs built without a StateGraph (Pregel, entrypoints) have no handlers.
                handler = getattr(spec, "error_handler", None)
                if handler is None:
                    result = await self._node_result(task, scope, spec)
                else:
                    result = await run_handled(
                        self,
                        task,
                        scope,
                        handler,
                        lambda: self._node_result(task, scope, spec),
                        {"writer": scope.writer, "runtime": scope.runtime, "store": graph.store},
                    )
            except ParentCommand as exc:
                # A graph the node's code ran addressed its parent: this graph.
                result = replace(exc.command, graph=None)
            except asyncio.CancelledError as exc:
                current = asyncio.current_task()
                if current is None or current.cancelling():
                    raise  # the run cancelled the task
                # Raised by the node's own code: a failure of the node, not a stop.
                raise NodeCancelledError(task.name) from exc
            if type(result) is dict and graph.dict_results:
                # The usual state update: no Command in it, so no control writes.
                keys = graph.state_key_set
                writes = [(k, v) for k, v in result.items() if k in keys]
            else:
                if isinstance(result, Command | list | tuple):
                    parent_commands = [
                        c
                        for c in (result if isinstance(result, list | tuple) else [result])
                        if isinstance(c, Command) and c.graph == Command.PARENT
                    ]
                    if parent_commands:
                        raise ParentCommand(replace(parent_commands[0], graph=None))
                writes = graph.result_writes(task.name, result)
                writes.extend(control_writes(result))
            if seen is not None:
                seen(result)
        if task.handled is not None:
            # The handler's result stands for the node's: the failed node's edges do not fire.
            return writes
        writes.extend(graph.static_writes[task.name])
        for branch in graph.branches.get(task.name, ()):
            fresh = graph.local_read(task.name, self.channels, writes, branch.input_schema)
            if branch.input_schema is None and isinstance(fresh, dict) and isinstance(result, dict):
                # LangGraph hands the router the node's own return value too,
                # under what the state says.
                fresh = {**result, **fresh}
            path = branch.path
            shape = graph.call_shape(path)
            if "config" in shape[0]:
                picked = await call_with_config(
                    path, fresh, scope.get_config, {}, shape, inline=True
                )
            else:
                # What call_with_config does for a router that asks for nothing but the state.
                picked = await call_node(path, shape[1], (fresh,), inline=True)
            writes.extend(target_writes(graph.branch_targets(branch, picked)))
        if task.name != START and "messages_from" in self.wants:
            self.emit("messages_from", (task, result))
        return writes

    # --------------------------------------------------------------- outputs
    def emit_values(self, *, force: bool = False) -> None:
        """Stream the output keys' values after a superstep that changed them."""
        if "values" not in self.wants or not (
            force or not self.updated.isdisjoint(self.output_keys)
        ):
            return
        values = self.graph.read_output(self.channels, self.output_keys)
        self.last_values = values
        self.emit("values", values)

    def emit_task_updates(
        self, task: Task, writes: Sequence[tuple[str, Any]], *, cached: bool = False
    ) -> None:
        """Stream one task's state update as ``{node: update}``.

        ``cached``: the writes were saved by an earlier run and the task is not run
        again; LangGraph marks such an update with ``__metadata__``.
        """
        if task.name == START or "updates" not in self.wants:
            return
        keys = set(self.output_keys)
        mine = [(c, v) for c, v in writes if c in keys]
        update: Any
        if not mine:
            update = None
        elif self.graph.root_output:
            # A root-state graph's update is the value its node wrote (all of them, in
            # order, when it wrote several).
            update = mine[0][1] if len(mine) == 1 else [v for _, v in mine]
        elif len({c for c, _ in mine}) < len(mine):
            # A key written twice (a list of Commands): one single-key dict per write.
            update = [{chan: value} for chan, value in mine]
        else:
            update = dict(mine)
        # A low-level graph's single output channel and an entrypoint's return value
        # are shown bare; a StateGraph's update is the dict of its writes.
        shown = self.graph.task_update(update, self.output_keys)
        if cached or task.id in self.cached_ids:
            self.emit("updates", {task.name: shown, "__metadata__": {"cached": True}})
        else:
            self.emit("updates", {task.name: shown})

    # ------------------------------------------------------------------- loop
    async def execute(self) -> None:
        """Run to the end, a pause, or an error (which propagates).

        A top-level run on a thread of one of flowcore's savers holds the
        thread's lease from before it loads the thread until it has saved its
        last write, so two runs of one thread never overlap (LangGraph itself
        does not lease); a run that finds it held raises ``ThreadBusyError``.
        """
        self.loop, self.loop_thread = asyncio.get_running_loop(), threading.get_ident()
        if "callbacks" not in self.config and self.parent_scope is None:
            async with self._lease():
                await self._execute()
            return
        observer = self.observer = await observe(self)
        if observer is None:
            async with self._lease():
                await self._execute()
            return
        try:
            async with self._lease():
                await self._execute()
        except BaseException as exc:
            await observer.failed(exc)
            raise
        await observer.finished()

    def _lease(self) -> contextlib.AbstractAsyncContextManager[ThreadLease | None]:
        saver = self.saver
        # Subgraph runs live inside their parent's lease.
        if self.parent_scope is not None or not isinstance(saver, SaverShell):
            return contextlib.nullcontext()
        return run_lease(str(self.thread_id), saver._acquire_lease, saver._release_lease)

    async def _execute(self) -> None:
        await self.load()
        try:
            await self.first()
        except BaseException:
            if self.durability == "exit":
                self.saves = None  # the input was never applied: nothing held is stored
            else:
                await self._close_saves()
            raise
        if self.resuming and self.observer is not None:
            await self.observer.resumed()
        try:
            await run_supersteps(
                self, limit=self.max_concurrency or None, step_timeout=self.graph.step_timeout
            )
        except GraphInterrupt:
            if self.status not in ("interrupt_before", "interrupt_after"):
                self.status = "interrupted"
            await self._exit()
            if self.parent_scope is None and self.pending and any(t.writes for t in self.tasks):
                # One last look at the state with the finished tasks' writes applied.
                self.apply_writes(self.tasks)
                self.emit_values()
            raise
        except BaseException:
            await self._exit()
            raise
        await self._exit()
        if self.status == "out_of_steps":
            raise GraphRecursionError(
                f"Recursion limit of {self.limit} reached without hitting a stop condition. "
                "You can increase the limit by setting the `recursion_limit` config key."
            )

    def _has_delta_keys(self) -> bool:
        """Whether the run wrote some ``DeltaChannel`` key (it has a version)."""
        versions = self.checkpoint["channel_versions"]
        return any(
            isinstance(channel, DeltaValue) and name in versions
            for name, channel in self.channels.items()
        )

    async def _save_root(self) -> None:
        """Store the empty checkpoint a new thread starts from, as the run's first parent.

        Under "exit" a run on a new thread stores only its last checkpoint; with a
        ``DeltaChannel`` key LangGraph also stores the empty one before it (step -2),
        so the thread can be forked from before its first input.
        """
        assert self.saver is not None
        root = {**empty_checkpoint(), "id": self.root_id}
        base = {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.ns}}
        self.saved_config = await self.saver.aput(base, root, {"step": -2}, {})

    async def _exit(self) -> None:
        held = self.saves is not None and self.saves.holds_checkpoint
        await self._close_saves()
        if not held and self.saver is not None and self.saved_config is not None and self.deferred:
            # No new checkpoint (a resumed run that paused again in the same step):
            # the writes belong to the checkpoint it resumed from.
            for task, writes in self.deferred:
                encoded = self._encoded(writes)
                await self.saver.aput_writes(self.saved_config, encoded, task.id, task.sort_key)
        self.deferred = []


def _is_interrupt_id(key: Any) -> bool:
    return isinstance(key, str) and len(key) == 32 and all(c in "0123456789abcdef" for c in key)


def _as_interrupts(value: Any) -> list[Interrupt]:
    items = value if isinstance(value, list | tuple) else [value]
    return [i for i in items if isinstance(i, Interrupt)]


def _durability(mode: str) -> Durability:
    if mode not in ("sync", "async", "exit"):
        raise ValueError(f"durability must be 'sync', 'async' or 'exit', not {mode!r}")
    return cast(Durability, mode)
