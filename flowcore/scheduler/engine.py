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
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from graphlib import TopologicalSorter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from flowcore.errors import (
    FlowcoreError,
    GraphRecursionError,
    InvalidUpdateError,
    NodeError,
    ReferenceResolutionError,
    RoutingError,
)
from flowcore.events import (
    CustomEvent,
    DoneEvent,
    Event,
    NodeEndEvent,
    NodeErrorEvent,
    NodeSkippedEvent,
    NodeStartEvent,
    RunStartEvent,
    RunStatus,
)
from flowcore.graph.constants import END, START
from flowcore.graph.spec import NodeSpec, RouterSpec
from flowcore.result import NodeRun, RunResult
from flowcore.scheduler.context import NodeContext
from flowcore.scheduler.invoke import call_user_function, invoke_with_policy
from flowcore.scheduler.options import DEFAULT_RECURSION_LIMIT, RunOptions

if TYPE_CHECKING:
    from flowcore.graph.compiled import CompiledGraph
    from flowcore.graph.topology import PassPlan

__all__ = ["RunEngine"]

EmitFn = Callable[[Event], None]


@dataclass(slots=True)
class _Outcome:
    node: str
    level: int
    started: float
    duration: float = 0.0
    attempts: int = 0
    update: Mapping[str, Any] | None = None
    routes: tuple[str, ...] = ()
    error: BaseException | None = None


class _RunFailed(Exception):
    """Internal: stop the run; the errors are already recorded."""


