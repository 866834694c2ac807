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
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flowcore.checkpoint import ThreadLease
from flowcore.compat.langgraph._channels import MISSING, Channel
from flowcore.compat.langgraph._context import TaskScope
from flowcore.compat.langgraph._durable import RunSaves
from flowcore.compat.langgraph._error_handlers import (
    ERROR_SOURCE,
    failure_from_record,
)
from flowcore.compat.langgraph._errors import (
    GraphDrained,
    GraphInterrupt,
    GraphRecursionError,
)
from flowcore.compat.langgraph._idle_progress import with_idle_progress
from flowcore.compat.langgraph._interrupt_options import is_invalid_resume
from flowcore.compat.langgraph._lent_saver import lent_saver
from flowcore.compat.langgraph._loop_helpers import (
    Sink,
    _as_interrupts,
    empty_checkpoint,
    new_checkpoint_id,
)
from flowcore.compat.langgraph._planner import (
    ERROR,
    INTERRUPT,
    NO_WRITES,
    RESUME,
    Task,
    fold_writes,
    plan_tasks,
    should_interrupt,
)
from flowcore.compat.langgraph._records import (
    KINDS,
    CustomChunk,
)
from flowcore.compat.langgraph._run_input import RunInput
from flowcore.compat.langgraph._run_observer import TRACING_KEY, observed_run
from flowcore.compat.langgraph._run_saving import RunSaving
from flowcore.compat.langgraph._run_tasks import RunTasks
from flowcore.compat.langgraph._runtime import ExecutionInfo, RunControl, Runtime, ServerInfo
from flowcore.compat.langgraph._savers_records import merged_metadata
from flowcore.compat.langgraph._savers_shell import SaverShell, custom_version_rule
from flowcore.compat.langgraph._tracing import RunObserver, langsmith_tracing_on, observe
from flowcore.compat.langgraph._types import Interrupt
from flowcore.compat.langgraph._usage_langchain import langchain_usage
from flowcore.runtime import LeaseKeeper, run_lease
from flowcore.runtime.steps import run_supersteps
from flowcore.runtime.usage import UsageMeter, current_meter, reset_meter, use_meter

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


