"""flowcore's own event stream for runs of LangGraph-style graphs.

:meth:`CompiledStateGraph.run_stream` runs a compat graph and yields the
typed events of :mod:`flowcore.events`, the ones a native run emits, so that
everything built on that stream (the executor port and its AiEvents, the
run history, the redactor) serves both kinds of graph the same way.

What a compat run emits, each event with the run id, the graph's name and
version, the superstep and a timestamp:

- one ``run_start`` first, with the run's input (a resume has ``{}``);
- per task of a superstep (``Send`` tasks included; the ``__start__``
  pseudo-task and tasks whose writes a resume restored are not run, so they
  emit nothing): ``node_start``, then exactly one of ``node_end`` (with the
  task's update), ``node_error``, ``interrupt`` (one per ``interrupt()``
  pause) or ``node_cancelled`` (a sibling's failure or ``cancel()``
  stopped it);
- ``usage`` for each chat-model call a node makes, when the call ends (before
  the node's own end): what its node's usage meter was charged for it (see
  :mod:`~flowcore.compat.langgraph._call_records`: flowcore providers through
  ``create_react_agent`` or ``"provider:model"`` strings, and any LangChain
  chat model, failed calls included); a node's ``node_end`` / ``node_error``
  and the run's result carry the meters' totals;
- ``tool_call_start`` / ``tool_call_result`` around each call a ``ToolNode``
  makes, with the model's tool call id;
- ``custom`` for every ``get_stream_writer()`` / ``writer`` chunk of a node;
- ``checkpoint`` for each checkpoint a run on a thread makes (with a
  checkpointer only), after the tasks of the step it closes; its id is the
  one ``aget_state_history`` lists. With ``durability="exit"`` only the last
  is stored, when the run ends (see :class:`~flowcore.events.CheckpointEvent`);
- exactly one ``done`` last, with the final status and the output state.

A subgraph runs as one task of its parent. Its own nodes emit ``node_start``,
``node_end``, ``node_error``, ``node_cancelled``, ``usage``, tool calls and ``custom`` too,
with the event's ``namespace`` naming the enclosing tasks (``("outer:<task
id>",)`` for a subgraph one level down); they are not in the run result's
``node_runs`` or ``outputs``, which describe the run's own graph. A subgraph
node that pauses on ``interrupt()`` is reported by the enclosing node's
``interrupt`` event (empty namespace), once. A call is reported once, by the
node that made it; its tokens count for that node, the subgraph node that
ran it and the run (the meters nest), never again from the messages that
carry the answer.
Compat nodes stream no text, so there are no ``text_delta`` events.

These events are one projection of the run's one event stream (see
:mod:`~flowcore.compat.langgraph._records`): the run hands every record to
its sink, and :class:`EventProjector` is a sink that turns the records it
reads (``EventProjector.KINDS``: a task starting, a task ending however it
ended, a stream-writer chunk, a checkpoint made, a model or tool call) into
these events.
LangGraph's stream modes (``astream``) are another projection of the same
records, and both can read one run at once. A run builds only the records
some consumer wants: a run nobody streams these events of (every ``invoke``,
every ``astream`` without ``custom``, ``tasks``, ``checkpoints`` or
``debug``) builds none of those records and no event object.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flowcore.compat.langgraph._call_records import ModelCall, ToolCallMade
from flowcore.compat.langgraph._errors import GraphInterrupt
from flowcore.compat.langgraph._records import CheckpointMade, CustomChunk, TaskEnd, TaskStart
from flowcore.compat.langgraph._types import Command
from flowcore.events import (
    CheckpointEvent,
    CustomEvent,
    DoneEvent,
    Event,
    InterruptEvent,
    NodeCancelledEvent,
    NodeEndEvent,
    NodeErrorEvent,
    NodeStartEvent,
    RunStartEvent,
    RunStatus,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UsageEvent,
)
from flowcore.interrupts import Interrupt, Resume
from flowcore.llm.types import Usage
from flowcore.result import NodeRun, RunResult
from flowcore.runtime.stream import EventStream
from flowcore.scheduler.observers import TRACING_KEY, observed, run_observer
from flowcore.secrets import Redactor, find_secrets, learn, scrub, scrub_error

if TYPE_CHECKING:
    from flowcore.compat.langgraph._loop import Run, Task
    from flowcore.compat.langgraph._pregel import CompiledStateGraph

__all__ = ["CompatRunStream", "EventProjector", "as_compat_input"]

START = "__start__"


def as_compat_input(run_input: Any) -> Any:
    """flowcore's :class:`~flowcore.interrupts.Resume` as LangGraph's ``Command(resume=...)``.

    ``Resume(value)`` answers the one pending question; ``Resume(by_id={id: answer})``
    answers each by its interrupt id. Anything else is passed on as it is.

    Example:
        >>> as_compat_input(Resume("yes")).resume
        'yes'
    """
    if not isinstance(run_input, Resume):
        return run_input
    if run_input.by_id is not None:
        return Command(resume=dict(run_input.by_id))
    return Command(resume=run_input.value)


def _update(
    writes: Sequence[tuple[str, Any]], keys: frozenset[str] | None
) -> dict[str, Any] | None:
    """A task's writes to state ``keys`` (None: to any channel not internal) as one update
    (several writes to a key: a list)."""
    update: dict[str, Any] = {}
    several: set[str] = set()
    for chan, value in writes:
        if chan not in keys if keys is not None else chan.startswith(("__", "branch:", "join:")):
            continue
        if chan not in update:
            update[chan] = value
        elif chan in several:
            update[chan].append(value)
        else:
            update[chan] = [update[chan], value]
            several.add(chan)
    return update or None


def _metered(task: Task) -> dict[str, Any]:
    """The ``usage`` and ``model_calls`` of a task's NodeRun, from its meter (see _run_tasks)."""
    meter = getattr(task, "meter", None)
    if meter is None or not meter.calls:
        return {}
    return {"usage": meter.usage, "model_calls": meter.calls}


