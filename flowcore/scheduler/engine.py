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

The run loop and each pass's bookkeeping live here; the layers below
:class:`RunEngine` run one task (:mod:`flowcore.scheduler.engine_tasks`),
save to the thread (:mod:`flowcore.scheduler.engine_checkpoints`) and hold
the run's state and event stamping (:mod:`flowcore.scheduler.engine_state`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from graphlib import TopologicalSorter
from typing import TYPE_CHECKING, Any

from flowcore.errors import FlowcoreError, GraphRecursionError
from flowcore.events import DoneEvent, NodeSkippedEvent, RunStartEvent, RunStatus
from flowcore.graph.constants import START
from flowcore.result import NodeRun, RunResult
from flowcore.runtime.usage import current_meter
from flowcore.scheduler.dataflow import DataflowPass
from flowcore.scheduler.engine_state import EmitFn as EmitFn
from flowcore.scheduler.engine_tasks import EngineTasks, usage_of
from flowcore.scheduler.outcome import Outcome as _Outcome
from flowcore.scheduler.outcome import RunFailed as _RunFailed
from flowcore.scheduler.outcome import RunPaused as _RunPaused
from flowcore.scheduler.planner import PassState, decide
from flowcore.scheduler.supersteps import SuperstepPass
from flowcore.scheduler.thread_run import ThreadRun
from flowcore.secrets import scrub_error

if TYPE_CHECKING:
    from flowcore.graph.topology import PassPlan

__all__ = ["RunEngine"]


class RunEngine(EngineTasks):
    """Executes one run of a compiled graph and reports it through ``emit``.

    Example:
        >>> # Used through CompiledGraph.run / CompiledGraph.stream.
    """

    def attach_thread(self, thread: ThreadRun) -> None:
        """Give a not-yet-started run its thread (used by streams, which open it late)."""
        self._thread = thread

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
                    **usage_of(out),
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
                **usage_of(out),
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