class Run(RunSaving, RunInput, RunTasks):
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
        self.graph: CompiledStateGraph = graph
        self.input: Any = run_input
        self.config: dict[str, Any] = dict(config)
        self.configurable: dict[str, Any] = dict(config.get("configurable") or {})
        # The run's own config keys (plain values) that each checkpoint's metadata carries.
        self.config_metadata: dict[str, Any] = merged_metadata(config, {})
        self.sink: Sink = sink
        self.ns_path: tuple[str, ...] = tuple(p for p in checkpoint_ns.split("|") if p)
        self.resuming: bool = False
        self.force_resume: bool = False
        self.durability: str = durability
        self.interrupt_before: tuple[str, ...] = tuple(interrupt_before)
        self.interrupt_after: tuple[str, ...] = tuple(interrupt_after)
        self.parent_scope: TaskScope | None = parent_scope
        self.ns: str = checkpoint_ns
        thread_id = self.configurable.get("thread_id")
        # As in LangGraph, the saver is addressed with the thread id as a string.
        self.thread_id: Any = (
            thread_id if thread_id is None or isinstance(thread_id, str) else str(thread_id)
        )
        # A saver lent through the config (see _lent_saver) wins over the graph's own.
        self.saver: Any = (
            None if self.thread_id is None else lent_saver(config) or graph.checkpointer
        )
        # The saver's own get_next_version, if it overrides flowcore's counting.
        self.next_version: Any = None if self.saver is None else custom_version_rule(self.saver)
        # The UntrackedValue keys, whose writes are never stored (found at the first save).
        self._untracked: frozenset[str] | None = None
        # The messages DeltaChannel keys, whose writes get message ids (found at the first task).
        self.message_deltas: frozenset[str] | None = None
        self.limit: int = int(config.get("recursion_limit", graph.default_recursion_limit))
        if self.limit < 1:
            raise ValueError("recursion_limit must be at least 1")
        self.max_concurrency: Any = config.get("max_concurrency")
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
        self.step: int = 0
        self.stop: int = 0
        self.status: str = "input"
        self.null_resume: list[Any] = []
        self.resume_by_id: dict[str, Any] = {}
        self.interrupts: list[Interrupt] = []
        self.last_values: Any = MISSING
        self.dirty: bool = False
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
        # The top-level run's lease, so its last batch can carry the release (_exit).
        self.lease_keeper: LeaseKeeper | None = None
        # The first task of the running superstep to fail (in time): the error the run raises.
        self.failure: BaseException | None = None
        # What a node's Runtime carries (see _runtime): set by the graph for each run.
        self.context: Any = None
        self.control: RunControl | None = None
        # The store its nodes see: the graph's, or the one its caller's runtime carries.
        self.store: Any = graph.store
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
        # Every model call of the run is charged here (through its task's meter when
        # someone reads per-node figures); see flowcore.runtime.usage.
        self.meter: UsageMeter = UsageMeter()

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
            store=self.store,
            stream_writer=scope.writer,
            execution_info=info,
            server_info=server,
            control=self.control,
        )

    def scope_config(self, task: Task, step: int) -> dict[str, Any]:
        """The config task ``task`` of superstep ``step`` receives, when it asks for it."""
        config = self.graph.task_config(self.config, task, step, self.ns)
        # LangGraph shows a node its run's durability under this configurable key.
        config["configurable"]["__pregel_durability"] = self.durability
        observer = self.observer
        if observer is not None:
            # Its task run's config, progress callback included (see _tracing).
            return observer.node_config(task, config)
        timeout = task.timeout or getattr(self.graph.nodes.get(task.name), "timeout", None)
        return config if timeout is None else with_idle_progress(config, timeout)

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
            self.graph,
            self.channels,
            self.checkpoint,
            tasks,
            extra,
            self.live,
            self.top_version,
            self.next_version,
        )
        self.updated = updated
        return updated

    # ------------------------------------------------------------------- tick
    def tick(self) -> bool:
        """Prepare the next superstep; False when the run is over."""
        return self.next_step() is not None

    def next_step(self) -> list[Task] | None:
        """The tasks of the next superstep (restored ones marked done), or None: over."""
        if self.step > self.stop:
            self.status = "out_of_steps"
            return None
        # prepare(), inlined: the runtime asks for every step.
        tasks = self.tasks = plan_tasks(
            self.graph,
            self.channels,
            self.checkpoint,
            self,
            self.ns,
            self.step,
            self.stop,
            self.changed,
        )
        if not tasks:
            self.status = "done"
            return None
        if not self.pending:
            return tasks
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
        return tasks

    def _should_interrupt(self, names: Sequence[str]) -> bool:
        return should_interrupt(self.checkpoint, self.tasks, names)

    # ------------------------------------------ the runtime's Superstep protocol
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
            self.emit("step_tasks", (self.step, tasks, self.debug_metadata))
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
        # apply_writes(), inlined: once per step.
        self.updated, self.changed, self.top_version = fold_writes(
            self.graph,
            self.channels,
            self.checkpoint,
            self.tasks,
            (),
            self.live,
            self.top_version,
            self.next_version,
        )
        self.pending = []
        self.calls.clear()
        if "values" in self.wants:
            self.emit_values()
        await self._put_checkpoint("loop")
        if self.interrupt_after and self._should_interrupt(self.interrupt_after):
            self.status = "interrupt_after"
            self.tasks = self.prepare(for_execution=False)
            raise GraphInterrupt(())

    # ------------------------------------------------------------------- loop
    async def execute(self) -> None:
        """Run to the end, a pause, or an error (which propagates).

        A top-level run on a thread of one of flowcore's savers holds the
        thread's lease from before it loads the thread until it has saved its
        last write, so two runs of one thread never overlap (LangGraph itself
        does not lease); a run that finds it held raises ``ThreadBusyError``.
        """
        self.loop, self.loop_thread = asyncio.get_running_loop(), threading.get_ident()
        # A run inside a node (a subgraph, or a graph a node runs): its calls are that
        # node's calls too. Current for the whole run, so every task inherits it.
        self.meter.parent = current_meter()
        metered = use_meter(self.meter)
        try:
            with langchain_usage():
                if self.parent_scope is None and TRACING_KEY in self.config:
                    await observed_run(self, self._execute_observed)
                else:
                    await self._execute_observed()
        finally:
            reset_meter(metered)

    async def _execute_observed(self) -> None:
        """:meth:`execute` with the run's LangChain callbacks (see _tracing), if it has any."""
        if (
            "callbacks" not in self.config
            and self.parent_scope is None
            and not langsmith_tracing_on()
        ):
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
        keeper = run_lease(str(self.thread_id), saver._acquire_lease, saver._release_lease)
        self.lease_keeper = keeper
        return keeper

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
        if self._ends_unsaved():
            self.saves, self.deferred = None, []
        await self._exit()
        if self.status == "out_of_steps":
            raise GraphRecursionError(
                f"Recursion limit of {self.limit} reached without hitting a stop condition. "
                "You can increase the limit by setting the `recursion_limit` config key."
            )