class EventProjector:
    """Builds the flowcore events and the :class:`RunResult` of one compat run.

    It is a sink of the run's records: :meth:`record` reads the kinds in
    :attr:`KINDS` (a subgraph's records, whose namespace is not empty, give
    events with that namespace) and ignores the rest. ``emit``
    receives every event (scrubbed by ``redactor`` first, when one is given).
    The driver calls :meth:`run_start` before the run and :meth:`finish`
    after it.

    Example:
        >>> # projector = EventProjector(graph, "run-1", queue.put_nowait, None)
        >>> # run = graph._run(run_input, config, projector.record, ...)
        >>> # run.wants = set(EventProjector.KINDS)
    """

    #: The record kinds this projection reads.
    KINDS: frozenset[str] = frozenset(
        {"task_start", "task_end", "custom", "checkpoint", "model_call", "tool_call"}
    )

    def __init__(
        self,
        graph: CompiledStateGraph,
        run_id: str,
        emit: Callable[[Event], None],
        redactor: Redactor | None,
    ) -> None:
        self.graph = graph
        self.run_id = run_id
        self.graph_name = graph.name
        self.graph_version = graph.version
        self.redactor = redactor
        self._emit_raw = emit
        self._keys = graph.state_key_set
        # Task id -> (task, its superstep, perf_counter at start, seconds since the run
        # began, its namespace).
        self.open: dict[str, tuple[Task, int, float, float, tuple[str, ...]]] = {}
        self.node_runs: list[NodeRun] = []
        self.outputs: dict[str, Mapping[str, Any] | None] = {}
        self.interrupts: list[Interrupt] = []
        self.step = 0
        self.t0 = time.perf_counter()

    # ---------------------------------------------------------------- events
    def emit(self, event: Event) -> None:
        """Hand ``event`` on, without the secrets the redactor knows."""
        self._emit_raw(event if self.redactor is None else scrub(event, self.redactor))

    def base(self, step: int, ns: tuple[str, ...] = ()) -> dict[str, Any]:
        """The fields every event of this run has, for superstep ``step`` in namespace ``ns``."""
        return {
            "run_id": self.run_id,
            "graph_name": self.graph_name,
            "graph_version": self.graph_version,
            "superstep": max(step, 0),
            "timestamp": time.time(),
            "namespace": ns,
        }

    def run_start(self, run_input: Any) -> None:
        """The run began with ``run_input`` (its secrets are taught to the redactor)."""
        if self.redactor is not None:
            learn(self.redactor, find_secrets(run_input))
        shown = dict(run_input) if isinstance(run_input, Mapping) else {}
        self.emit(RunStartEvent(**self.base(0), input=shown))

    def record(self, ns: tuple[str, ...], kind: str, payload: Any) -> None:
        """Read one record of the run's stream (the run's sink)."""
        if kind == "task_start":
            self._task_start(payload, ns)
        elif kind == "task_end":
            self._task_end(payload)
        elif kind == "model_call":
            self._model_call(payload, ns)
        elif kind == "tool_call":
            self._tool_call(payload, ns)
        elif kind == "custom":
            self._custom(payload, ns)
        elif kind == "checkpoint" and not ns and not payload.reloaded:
            # A subgraph's checkpoints belong to its parent's: the thread's history is the
            # top's. A resumed run's showing of the checkpoint it starts from made none.
            self._checkpoint(payload)

    def _custom(self, chunk: CustomChunk, ns: tuple[str, ...]) -> None:
        self.emit(
            CustomEvent(
                **self.base(chunk.step, ns), node=chunk.node, name="custom", data=chunk.data
            )
        )

    def _checkpoint(self, made: CheckpointMade) -> None:
        self.emit(
            CheckpointEvent(
                **self.base(made.step),
                thread_id=made.thread_id,
                checkpoint_id=made.checkpoint_id,
                parent_id=made.parent_id,
                step=made.step,
                next=tuple(t.name for t in made.upcoming),
            )
        )

    def _task_start(self, start: TaskStart, ns: tuple[str, ...]) -> None:
        task, step = start.task, start.step
        if task.name == START:
            return
        if not ns:
            self.step = step
        now = time.perf_counter()
        self.open[task.id] = (task, step, now, now - self.t0, ns)
        self.emit(NodeStartEvent(**self.base(step, ns), node=task.name))

    def _task_end(self, end: TaskEnd) -> None:
        entry = self.open.pop(end.task.id, None) if end.task.name != START else None
        if entry is None:
            return
        task, _, began, started_at, ns = entry
        step = end.step
        duration = time.perf_counter() - began
        name = task.name
        if end.outcome == "cancelled":
            self._stopped(task, step, started_at, duration, ns)
            return
        if task.interrupts:
            if ns:
                return  # the enclosing node reports the pause, once
            for pause in task.interrupts:
                self.interrupts.append(Interrupt(pause.id, name, pause.value))
                self.emit(
                    InterruptEvent(
                        **self.base(step), node=name, interrupt_id=pause.id, value=pause.value
                    )
                )
            return
        if task.error is not None:
            self._failed(task, step, task.error, started_at, duration, ns)
            return
        attempts = max(task.attempts, 1)
        if ns:
            # A subgraph's state keys are its own: its update is every write it made.
            update = _update(task.writes, None)
        else:
            update = _update(task.writes, self._keys)
            self.outputs[name] = update
            self.node_runs.append(
                NodeRun(
                    name,
                    1,
                    step,
                    "completed",
                    update,
                    started_at,
                    duration,
                    attempts,
                    **_metered(task),
                )
            )
        self.emit(
            NodeEndEvent(
                **self.base(step, ns),
                node=name,
                update=update,
                duration=duration,
                attempts=attempts,
            )
        )

    def _model_call(self, call: ModelCall, ns: tuple[str, ...]) -> None:
        self.emit(
            UsageEvent(
                **self.base(call.step, ns),
                node=call.node,
                block_id="",
                provider=call.provider,
                model=call.model,
                input_tokens=call.input_tokens,
                output_tokens=call.output_tokens,
                invocation_id=call.invocation_id,
                prompt_hash=call.prompt_hash,
                cost_usd=call.cost_usd,
                request_model=call.request_model,
                finish_reason=call.finish_reason,
                duration=call.duration,
            )
        )

    def _tool_call(self, call: ToolCallMade, ns: tuple[str, ...]) -> None:
        base = self.base(call.step, ns)
        if call.phase == "start":
            self.emit(
                ToolCallStartEvent(
                    **base,
                    node=call.node,
                    tool_call_id=call.tool_call_id,
                    tool_name=call.tool_name,
                    args=call.args,
                )
            )
            return
        self.emit(
            ToolCallResultEvent(
                **base,
                node=call.node,
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                result=call.result,
                is_error=call.is_error,
                error_code=call.error_code,
                safe_message=call.safe_message,
            )
        )

    def _failed(
        self,
        task: Task,
        step: int,
        error: BaseException,
        started_at: float,
        duration: float,
        ns: tuple[str, ...],
    ) -> None:
        if self.redactor is not None:
            error = scrub_error(error, self.redactor)
        attempts = max(task.attempts, 1)
        if not ns:
            self.node_runs.append(
                NodeRun(
                    task.name,
                    1,
                    step,
                    "failed",
                    None,
                    started_at,
                    duration,
                    attempts,
                    error,
                    **_metered(task),
                )
            )
        self.emit(
            NodeErrorEvent(
                **self.base(step, ns),
                node=task.name,
                error=error,
                duration=duration,
                attempts=attempts,
            )
        )

    def _stopped(
        self, task: Task, step: int, started_at: float, duration: float, ns: tuple[str, ...]
    ) -> None:
        """A task stopped from outside: failed if it has an error of its own, else cancelled."""
        error = task.error
        if error is not None and not isinstance(error, asyncio.CancelledError):
            self._failed(task, step, error, started_at, duration, ns)
            return
        if not ns:
            self.node_runs.append(
                NodeRun(
                    task.name,
                    1,
                    step,
                    "cancelled",
                    None,
                    started_at,
                    duration,
                    0,
                    **_metered(task),
                )
            )
        self.emit(NodeCancelledEvent(**self.base(step, ns), node=task.name, duration=duration))

    def _close_open(self) -> None:
        """Close every task still open (one stopped where no record says how it ended)."""
        now = time.perf_counter()
        # Innermost first: a subgraph's node closes before the node that ran it.
        for task, step, began, started_at, ns in sorted(
            self.open.values(), key=lambda entry: -len(entry[4])
        ):
            if task.interrupts and ns:
                continue  # paused inside a subgraph: the enclosing node reported it
            self._stopped(task, step, started_at, now - began, ns)
        self.open.clear()

    def finish(
        self, status: RunStatus, run: Run | None, errors: Sequence[BaseException]
    ) -> RunResult:
        """Close open tasks, emit the one ``done`` and return the run's result."""
        self._close_open()
        graph = self.graph
        state: dict[str, Any] = {}
        thread_id = checkpoint_id = None
        step = self.step
        usage, calls = Usage(), 0
        if run is not None:
            # Every model call of the run, whatever became of it or of its node.
            usage, calls = run.meter.usage, run.meter.calls
            step = max(run.step - 1, self.step)
            if run.channels:
                state = graph.read_output(run.channels)
            if run.saver is not None:
                thread_id = None if run.thread_id is None else str(run.thread_id)
                saved = (run.saved_config or {}).get("configurable") or {}
                checkpoint_id = saved.get("checkpoint_id")
        if self.redactor is not None:
            errors = [scrub_error(e, self.redactor) for e in errors]
        result = RunResult(
            run_id=self.run_id,
            graph_name=self.graph_name,
            graph_version=self.graph_version,
            status=status,
            state=state,
            outputs=dict(self.outputs),
            node_runs=tuple(self.node_runs),
            errors=tuple(errors),
            supersteps=max(step + 1, 0),
            duration=time.perf_counter() - self.t0,
            interrupts=tuple(self.interrupts),
            thread_id=thread_id,
            checkpoint_id=checkpoint_id,
            usage=usage,
            model_calls=calls,
        )
        if self.redactor is not None:
            result = scrub(result, self.redactor)
        self.emit(
            DoneEvent(**self.base(step), status=status, state=result.state, errors=result.errors)
        )
        return result


