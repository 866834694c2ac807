"""How the engine runs one task: its context, inputs, attempts, write, events, routes.

:class:`EngineTasks` is the layer of
:class:`~flowcore.scheduler.engine.RunEngine` that runs a single node (or
``Send``) task for either pass kind: it resolves the node's ``<<refs>>``
inputs, builds its :class:`~flowcore.scheduler.context.NodeContext`, calls
it under its retry and timeout policy with its own usage meter and interrupt
scope, checks and scrubs its update, asks its routers (and any ``Command``
goto) where the run goes next, has its write saved, and emits its start and
end events. Every failure of the task becomes its outcome, never the run
loop's exception.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from flowcore.errors import (
    CheckpointError,
    FlowcoreError,
    InvalidUpdateError,
    NodeError,
    ReferenceResolutionError,
    RoutingError,
)
from flowcore.events import (
    CustomEvent,
    InterruptEvent,
    NodeCancelledEvent,
    NodeEndEvent,
    NodeErrorEvent,
    NodeStartEvent,
)
from flowcore.graph.commands import Command, Send
from flowcore.graph.constants import END
from flowcore.graph.spec import NodeSpec, RouterSpec
from flowcore.interrupts import InterruptScope, NodeInterrupted, current_scope
from flowcore.result import NodeRun
from flowcore.runtime import StepWrites, call_node
from flowcore.runtime.usage import UsageMeter, reset_meter, use_meter
from flowcore.scheduler.context import NodeContext
from flowcore.scheduler.engine_checkpoints import EngineCheckpoints
from flowcore.scheduler.invoke import invoke_with_policy
from flowcore.scheduler.outcome import NO_ARG as _NO_ARG
from flowcore.scheduler.outcome import Outcome as _Outcome
from flowcore.scheduler.planner import route_targets
from flowcore.secrets import NO_REDACTION, scrub_error

__all__ = ["EngineTasks", "usage_of"]


class EngineTasks(EngineCheckpoints):
    """Runs and routes the tasks of a run (a layer of ``RunEngine``).

    Example:
        >>> # out = await engine._run_node_now(spec, values, level)
    """

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
                **usage_of(out),
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


def usage_of(out: _Outcome) -> dict[str, Any]:
    """The ``usage`` and ``model_calls`` of a task's NodeRun, from its meter."""
    meter = out.meter
    if meter is None or not meter.calls:
        return {}
    return {"usage": meter.usage, "model_calls": meter.calls}
