"""How a compat run runs one task: calling its node, its writes, its stream records.

:class:`~flowcore.compat.langgraph._loop.Run` takes these methods
from :class:`RunTasks`, written against it (``self: Run``). mypy
refuses a self type narrower than the class that declares it, hence the
``type: ignore[misc]`` on each ``def``; it still checks every body and
every call against ``Run``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from flowcore.compat.langgraph._calls import _Defined, run_with_calls
from flowcore.compat.langgraph._context import _SCOPE, TaskScope
from flowcore.compat.langgraph._debug_tasks import debug_task_metadata
from flowcore.compat.langgraph._delta import message_delta_keys, with_message_ids
from flowcore.compat.langgraph._error_handlers import (
    ERROR_SOURCE,
    NodeError,
    failure_record,
    run_handled,
)
from flowcore.compat.langgraph._errors import (
    GraphInterrupt,
    InvalidUpdateError,
    NodeCancelledError,
    ParentCommand,
)
from flowcore.compat.langgraph._node import (
    call_with_config,
    control_writes,
    retry_call,
    update_writes,
)
from flowcore.compat.langgraph._planner import (
    ERROR,
    INTERRUPT,
    NO_WRITES,
    RESUME,
    Task,
)
from flowcore.compat.langgraph._records import (
    Outcome,
    TaskEnd,
    TaskStart,
)
from flowcore.compat.langgraph._types import START, Command
from flowcore.runtime import call_node
from flowcore.runtime.steps import StepWrites
from flowcore.runtime.usage import UsageMeter, reset_meter, use_meter

if TYPE_CHECKING:
    from flowcore.compat.langgraph._loop import Run

__all__ = ["RunTasks"]

# The configurable key of a callable that is told the name of each node that returned.
NODE_FINISHED = "__pregel_node_finished"


class RunTasks:
    """The methods of :class:`Run` for how a compat run runs one task."""

    # What these methods set on the object: declared here for the type checker.
    last_values: Any
    message_deltas: frozenset[str] | None

    async def run_task(self: Run, task: Task, writes: StepWrites) -> Task:  # type: ignore[misc]
        """Run one task and save its writes; a failure is left in ``task.error``."""
        name = task.name
        graph = self.graph
        node = graph.nodes.get(name)
        wants = self.wants
        if "task_start" in wants and name != START:
            self.emit("task_start", TaskStart(self.step, task))
        parent = self.parent_scope
        scope = TaskScope(
            self,
            task,
            self.step,
            list(task.resume),
            self.null_resume if parent is None else parent.null_resume,
        )
        # A child run may run its tasks inline in its parent task's context: the
        # parent's scope comes back when this task ends. (The context variable itself,
        # not _context's helpers: two calls fewer per task.)
        outer = _SCOPE.get()
        _SCOPE.set(scope)
        metered = None
        if "task_end" in wants:
            # Someone reads per-node figures: this task's model calls get a meter of
            # their own (under the run's, which is current for the whole run).
            task.meter = meter = UsageMeter(self.meter)
            metered = use_meter(meter)
        try:
            if node is None and name != START:
                raise InvalidUpdateError(f"Invalid node name {name}")
            cache = graph.cache
            policy = None if node is None or cache is None else node.cache_policy
            if policy is None or cache is None:
                if _Defined.tasks:
                    task.writes = await run_with_calls(
                        self, task, scope, lambda: self._call_node(task, scope)
                    )
                elif self.observer is None:
                    # No callbacks on this run: _call_node would hand straight on.
                    task.writes = await self._node_writes(task, scope, None)
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
            # Messages for a messages DeltaChannel get their ids before they are saved.
            if self.message_deltas is None:
                self.message_deltas = message_delta_keys(self.channels)
            if self.message_deltas:
                task.writes = with_message_ids(self.channels, task.writes)
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
            if exc.interrupts:
                # A subgraph's breakpoint asks nothing: only the top run shows that pause.
                self.emit("updates", {INTERRUPT: tuple(exc.interrupts)})
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
            _SCOPE.set(outer)
            if metered is not None:
                reset_meter(metered)
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
        if name != START:
            # LangGraph calls a configurable hook with each node that returned.
            finished = self.configurable.get(NODE_FINISHED)
            if callable(finished):
                finished(name)
            if "updates" in wants:
                self.emit_task_updates(task, task.writes)
            if "task_end" in wants:
                self.emit("task_end", TaskEnd(self.step, task, "done", self.output_keys))
        return task

    async def _node_result(self: Run, task: Task, scope: TaskScope, spec: Any) -> Any:  # type: ignore[misc]
        """What node ``task.name`` returned, through its retry policy and time limits."""
        graph = self.graph
        action = spec.action
        if "messages_seen" in self.wants:
            self.emit("messages_seen", task.input)
        # A Send's own timeout needs the timed path, even for a node that has none.
        direct = graph.direct_call(task.name) if task.timeout is None else None
        if direct is not None:
            scope.asked = 0
            result = await call_node(direct, True, (task.input,))
        elif (
            spec.retry is None
            and spec.timeout is None
            and task.timeout is None
            and not hasattr(type(action), "_arun_subgraph")
        ):
            # Nothing to retry and no subgraph: the plain call, without the wrappers.
            scope.calls = 0
            result = await call_with_config(
                action,
                task.input,
                scope.get_config,
                {"writer": scope.writer, "runtime": scope.runtime, "store": self.store},
                graph.call_shape(action),
            )
        else:
            task.attempts = 0

            async def attempt() -> Any:
                scope.calls = 0
                task.attempts += 1
                if hasattr(type(action), "_arun_subgraph"):
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
                    {"writer": scope.writer, "runtime": scope.runtime, "store": self.store},
                    graph.call_shape(action),
                )

            timeout = task.timeout or spec.timeout
            result = await retry_call(attempt, spec.retry, timeout, task.name)
        return result

    async def record_failure(self: Run, task: Task, failure: NodeError) -> None:  # type: ignore[misc]
        """Save that ``task``'s node failed and its error handler takes over."""
        marker = [(ERROR_SOURCE, failure_record(failure))]
        if self.saver is not None:
            await self._put_writes(task, marker)
            self.pending.extend((task.id, c, v) for c, v in marker)

    def message_metadata(self: Run, task: Task) -> dict[str, Any]:  # type: ignore[misc]
        """The metadata ``messages`` mode shows with the messages a node returned.

        LangGraph's: the node run's metadata, under the graph's integration tag.
        """
        metadata = self.graph.task_config(self.config, task, self.step, self.ns)["metadata"]
        return {"ls_integration": "langgraph", **metadata}

    def debug_metadata(self: Run, task: Task) -> dict[str, Any] | None:  # type: ignore[misc]
        """The metadata ``tasks``/``debug`` records show for ``task`` (see _debug_tasks)."""
        config = self.config
        metadata = config.get("metadata") or {}
        spec = self.graph.nodes.get(task.name)
        own = getattr(spec, "metadata", None)
        if own:
            metadata = {**metadata, **own}
        return debug_task_metadata(metadata, config.get("tags"))

    def _task_result(self: Run, task: Task, outcome: Outcome) -> None:  # type: ignore[misc]
        """Record how a task that did not return ended (its error, pause or stop is in it)."""
        if task.name != START and "task_end" in self.wants:
            self.emit("task_end", TaskEnd(self.step, task, outcome, self.output_keys))

    async def _call_node(self: Run, task: Task, scope: TaskScope) -> list[tuple[str, Any]]:  # type: ignore[misc]
        observer = self.observer
        if observer is None or task.name == START:
            return await self._node_writes(task, scope, None)
        return await observer.call_node(
            task, self.step, lambda seen: self._node_writes(task, scope, seen)
        )

    async def _node_writes(  # type: ignore[misc]
        self: Run, task: Task, scope: TaskScope, seen: Callable[[Any], None] | None
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
                    # The usual node, worked out once per node (see direct_call): no
                    # retry, no time limit, no config asked for, nobody streaming what
                    # it reads; it is called here, without _node_result's frame.
                    direct = (
                        graph.direct_call(task.name)
                        if task.timeout is None and "messages_seen" not in self.wants
                        else None
                    )
                    if direct is not None:
                        scope.asked = 0
                        result = await call_node(direct, True, (task.input,))
                    else:
                        result = await self._node_result(task, scope, spec)
                else:
                    result = await run_handled(
                        self,
                        task,
                        scope,
                        handler,
                        lambda: self._node_result(task, scope, spec),
                        {"writer": scope.writer, "runtime": scope.runtime, "store": self.store},
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
            elif result is None and graph.dict_results:
                # No update (what result_writes and control_writes give for None).
                writes = []
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
            writes.extend(graph.route_writes(branch, picked))
        if task.name != START and "messages_from" in self.wants:
            self.emit("messages_from", (task, result, self.message_metadata(task)))
        return writes

    # --------------------------------------------------------------- outputs
    def emit_values(self: Run, *, force: bool = False) -> None:  # type: ignore[misc]
        """Stream the output keys' values after a superstep that changed them."""
        if "values" not in self.wants or not (
            force or not self.updated.isdisjoint(self.output_keys)
        ):
            return
        values = self.graph.read_output(self.channels, self.output_keys)
        self.last_values = values
        self.emit("values", values)

    def emit_task_updates(  # type: ignore[misc]
        self: Run, task: Task, writes: Sequence[tuple[str, Any]], *, cached: bool = False
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