class CompatRunStream(EventStream):
    """The flowcore events of one compat run, as an async iterator, plus its result.

    The same shape as native :class:`~flowcore.graph.compiled.RunStream`: the
    run starts on the first ``__anext__`` (or ``__aenter__``); ``cancel()``
    or leaving ``async with`` early cancels in-flight nodes, and the stream
    still ends with a ``done`` whose status is ``cancelled``. A run that fails
    (a node raised, bad input, the recursion limit) ends ``failed`` with the
    error in ``done`` and in the result's ``errors``: nothing is raised.

    Example:
        >>> # async with app.run_stream({"n": 1}) as events:
        >>> #     async for event in events: print(event.type)
        >>> #     result = await events.result()
    """

    def __init__(
        self,
        graph: CompiledStateGraph,
        run_input: Any,
        config: Mapping[str, Any],
        *,
        run_id: str | None,
        redactor: Redactor | None,
        run_options: Mapping[str, Any],
    ) -> None:
        super().__init__()
        self._graph = graph
        self._input = run_input
        self._run_options = dict(run_options)
        self.run_id = run_id or uuid.uuid4().hex
        emit: Callable[[Event], None] = self._emit
        observer = run_observer(config)
        if observer is not None:
            # This stream's events are the run's events: the observer (a tracer) reads
            # them here, scrubbed, and the run is not observed a second time.
            emit = observed(emit, observer)
            config = {k: v for k, v in config.items() if k != TRACING_KEY}
        self._config = config
        self._projector = EventProjector(graph, self.run_id, emit, redactor)
        self._result: RunResult | None = None

    async def _run(self) -> RunResult:
        projector = self._projector
        projector.run_start(self._input)
        run: Run | None = None
        if self._cancel_requested:
            return self._end("cancelled", None, ())
        try:
            run = self._graph._run(
                as_compat_input(self._input),
                self._config,
                projector.record,
                durability=self._run_options.get("durability"),
                interrupt_before=self._run_options.get("interrupt_before"),
                interrupt_after=self._run_options.get("interrupt_after"),
            )
            # No LangGraph stream mode is read: the run builds only this projection's records.
            run.wants = set(EventProjector.KINDS)
            await run.execute()
        except GraphInterrupt:
            return self._end("interrupted", run, ())
        except asyncio.CancelledError:
            self._end("cancelled", run, ())
            raise
        except Exception as exc:
            return self._end("failed", run, (exc,))
        return self._end("completed", run, ())

    def _end(
        self, status: RunStatus, run: Run | None, errors: Sequence[BaseException]
    ) -> RunResult:
        self._result = self._projector.finish(status, run, errors)
        return self._result

    def _left_result(self) -> RunResult | None:
        return self._result
