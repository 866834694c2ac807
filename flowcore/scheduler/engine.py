"""The run loop: passes over the DAG, parallel batches, reducers, routing.

One ``RunEngine`` executes one run of a compiled graph. ``run()`` and
``stream()`` both drive it; the only difference is who listens to ``emit``.

Determinism comes from three rules:

* the writes of a superstep are applied in node declaration order, never in
  completion order;
* in ``dataflow`` mode a node sees the pass-start state plus the writes of
  its own executed ancestors, folded in (level, declaration) order, so what
  it sees does not depend on timing either;
* the final state of a pass is every write of the pass folded in that same
  order, which is what ``supersteps`` mode computes step by step.

With a redactor in its options (``RunOptions.redactor``) the engine is the
seam that keeps known secrets in: every event is scrubbed before it is
emitted; node updates, interrupt values and the run's input are scrubbed
before they enter state or a checkpoint (``<<input.x>>`` still resolves to
the value as given, in memory only); every error is scrubbed in place when
recorded; the :class:`~flowcore.secrets.Secret` values of the input and
config are taught to the redactor first, so their plain text is caught too.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from graphlib import TopologicalSorter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from flowcore.checkpoint.protocol import Checkpoint, PendingWrite
from flowcore.errors import (
    CheckpointError,
    FlowcoreError,
    GraphRecursionError,
    InvalidUpdateError,
    NodeError,
    ReferenceResolutionError,
    RoutingError,
)
from flowcore.events import (
    CheckpointEvent,
    CustomEvent,
    DoneEvent,
    Event,
    InterruptEvent,
    NodeCancelledEvent,
    NodeEndEvent,
    NodeErrorEvent,
    NodeSkippedEvent,
    NodeStartEvent,
    RunStartEvent,
    RunStatus,
)
from flowcore.graph.commands import Command, Send
from flowcore.graph.constants import END, START
from flowcore.graph.spec import NodeSpec, RouterSpec
from flowcore.interrupts import (
    Interrupt,
    InterruptScope,
    NodeInterrupted,
    current_scope,
)
from flowcore.result import NodeRun, RunResult
from flowcore.runtime import StepWrites, call_node
from flowcore.runtime.usage import UsageMeter, current_meter, reset_meter, use_meter
from flowcore.scheduler.context import NodeContext
from flowcore.scheduler.dataflow import DataflowPass
from flowcore.scheduler.invoke import invoke_with_policy
from flowcore.scheduler.observers import observed, run_observer
from flowcore.scheduler.options import DEFAULT_RECURSION_LIMIT, RunOptions
from flowcore.scheduler.outcome import NO_ARG as _NO_ARG
from flowcore.scheduler.outcome import Outcome as _Outcome
from flowcore.scheduler.outcome import RunFailed as _RunFailed
from flowcore.scheduler.outcome import RunPaused as _RunPaused
from flowcore.scheduler.persistence import new_checkpoint_id
from flowcore.scheduler.planner import PassState, decide, route_targets
from flowcore.scheduler.supersteps import SuperstepPass
from flowcore.scheduler.thread_run import ThreadRun
from flowcore.secrets import NO_REDACTION, Redactor, find_secrets, learn, scrub, scrub_error

if TYPE_CHECKING:
    from flowcore.graph.compiled import CompiledGraph
    from flowcore.graph.topology import PassPlan

__all__ = ["RunEngine"]

EmitFn = Callable[[Event], None]


class RunEngine:
    """Executes one run of a compiled graph and reports it through ``emit``.

    Example:
        >>> # Used through CompiledGraph.run / CompiledGraph.stream.
    """

    def __init__(
        self,
        graph: CompiledGraph,
        options: RunOptions,
        *,
        run_id: str | None = None,
        emit: EmitFn | None = None,
        thread: ThreadRun | None = None,
    ) -> None:
        self.graph = graph
        self._thread = thread
        self.interrupts: list[Interrupt] = []
        self.options = options
        self.run_id = run_id or uuid.uuid4().hex
        self._redactor: Redactor | None = options.redactor
        observer = run_observer(options.config)
        if observer is not None:
            # A tracer in the config sees every event, even of a run nobody streams.
            emit = observed(emit, observer)
        if emit is not None and options.redactor is not None:
            emit = _redacting(emit, options.redactor)
        self._emit = emit
        self._schema = graph.schema
        self._topo = graph.topology
        self._specs = graph.nodes
        self._routers = graph.routers_by_source
        limit = options.recursion_limit
        self.limit = limit if limit is not None else DEFAULT_RECURSION_LIMIT + len(graph.nodes)
        self._limit = options.max_concurrency or None
        self._fail_fast = options.on_error == "fail_fast"
        # Per-step durability commits once per step: the last task of a clean
        # superstep leaves its write to the checkpoint that follows (which holds
        # it in its write group) instead of committing it alone just before
        # (flowcore.runtime.steps.StepWrites says which task that is).
        self._deferred: _Outcome | None = None
        self.values: dict[str, Any] = {}
        self.outputs: dict[str, Mapping[str, Any] | None] = {}
        self.node_runs: list[NodeRun] = []
        self.errors: list[BaseException] = []
        # Every model call of the run is charged here, through its node's meter.
        self.meter = UsageMeter()
        self.step = 0
        self.result: RunResult | None = None
        self._input: Mapping[str, Any] = {}
        self._t0 = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pass_index = 0
        self._pass_base = 0
        self._pause_next: str | None = None
        # Sends that start the next pass: (args by node, nodes started only by Sends).
        self._carry: tuple[dict[str, list[Any]], set[str]] | None = None

    def attach_thread(self, thread: ThreadRun) -> None:
        """Give a not-yet-started run its thread (used by streams, which open it late)."""
        self._thread = thread

    # ----------------------------------------------------------------- events
    def _event_base(self, superstep: int) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "graph_name": self.graph.name,
            "graph_version": self.graph.version,
            "superstep": superstep,
            "timestamp": time.time(),
        }

    # -------------------------------------------------------------------- run
    async def execute(self, values: dict[str, Any], run_input: Mapping[str, Any]) -> RunResult:
        """Run from ``values`` (the validated initial state) to the end."""
        self.values = self._learn_and_scrub(values, run_input)
        self._input = run_input
        self._t0 = time.perf_counter()
        self._loop = asyncio.get_running_loop()
        # A run inside another run's node: its calls are that node's calls too.
        self.meter.parent = current_meter()
        emit = self._emit
        if emit is not None:
            emit(RunStartEvent(**self._event_base(0), input=run_input))
        status: RunStatus = "completed"
        thread = self._thread
        try:
            restored: PassState | None = None
            cursor = thread.cursor if thread is not None else None
            if thread is not None:
                self.step = thread.start_step
                self.outputs.update(thread.outputs)
            if cursor is not None:
                assert thread is not None
                thread.input_from = cursor.get("input_from")
                roots = list(cursor["roots"])
                pass_index = int(cursor["pass"]) - 1
                restored = PassState.from_cursor(cursor)
                self._pass_base = int(cursor["base"])
            else:
                roots = await self._entry_roots()
                pass_index = 0
            dataflow = self.options.mode == "dataflow"
            while roots:
                pass_index += 1
                self._pass_index = pass_index
                plan = self._topo.pass_plan(roots)
                if dataflow:
                    roots = await self._dataflow_pass(plan, pass_index)
                else:
                    roots = await self._superstep_pass(plan, pass_index, restored)
                    restored = None
            if self.errors:
                status = "failed"
            if thread is not None:
                await self._save_checkpoint(None, {"status": status})
        except _RunFailed:
            status = "failed"
        except _RunPaused:
            status = "interrupted"
        except FlowcoreError as exc:
            self.errors.append(exc)
            status = "failed"
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await self._close_thread()
            self._finish("cancelled")
            raise
        try:
            await self._close_thread()
        except FlowcoreError as exc:
            self.errors.append(exc)
            status = "failed"
        return self._finish(status)

    async def execute_cancelled(
        self, values: dict[str, Any], run_input: Mapping[str, Any]
    ) -> RunResult:
        """End a run that was cancelled before it started: no node runs."""
        self.values = self._learn_and_scrub(values, run_input)
        self._input = run_input
        self._t0 = time.perf_counter()
        if self._emit is not None:
            self._emit(RunStartEvent(**self._event_base(0), input=run_input))
        return self._finish("cancelled")

    def _learn_and_scrub(
        self, values: dict[str, Any], run_input: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Teach the redactor the input's secrets; scrub what will be stored of the input."""
        redactor = self._redactor
        if redactor is None:
            return values
        learn(redactor, find_secrets(run_input))
        learn(redactor, find_secrets(self.options.config))
        thread = self._thread
        if thread is not None and thread.groups:
            thread.groups[:] = [scrub(group, redactor) for group in thread.groups]
        scrubbed: dict[str, Any] = scrub(values, redactor)
        return scrubbed

    def _scrub(self, value: Any) -> Any:
        return value if self._redactor is None else scrub(value, self._redactor)

    def _finish(self, status: RunStatus) -> RunResult:
        if self._redactor is not None:
            self.errors = [scrub_error(e, self._redactor) for e in self.errors]
        result = RunResult(
            run_id=self.run_id,
            graph_name=self.graph.name,
            graph_version=self.graph.version,
            status=status,
            state=self.values,
            outputs=dict(self.outputs),
            node_runs=tuple(self.node_runs),
            errors=tuple(self.errors),
            supersteps=self.step,
            duration=time.perf_counter() - self._t0,
            interrupts=tuple(self.interrupts),
            thread_id=None if self._thread is None else self._thread.thread_id,
            checkpoint_id=None if self._thread is None else self._thread.head_id,
            usage=self.meter.usage,
            model_calls=self.meter.calls,
        )
        self.result = result
        if self._emit is not None:
            self._emit(
                DoneEvent(
                    **self._event_base(self.step),
                    status=status,
                    state=self.values,
                    errors=tuple(self.errors),
                )
            )
        return result

    async def _entry_roots(self) -> list[str]:
        roots = list(self._topo.entry)
        start_routers = self._routers.get(START)
        if start_routers:
            ctx = self._context(START, 0, 1, {})
            picked, sends = await self._route(START, start_routers, self.values, None, ctx)
            roots.extend(picked)
            if sends:
                by_node: dict[str, list[Any]] = {}
                for send in sends:
                    by_node.setdefault(send.node, []).append(send.arg)
                self._carry = (by_node, set(by_node) - set(roots))
                roots.extend(by_node)
        return self._ordered(set(roots))

    def _ordered(self, names: set[str]) -> list[str]:
        index = self._topo.index
        return sorted(names, key=index.__getitem__)

    # --------------------------------------------------------- pass helpers
    def _decide(self, node: str, plan: PassPlan, ps: PassState) -> str | None:
        """None if ``node`` should run; else why it is skipped (the planner decides)."""
        return decide(node, plan, ps, self._topo.triggers[node])

    def _skip(
        self, node: str, reason: str, plan: PassPlan, ps: PassState, base: int, pass_index: int
    ) -> None:
        ps.res[node] = max((ps.res[p] for p in plan.preds[node]), default=base)
        if reason == "upstream_failed":
            detail = f"upstream node {ps.poisoned[node]!r} failed"
        else:
            detail = "no edge into this node was taken in this pass"
        self.node_runs.append(
            NodeRun(node, pass_index, ps.res[node], "skipped", skip_reason=reason)
        )
        if self._emit is not None:
            self._emit(
                NodeSkippedEvent(
                    **self._event_base(ps.res[node]),
                    node=node,
                    reason=reason,  # type: ignore[arg-type]
                    detail=detail,
                )
            )

    def _recursion_error(self) -> GraphRecursionError:
        return GraphRecursionError(
            f"graph {self.graph.name!r} needed more than {self.limit} supersteps "
            "(recursion_limit); a loop probably never takes its exit route. Fix the "
            "router's exit condition, or pass a larger recursion_limit to run()",
            limit=self.limit,
        )

    def _check_limit(self, level: int) -> None:
        if level > self.limit:
            raise self._recursion_error()

    def _absorb(self, out: _Outcome, pass_index: int, ps: PassState) -> bool:
        """Record a finished node; return False if it failed."""
        node = out.node
        if out.error is not None:
            self.errors.append(out.error)
            self.node_runs.append(
                NodeRun(
                    node,
                    pass_index,
                    out.level,
                    "failed",
                    None,
                    out.started,
                    out.duration,
                    out.attempts,
                    out.error,
                    **_usage_of(out),
                )
            )
            ps.poisoned[node] = node
            ps.res[node] = out.level
            return False
        self.node_runs.append(
            NodeRun(
                node,
                pass_index,
                out.level,
                "completed",
                out.update,
                out.started,
                out.duration,
                out.attempts,
                **_usage_of(out),
            )
        )
        self.outputs[node] = out.update
        ps.executed.add(node)
        ps.res[node] = out.level
        topo = self._topo
        back = topo.back_targets.get(node)
        if back:
            ps.next_roots.update(back)
        if out.routes:
            picked = ps.selected.setdefault(node, set())
            for target in out.routes:
                # A back edge, or a goto to an undeclared destination, starts the next pass.
                if topo.picks_in_pass(node, target):
                    picked.add(target)
                else:
                    ps.next_roots.add(target)
        for send in out.sends:
            to = ps.sends if topo.picks_in_pass(node, send.node) else ps.next_sends
            to.setdefault(send.node, []).append(send.arg)
        if out.update:
            # Labelled by task, so a conflict between two Send tasks names both.
            ps.writes.append((out.level, topo.index[node], out.key or node, out.update))
        return True

    # ------------------------------------------------------------ supersteps
    async def _superstep_pass(
        self, plan: PassPlan, pass_index: int, restored: PassState | None = None
    ) -> list[str]:
        return await SuperstepPass(self, plan, pass_index, restored).run()

    def _replay_decided(self, sorter: TopologicalSorter[str], ps: PassState) -> list[str]:
        """Walk a fresh sorter past the nodes a restored pass already decided."""
        ready = list(sorter.get_ready())
        undecided: list[str] = []
        while ready:
            decided = [n for n in ready if n in ps.res]
            undecided.extend(n for n in ready if n not in ps.res)
            if not decided:
                break
            sorter.done(*decided)
            ready = list(sorter.get_ready())
        return undecided

    async def _checkpoint_before(
        self, batch: list[str], plan: PassPlan, ps: PassState, pass_index: int, base: int
    ) -> None:
        """Save where the run stands before ``batch`` runs; pause there if asked."""
        thread = self._thread
        assert thread is not None
        resumed_here = thread.cursor is not None and thread.reuse_head
        pause: str | None = self._pause_next
        if pause is None and thread.interrupt_before.intersection(batch):
            skip_check = (
                resumed_here
                and thread.cursor is not None
                and (thread.cursor.get("pause") == "before")
            )
            if not skip_check:
                pause = "before"
        thread.cursor = None  # only the first batch after a resume is "resumed"
        if resumed_here and not thread.groups and pause is None and self._deferred is None:
            # Resuming into the very batch the saved checkpoint describes:
            # its pending writes stay attached to it, so keep it as the head.
            return
        cursor = {
            "input_from": thread.input_from,
            "pass": pass_index,
            "roots": sorted(plan.roots, key=self._topo.index.__getitem__),
            "base": base,
            "next": list(batch),
            "pause": pause,
            **ps.to_cursor(),
        }
        await self._save_checkpoint(cursor, {})
        self._pause_next = None
        if pause is not None:
            raise _RunPaused

    async def _save_checkpoint(
        self, cursor: Mapping[str, Any] | None, metadata: Mapping[str, Any]
    ) -> None:
        thread = self._thread
        assert thread is not None
        groups = tuple(thread.groups)
        snapshot = None
        if thread.policy.wants_snapshot(groups):
            snapshot = {"values": self.values, "outputs": dict(self.outputs)}
        checkpoint_id = new_checkpoint_id()
        meta = {"run_id": self.run_id, "step": self.step, "source": thread.source, **metadata}
        if thread.input_from is None:
            # The run's first checkpoint keeps its input, for <<input.x>> after a resume.
            thread.input_from = checkpoint_id
            meta["input"] = self._scrub(dict(self._input))
            if cursor is not None:
                cursor = {**cursor, "input_from": checkpoint_id}
        thread.source = "loop"
        cp = Checkpoint(
            thread_id=thread.thread_id,
            checkpoint_id=checkpoint_id,
            parent_id=thread.head_id,
            step=self.step,
            created_at=time.time(),
            writes=groups,
            snapshot=snapshot,
            cursor=cursor,
            metadata=meta,
        )
        try:
            await thread.writer.checkpoint(cp)
        except FlowcoreError:
            # The write this checkpoint was to carry is stored alone if it can be, so a
            # checkpoint that failed for another reason (a lost lease, a full disk) does
            # not cost a finished node its result; this checkpoint's error is the one reported.
            with contextlib.suppress(FlowcoreError):
                await self._store_deferred()
            self._deferred = None
            raise
        self._deferred = None  # its write is in this checkpoint's group (or its cursor)
        if snapshot is not None:
            thread.policy.took_snapshot(snapshot)
        thread.head_id = cp.checkpoint_id
        thread.groups.clear()
        thread.pending.clear()
        emit = self._emit
        if emit is not None:
            self._emit_checkpoint(emit, cp)

    def _emit_checkpoint(self, emit: EmitFn, cp: Checkpoint) -> None:
        # Sent once the writer has taken the checkpoint (stored, queued, or held
        # under "exit": see CheckpointEvent), never for one the writer refused.
        writer = self._thread.writer if self._thread is not None else None
        parent = cp.parent_id
        if writer is not None and writer.durability == "exit":
            # Held checkpoints are stored as one, under the last id, whose parent is
            # the newest checkpoint stored before: name the parent the store will hold.
            parent = writer.persisted_id
        cursor = cp.cursor
        emit(
            CheckpointEvent(
                **self._event_base(cp.step),
                thread_id=cp.thread_id,
                checkpoint_id=cp.checkpoint_id,
                parent_id=parent,
                step=cp.step,
                next=tuple(cursor.get("next", ())) if cursor is not None else (),
            )
        )

    async def _close_thread(self) -> None:
        thread = self._thread
        if thread is None:
            return
        await self._store_deferred()
        await thread.writer.close({"values": self.values, "outputs": dict(self.outputs)})

    async def _store_deferred(self) -> None:
        """Store the write a checkpoint was to carry, when the run stops before that checkpoint."""
        out = self._deferred
        if out is not None:
            self._deferred = None
            await self._persist_node(out)

    def _saved_outcome(self, node: str, level: int, key: str | None = None) -> _Outcome | None:
        """A task whose write an earlier attempt saved: its outcome, without running it."""
        assert self._thread is not None
        key = node if key is None else key
        payload = self._thread.pending.get(key)
        if payload is None or payload.get("status") != "completed":
            return None
        update = payload.get("update")
        return _Outcome(
            node=node,
            level=level,
            started=0.0,
            attempts=int(payload.get("attempts", 0)),
            update=update,
            routes=tuple(payload.get("routes", ())),
            key=key,
            sends=tuple(Send(n, a) for n, a in payload.get("sends", ())),
        )

    # -------------------------------------------------------------- dataflow
    async def _dataflow_pass(self, plan: PassPlan, pass_index: int) -> list[str]:
        """One pass in dataflow mode, run by :class:`~flowcore.scheduler.dataflow.DataflowPass`.

        The pass runs nodes through ``_run_node_now`` and records them through
        ``_absorb`` and ``_skip``, as supersteps mode does; a failure that
        stops the run leaves the writes below its level applied.
        """
        end = await DataflowPass(
            topology=self._topo,
            schema=self._schema,
            specs=self._specs,
            pool_limit=self._limit,
            recursion_limit=self.limit,
            fail_fast=self._fail_fast,
            errors=self.errors,
            run_node=self._run_node_now,
            absorb=self._absorb,
            skip=self._skip,
            recursion_error=self._recursion_error,
            reach=self._reach_level,
        ).run(plan, pass_index, self.values, self.step)
        self.values = end.values
        if end.stopped_at is not None:
            self.step = min(self.step, end.stopped_at)
            raise _RunFailed
        return self._ordered(end.next_roots)

    def _reach_level(self, level: int) -> None:
        # A dataflow node is starting at ``level``: the run's superstep count is
        # the deepest level started so far (interrupt ids are keyed by it).
        self.step = max(self.step, level)

    # ------------------------------------------------------------- one node
    def _context(
        self, node: str, level: int, attempt: int, inputs: Mapping[str, Any], threaded: bool = False
    ) -> NodeContext:
        emit = self._emit
        if emit is None:
            return NodeContext(
                run_id=self.run_id,
                node=node,
                graph_name=self.graph.name,
                superstep=level,
                attempt=attempt,
                config=self.options.config,
                inputs=inputs,
                redactor=NO_REDACTION if self._redactor is None else self._redactor,
                thread_id=None if self._thread is None else self._thread.thread_id,
            )
        loop = self._loop

        def deliver(event: Any) -> None:
            if threaded and loop is not None:
                loop.call_soon_threadsafe(emit, event)
            else:
                emit(event)

        def send(name: str, data: Any) -> None:
            deliver(CustomEvent(**self._event_base(level), node=node, name=name, data=data))

        def publish(event_type: Callable[..., Any], fields: dict[str, Any]) -> None:
            deliver(event_type(**self._event_base(level), node=node, **fields))

        return NodeContext(
            run_id=self.run_id,
            node=node,
            graph_name=self.graph.name,
            superstep=level,
            attempt=attempt,
            config=self.options.config,
            inputs=inputs,
            redactor=NO_REDACTION if self._redactor is None else self._redactor,
            thread_id=None if self._thread is None else self._thread.thread_id,
            _emit=send,
            _publish=publish,
        )

    def _resolve_inputs(self, spec: NodeSpec, values: Mapping[str, Any]) -> Mapping[str, Any]:
        template = spec.inputs
        if template is None:
            return {}
        if template.is_static:
            # Read-only: the same static mapping is shared by every run.
            return MappingProxyType(template.resolve({}))  # type: ignore[arg-type]
        namespaces: dict[str, Any] = {
            "input": self._input,
            "state": values,
            "memory": values.get("memory"),
            "user": values.get("user"),
        }
        for ref in template.references:
            ns = ref.namespace
            if ns in namespaces:
                continue
            if ns not in self.outputs:
                raise ReferenceResolutionError(
                    ref.text,
                    segment=ns,
                    reason="has produced no output yet in this run (it was skipped or has not run)",
                    node=spec.name,
                )
            update = self.outputs[ns] or {}
            source = self.graph.nodes.get(ns)
            view = source.output_view if source is not None else None
            namespaces[ns] = update if view is None else view(update)
        return template.resolve(namespaces, node=spec.name)  # type: ignore[return-value]

    async def _run_node_now(
        self,
        spec: NodeSpec,
        values: Mapping[str, Any],
        level: int,
        key: str | None = None,
        arg: Any = _NO_ARG,
        *,
        writes: StepWrites | None = None,
    ) -> _Outcome:
        """Run one task and save its write; ``writes`` is its superstep's (None in dataflow)."""
        name = spec.name
        emit = self._emit
        if emit is not None:
            emit(NodeStartEvent(**self._event_base(level), node=name))
        t_start = time.perf_counter()
        out = _Outcome(name, level, t_start - self._t0)  # positional: once per node run
        task = name if key is None else key
        out.key = task
        schema = self._schema
        shape = spec.shape
        try:
            inputs = self._resolve_inputs(spec, values)
            scope = InterruptScope(
                name,
                self._interrupt_key(),
                self._resumes_for(task),
                task=key,
            )
            token = current_scope().set(scope)
            out.meter = UsageMeter(self.meter)
            metered = use_meter(out.meter)  # the node's model calls are charged to it
            try:
                if spec.retry is None and spec.timeout is None:
                    # No policy to apply: one attempt, without the policy frames.
                    try:
                        if shape.is_async and not shape.takes_context:
                            # The most common node of all: no context to build.
                            result = await call_node(
                                spec.func, True, (schema.view(values) if arg is _NO_ARG else arg,)
                            )
                        else:
                            result = await self._call_node(spec, values, level, inputs, 1, arg)
                    except Exception as exc:
                        raise NodeError(node=name, attempts=1, cause=exc) from exc
                    out.attempts = 1
                else:

                    async def call(attempt: int) -> Any:
                        scope.used = 0  # each attempt starts the node over
                        return await self._call_node(spec, values, level, inputs, attempt, arg)

                    result, out.attempts = await invoke_with_policy(
                        name, call, retry=spec.retry, timeout=spec.timeout
                    )
            finally:
                reset_meter(metered)
                current_scope().reset(token)
            goto: tuple[tuple[str, ...], tuple[Send, ...]] | None = None
            if type(result) is Command:
                goto = self._goto(spec, result.targets())
                result = result.update
            # Secrets in what a node returns never reach state, events or checkpoints.
            update = self._scrub(schema.check_update(name, result))
            out.update = update
            routers = self._routers.get(name)
            if routers:
                ctx = self._context(name, level, out.attempts, inputs)
                out.routes, out.sends = await self._route(name, routers, values, update, ctx)
            if goto is not None:
                out.routes = tuple(dict.fromkeys((*goto[0], *out.routes)))
                out.sends = (*goto[1], *out.sends)
            if self._thread is not None:
                if (
                    writes is not None
                    and writes.rides_with_checkpoint()
                    and self._thread.syncs_each_step
                ):
                    self._deferred = out
                else:
                    await self._persist_node(out)
        except NodeInterrupted as paused:
            asked = paused.interrupt
            out.interrupt = replace(asked, value=self._scrub(asked.value))
            out.resumes = paused.resumes
            out.attempts = max(out.attempts, 1)
            if self._thread is not None:
                try:
                    await self._persist_node(out)
                except FlowcoreError as exc:
                    out.interrupt = None
                    out.error = exc
        except asyncio.CancelledError:
            self._record_cancelled(out, time.perf_counter() - t_start)
            raise
        except (
            NodeError,
            InvalidUpdateError,
            RoutingError,
            ReferenceResolutionError,
            CheckpointError,
        ) as exc:
            out.error = exc
            if isinstance(exc, NodeError):
                out.attempts = exc.attempts
        except Exception as exc:
            # Anything else is still this node's failure, never the run loop's.
            out.error = NodeError(node=name, attempts=max(out.attempts, 1), cause=exc)
        out.duration = time.perf_counter() - t_start
        if out.error is not None and self._redactor is not None:
            out.error = scrub_error(out.error, self._redactor)
        if emit is not None:
            if out.interrupt is not None:
                emit(
                    InterruptEvent(
                        **self._event_base(level),
                        node=name,
                        interrupt_id=out.interrupt.id,
                        value=out.interrupt.value,
                    )
                )
            elif out.error is None:
                emit(
                    NodeEndEvent(
                        **self._event_base(level),
                        node=name,
                        update=out.update,
                        duration=out.duration,
                        attempts=out.attempts,
                    )
                )
            else:
                emit(
                    NodeErrorEvent(
                        **self._event_base(level),
                        node=name,
                        error=out.error,
                        duration=out.duration,
                        attempts=out.attempts,
                    )
                )
        return out

    async def _call_node(
        self,
        spec: NodeSpec,
        values: Mapping[str, Any],
        level: int,
        inputs: Mapping[str, Any],
        attempt: int,
        arg: Any = _NO_ARG,
    ) -> Any:
        """One attempt of a node's function, with its context if it asks for one.

        A Send task gets its Send's ``arg`` where other tasks get the state.
        """
        shape = spec.shape
        state = self._schema.view(values) if arg is _NO_ARG else arg
        if shape.takes_context:
            ctx = self._context(spec.name, level, attempt, inputs, not shape.is_async)
            return await call_node(spec.func, shape.is_async, (state, ctx))
        return await call_node(spec.func, shape.is_async, (state,))

    def _interrupt_key(self) -> str:
        thread = self._thread
        if thread is not None and thread.head_id is not None:
            return thread.head_id
        return f"{self.run_id}:{self.step}"

    def _resumes_for(self, task: str) -> tuple[Any, ...]:
        thread = self._thread
        if thread is None:
            return ()
        payload = thread.pending.get(task)
        if payload is None or payload.get("status") != "interrupted":
            return ()
        resumes = tuple(payload.get("resumes", ()))
        if task in thread.answers:
            resumes = (*resumes, thread.answers[task])
        return resumes

    async def _persist_node(self, out: _Outcome) -> None:
        """Save a finished node's result at once, so no later failure re-runs it."""
        thread = self._thread
        assert thread is not None
        assert thread.head_id is not None
        payload: dict[str, Any]
        if out.interrupt is not None:
            payload = {
                "status": "interrupted",
                "interrupt": {"id": out.interrupt.id, "value": out.interrupt.value},
                "resumes": list(out.resumes),
            }
        else:
            payload = {
                "status": "completed",
                "update": None if out.update is None else dict(out.update),
                "routes": list(out.routes),
                "attempts": out.attempts,
            }
            if out.sends:
                payload["sends"] = [[s.node, s.arg] for s in out.sends]
        payload = self._scrub(payload)  # resume answers too
        # Keyed by task: each Send task of a node keeps its own saved write.
        await thread.writer.node_write(thread.head_id, PendingWrite(out.key or out.node, payload))

    def _record_cancelled(self, out: _Outcome, duration: float) -> None:
        # Close the node's node_start, so a listener never waits for an end
        # that will not come.
        self.node_runs.append(
            NodeRun(
                out.node,
                self._pass_index,
                out.level,
                "cancelled",
                None,
                out.started,
                duration,
                out.attempts,
                **_usage_of(out),
            )
        )
        if self._emit is not None:
            self._emit(
                NodeCancelledEvent(**self._event_base(out.level), node=out.node, duration=duration)
            )

    # -------------------------------------------------------------- routing
    async def _route(
        self,
        source: str,
        routers: Sequence[RouterSpec],
        values: Mapping[str, Any],
        update: Mapping[str, Any] | None,
        ctx: NodeContext,
    ) -> tuple[tuple[str, ...], tuple[Send, ...]]:
        """The node names and the Sends the routers of ``source`` picked, in order."""
        after = self._schema.apply(values, [(source, update)]) if update else values
        state = self._schema.view(after)
        picked: list[str | Send] = []
        for router in routers:
            args: tuple[Any, ...] = (state, ctx) if router.shape.takes_context else (state,)
            try:
                raw = await call_node(router.func, router.shape.is_async, args, inline=True)
            except Exception as exc:
                raise RoutingError(
                    f"router of node {source!r} raised {type(exc).__name__}: {exc}",
                    node=source,
                ) from exc
            picked.extend(route_targets(router, raw))
        names = [t for t in picked if type(t) is str]
        if len(names) == len(picked):
            return tuple(dict.fromkeys(t for t in names if t != END)), ()
        sends = tuple(t for t in picked if type(t) is Send)
        self._check_send_mode(source)
        return tuple(dict.fromkeys(t for t in names if t != END)), sends

    def _check_send_mode(self, source: str) -> None:
        if self.options.mode == "dataflow":
            raise RoutingError(
                f"node {source!r} returned a Send, which needs mode='supersteps': a Send "
                "starts its tasks in the next superstep, and dataflow mode has no supersteps; "
                "run this graph with mode='supersteps'",
                node=source,
            )

    def _goto(
        self, spec: NodeSpec, items: Sequence[Any]
    ) -> tuple[tuple[str, ...], tuple[Send, ...]]:
        """Check a Command's goto targets; return its node names and its Sends."""
        name = spec.name
        names: list[str] = []
        sends: list[Send] = []
        for item in items:
            if isinstance(item, Send):
                target = item.node
            elif isinstance(item, str):
                target = item
            else:
                raise RoutingError(
                    f"node {name!r} returned Command(goto={item!r}): a goto target is a node "
                    "name or a Send, or a list of them",
                    node=name,
                )
            if target == END and isinstance(item, str):
                continue
            if target not in self.graph.nodes:
                raise RoutingError(
                    f"node {name!r} returned Command(goto=...) to {target!r}, which is not a "
                    f"node of graph {self.graph.name!r}; use one of "
                    f"{', '.join(map(repr, self.graph.nodes))}",
                    node=name,
                )
            declared = spec.destinations
            if declared is not None and target not in declared:
                raise RoutingError(
                    f"node {name!r} returned Command(goto=...) to {target!r}, outside its "
                    f"declared destinations ({', '.join(map(repr, declared)) or 'none'}); add "
                    f"it to add_node({name!r}, ..., destinations=[...])",
                    node=name,
                )
            if isinstance(item, Send):
                sends.append(item)
            else:
                names.append(target)
        if sends:
            self._check_send_mode(name)
        return tuple(names), tuple(sends)


def _usage_of(out: _Outcome) -> dict[str, Any]:
    """The ``usage`` and ``model_calls`` of a task's NodeRun, from its meter."""
    meter = out.meter
    if meter is None or not meter.calls:
        return {}
    return {"usage": meter.usage, "model_calls": meter.calls}


def _redacting(emit: EmitFn, redactor: Redactor) -> EmitFn:
    """``emit``, but every event is scrubbed of known secrets first."""

    def redacted(event: Event) -> None:
        emit(scrub(event, redactor))

    return redacted