class _PassState:
    """Book-keeping for one pass: who ran, who was skipped, who was picked."""

    __slots__ = ("executed", "next_roots", "poisoned", "res", "selected", "writes")

    def __init__(self) -> None:
        self.executed: set[str] = set()
        self.poisoned: dict[str, str] = {}
        self.selected: dict[str, set[str]] = {}
        self.res: dict[str, int] = {}
        self.next_roots: set[str] = set()
        self.writes: list[tuple[int, int, str, Mapping[str, Any]]] = []


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
    ) -> None:
        self.graph = graph
        self.options = options
        self.run_id = run_id or uuid.uuid4().hex
        self._emit = emit
        self._schema = graph.schema
        self._topo = graph.topology
        self._specs = graph.nodes
        self._routers = graph.routers_by_source
        limit = options.recursion_limit
        self.limit = limit if limit is not None else DEFAULT_RECURSION_LIMIT + len(graph.nodes)
        self._sem = asyncio.Semaphore(options.max_concurrency) if options.max_concurrency else None
        self._fail_fast = options.on_error == "fail_fast"
        self.values: dict[str, Any] = {}
        self.outputs: dict[str, Mapping[str, Any] | None] = {}
        self.node_runs: list[NodeRun] = []
        self.errors: list[BaseException] = []
        self.step = 0
        self.result: RunResult | None = None
        self._input: Mapping[str, Any] = {}
        self._t0 = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None

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
        self.values = values
        self._input = run_input
        self._t0 = time.perf_counter()
        self._loop = asyncio.get_running_loop()
        emit = self._emit
        if emit is not None:
            emit(RunStartEvent(**self._event_base(0), input=run_input))
        status: RunStatus = "completed"
        try:
            roots = await self._entry_roots()
            pass_index = 0
            dataflow = self.options.mode == "dataflow"
            while roots:
                pass_index += 1
                plan = self._topo.pass_plan(roots)
                if dataflow:
                    roots = await self._dataflow_pass(plan, pass_index)
                else:
                    roots = await self._superstep_pass(plan, pass_index)
            if self.errors:
                status = "failed"
        except _RunFailed:
            status = "failed"
        except FlowcoreError as exc:
            self.errors.append(exc)
            status = "failed"
        except asyncio.CancelledError:
            self._finish("cancelled")
            raise
        return self._finish(status)

    def _finish(self, status: RunStatus) -> RunResult:
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
            picked = await self._route(START, start_routers, self.values, None, ctx)
            roots.extend(picked)
        return self._ordered(set(roots))

    def _ordered(self, names: set[str]) -> list[str]:
        index = self._topo.index
        return sorted(names, key=index.__getitem__)

    # --------------------------------------------------------- pass helpers
    def _decide(self, node: str, plan: PassPlan, ps: _PassState) -> str | None:
        """None if ``node`` should run; else why it is skipped."""
        preds = plan.preds[node]
        for p in preds:
            if p in ps.poisoned:
                ps.poisoned[node] = p
                return "upstream_failed"
        if node in plan.roots:
            return None
        trig = self._topo.triggers[node]
        executed = ps.executed
        for p in trig.plain:
            if p in executed:
                return None
        for group in trig.joins:
            if all(s in executed for s in group):
                return None
        for src in trig.routed_by:
            sel = ps.selected.get(src)
            if sel is not None and node in sel:
                return None
        return "not_triggered"

    def _skip(
        self, node: str, reason: str, plan: PassPlan, ps: _PassState, base: int, pass_index: int
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

    def _check_limit(self, level: int) -> None:
        if level > self.limit:
            raise GraphRecursionError(
                f"graph {self.graph.name!r} needed more than {self.limit} supersteps "
                "(recursion_limit); a loop probably never takes its exit route. Fix the "
                "router's exit condition, or pass a larger recursion_limit to run()",
                limit=self.limit,
            )

    def _absorb(self, out: _Outcome, pass_index: int, ps: _PassState) -> bool:
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
            picked: set[str] = set()
            for target in out.routes:
                if topo.is_back_edge(node, target):
                    ps.next_roots.add(target)
                else:
                    picked.add(target)
            ps.selected[node] = picked
        if out.update:
            ps.writes.append((out.level, topo.index[node], node, out.update))
        return True

    # ------------------------------------------------------------ supersteps
    async def _superstep_pass(self, plan: PassPlan, pass_index: int) -> list[str]:
        ps = _PassState()
        base = self.step
        sorter: TopologicalSorter[str] = TopologicalSorter(plan.preds)
        sorter.prepare()
        index = self._topo.index
        while sorter.is_active():
            batch: list[str] = []
            pending = sorter.get_ready()
            while pending:
                skipped = []
                for node in pending:
                    reason = self._decide(node, plan, ps)
                    if reason is None:
                        batch.append(node)
                    else:
                        self._skip(node, reason, plan, ps, base, pass_index)
                        skipped.append(node)
                if not skipped:
                    break
                sorter.done(*skipped)
                pending = sorter.get_ready()
            if not batch:
                continue
            level = self.step + 1
            self._check_limit(level)
            self.step = level
            batch.sort(key=index.__getitem__)
            outcomes = await self._run_batch(batch, level)
            ps.writes.clear()
            failed = False
            for out in outcomes:
                if not self._absorb(out, pass_index, ps):
                    failed = True
            if failed and self._fail_fast:
                raise _RunFailed
            if ps.writes:
                self.values = self._schema.apply(
                    self.values, [(node, upd) for _, _, node, upd in ps.writes]
                )
            sorter.done(*batch)
        return self._ordered(ps.next_roots)

    async def _run_batch(self, batch: Sequence[str], level: int) -> list[_Outcome]:
        specs = self._specs
        values = self.values
        if len(batch) == 1:
            return [await self._run_node(specs[batch[0]], values, level)]
        results: list[_Outcome | None] = [None] * len(batch)
        tasks: list[asyncio.Task[None]] = []
        fail_fast = self._fail_fast

        async def one(i: int, spec: NodeSpec) -> None:
            out = await self._run_node(spec, values, level)
            results[i] = out
            if out.error is not None and fail_fast:
                me = asyncio.current_task()
                for t in tasks:
                    if t is not me:
                        t.cancel()

        async with asyncio.TaskGroup() as tg:
            for i, name in enumerate(batch):
                tasks.append(tg.create_task(one(i, specs[name])))
        return [r for r in results if r is not None]

    # -------------------------------------------------------------- dataflow
    async def _dataflow_pass(self, plan: PassPlan, pass_index: int) -> list[str]:
        ps = _PassState()
        base = self.step
        start_values = self.values
        sorter: TopologicalSorter[str] = TopologicalSorter(plan.preds)
        sorter.prepare()
        done_q: asyncio.Queue[_Outcome] = asyncio.Queue()
        ancestors: dict[str, frozenset[str]] = {}
        views: dict[str, Mapping[str, Any]] = {}
        updates: dict[str, Mapping[str, Any] | None] = {}
        tasks: set[asyncio.Task[None]] = set()
        failure: BaseException | None = None
        running = 0

        async def one(spec: NodeSpec, view: Mapping[str, Any], level: int) -> None:
            out = await self._run_node(spec, view, level)
            done_q.put_nowait(out)

        async with asyncio.TaskGroup() as tg:
            pending = sorter.get_ready()
            while True:
                try:
                    while pending:
                        skipped = []
                        for node in sorted(pending, key=self._topo.index.__getitem__):
                            preds = plan.preds[node]
                            reason = self._decide(node, plan, ps)
                            anc: set[str] = set()
                            for p in preds:
                                anc.update(ancestors[p])
                                if p in ps.executed:
                                    anc.add(p)
                            ancestors[node] = frozenset(anc)
                            if reason is not None:
                                self._skip(node, reason, plan, ps, base, pass_index)
                                skipped.append(node)
                                continue
                            level = 1 + max((ps.res[p] for p in preds), default=base)
                            self._check_limit(level)
                            self.step = max(self.step, level)
                            view = self._dataflow_view(
                                node, preds, ps, anc, views, updates, start_values
                            )
                            views[node] = view
                            task = tg.create_task(one(self._specs[node], view, level))
                            tasks.add(task)
                            task.add_done_callback(tasks.discard)
                            running += 1
                        if not skipped:
                            break
                        sorter.done(*skipped)
                        pending = sorter.get_ready()
                except FlowcoreError as exc:
                    failure = exc
                if failure is not None or running == 0:
                    break
                out = await done_q.get()
                running -= 1
                ok = self._absorb(out, pass_index, ps)
                updates[out.node] = out.update
                if not ok and self._fail_fast:
                    failure = out.error
                    break
                sorter.done(out.node)
                pending = sorter.get_ready()
            if failure is not None:
                for t in tasks:
                    t.cancel()
        # Completed nodes are facts even when the pass failed: fold them in.
        self.values = self._fold(start_values, ps.writes)
        if failure is not None:
            if failure not in self.errors:
                self.errors.append(failure)
            raise _RunFailed
        return self._ordered(ps.next_roots)

    def _dataflow_view(
        self,
        node: str,
        preds: Sequence[str],
        ps: _PassState,
        anc: set[str],
        views: Mapping[str, Mapping[str, Any]],
        updates: Mapping[str, Mapping[str, Any] | None],
        start_values: Mapping[str, Any],
    ) -> Mapping[str, Any]:
        if not anc:
            return start_values
        if len(preds) == 1 and preds[0] in ps.executed:
            # A chain link: the parent's view plus the parent's own write.
            parent = preds[0]
            upd = updates.get(parent)
            if not upd:
                return views[parent]
            return self._schema.apply(views[parent], [(parent, upd)])
        writes = [w for w in ps.writes if w[2] in anc]
        return self._fold(start_values, writes)

    def _fold(
        self,
        values: Mapping[str, Any],
        writes: Sequence[tuple[int, int, str, Mapping[str, Any]]],
    ) -> dict[str, Any]:
        """Apply writes grouped by level, each group in declaration order."""
        out = dict(values)
        if not writes:
            return out
        ordered = sorted(writes, key=lambda w: (w[0], w[1]))
        group: list[tuple[str, Mapping[str, Any]]] = []
        level = ordered[0][0]
        for lvl, _, node, upd in ordered:
            if lvl != level:
                out = self._schema.apply(out, group)
                group = []
                level = lvl
            group.append((node, upd))
        return self._schema.apply(out, group)

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
            )
        loop = self._loop

        def send(name: str, data: Any) -> None:
            event = CustomEvent(**self._event_base(level), node=node, name=name, data=data)
            if threaded and loop is not None:
                loop.call_soon_threadsafe(emit, event)
            else:
                emit(event)

        return NodeContext(
            run_id=self.run_id,
            node=node,
            graph_name=self.graph.name,
            superstep=level,
            attempt=attempt,
            config=self.options.config,
            inputs=inputs,
            _emit=send,
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
            namespaces[ns] = self.outputs[ns] or {}
        return template.resolve(namespaces, node=spec.name)  # type: ignore[return-value]

    async def _run_node(self, spec: NodeSpec, values: Mapping[str, Any], level: int) -> _Outcome:
        if self._sem is not None:
            async with self._sem:
                return await self._run_node_now(spec, values, level)
        return await self._run_node_now(spec, values, level)

    async def _run_node_now(
        self, spec: NodeSpec, values: Mapping[str, Any], level: int
    ) -> _Outcome:
        name = spec.name
        emit = self._emit
        if emit is not None:
            emit(NodeStartEvent(**self._event_base(level), node=name))
        t_start = time.perf_counter()
        out = _Outcome(node=name, level=level, started=t_start - self._t0)
        schema = self._schema
        shape = spec.shape
        try:
            inputs = self._resolve_inputs(spec, values)

            async def call(attempt: int) -> Any:
                state = schema.view(values)
                if shape.takes_context:
                    ctx = self._context(name, level, attempt, inputs, not shape.is_async)
                    if shape.is_async:
                        return await spec.func(state, ctx)
                    return await call_user_function(spec.func, False, state, ctx)
                if shape.is_async:
                    return await spec.func(state)
                return await call_user_function(spec.func, False, state)

            result, out.attempts = await invoke_with_policy(
                name, call, retry=spec.retry, timeout=spec.timeout
            )
            update = schema.check_update(name, result)
            out.update = update
            routers = self._routers.get(name)
            if routers:
                ctx = self._context(name, level, out.attempts, inputs)
                out.routes = await self._route(name, routers, values, update, ctx)
        except (NodeError, InvalidUpdateError, RoutingError, ReferenceResolutionError) as exc:
            out.error = exc
            if isinstance(exc, NodeError):
                out.attempts = exc.attempts
        except Exception as exc:
            # Anything else is still this node's failure, never the run loop's.
            out.error = NodeError(node=name, attempts=max(out.attempts, 1), cause=exc)
        out.duration = time.perf_counter() - t_start
        if emit is not None:
            if out.error is None:
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

    # -------------------------------------------------------------- routing
    async def _route(
        self,
        source: str,
        routers: Sequence[RouterSpec],
        values: Mapping[str, Any],
        update: Mapping[str, Any] | None,
        ctx: NodeContext,
    ) -> tuple[str, ...]:
        after = self._schema.apply(values, [(source, update)]) if update else values
        state = self._schema.view(after)
        picked: list[str] = []
        for router in routers:
            args: tuple[Any, ...] = (state, ctx) if router.shape.takes_context else (state,)
            try:
                if router.shape.is_async:
                    raw = await router.func(*args)
                else:
                    raw = router.func(*args)
            except Exception as exc:
                raise RoutingError(
                    f"router of node {source!r} raised {type(exc).__name__}: {exc}",
                    node=source,
                ) from exc
            picked.extend(_targets(router, raw))
        return tuple(dict.fromkeys(t for t in picked if t != END))


def _targets(router: RouterSpec, raw: Any) -> list[str]:
    items = list(raw) if isinstance(raw, list | tuple | set | frozenset) else [raw]
    if isinstance(raw, set | frozenset):
        items.sort(key=repr)
    out: list[str] = []
    for item in items:
        if router.path_map is not None:
            try:
                target = router.path_map[item]
            except (KeyError, TypeError):
                raise RoutingError(
                    f"router of node {router.source!r} returned {item!r}, which is not a key "
                    f"of its path_map (keys: {', '.join(map(repr, router.path_map))}); "
                    "return one of those keys or add it to path_map",
                    node=router.source,
                ) from None
        else:
            target = item
        if target == END:
            out.append(END)
            continue
        if target not in router.targets:
            raise RoutingError(
                f"router of node {router.source!r} returned {item!r}, which is not one of its "
                f"declared targets ({', '.join(map(repr, router.targets))}); declare it in "
                "path_map or in the router's Literal[...] return type",
                node=router.source,
            )
        out.append(target)
    return out
