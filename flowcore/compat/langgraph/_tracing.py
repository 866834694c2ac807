"""LangChain callbacks on compat runs: a chain run for the graph and one per node task.

When a run's config carries ``callbacks`` (LangChain handlers, a LangChain
callback manager, or :class:`~flowcore.compat.langgraph._callbacks.GraphCallbackHandler`
instances), the run gets a :class:`RunObserver`:

- the graph's run: ``on_chain_start`` with the run's input (named after the
  config's ``run_name`` or the graph, with the config's ``run_id``), then
  ``on_chain_end`` with the output state, or ``on_chain_error``;
- each node task a child run of it, tagged ``graph:step:N``, named after the
  node, with LangGraph's ``langgraph_*`` metadata; its output is what the node
  returned. Inside the node, LangChain code (a chat model, a tool, a nested
  graph) finds the task's callbacks in LangChain's child-config context, so its
  runs nest under the task's run; a node's ``TracePolicy`` changes what
  tracers record of it;
- stream handlers (``astream_events``, ``astream_log``) see each node's output
  as one streamed chunk, as LangGraph's streamed nodes give them;
- graph lifecycle handlers hear ``on_interrupt`` and ``on_resume``.

A subgraph's run is a child of its node's run. Nothing here runs nodes: the
run's loop calls :meth:`RunObserver.call_node` around the call it makes.
LangChain's own modules are used only once the app has loaded LangChain (see
:mod:`._langchain`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from flowcore.compat.langgraph._callbacks import (
    GraphInterruptEvent,
    GraphResumeEvent,
    dispatch_lifecycle,
    graph_handlers,
)
from flowcore.compat.langgraph._idle_progress import with_idle_progress
from flowcore.compat.langgraph._langchain import langchain_module
from flowcore.compat.langgraph._trace_policy import recorded_payload

if TYPE_CHECKING:
    from flowcore.compat.langgraph._loop import Run, Task

__all__ = ["RunObserver", "call_arguments", "observe"]

_STATUSES = frozenset(
    {"input", "pending", "done", "interrupt_before", "interrupt_after", "out_of_steps"}
)

T = TypeVar("T")

NodeCall = Callable[[Callable[[Any], None]], Awaitable[list[tuple[str, Any]]]]


def _langchain() -> Any:
    """``langchain_core.callbacks.manager``, or None when the app has not loaded LangChain."""
    return langchain_module("callbacks.manager")


def _child_config_var() -> contextvars.ContextVar[Any]:
    """LangChain's context variable that runnables read their parent's config from."""
    var: contextvars.ContextVar[Any] = _langchain_attr(
        "runnables.config", "var_child_runnable_config"
    )
    return var


def _langchain_attr(submodule: str, name: str) -> Any:
    module = langchain_module(submodule)
    return None if module is None else getattr(module, name)


def langsmith_tracing_on() -> bool:
    """Whether LangChain (when the app loaded it) would trace a run to LangSmith now."""
    module = langchain_module("tracers.context")
    return module is not None and bool(module._tracing_v2_is_enabled())


def langsmith_parent(callbacks: Any) -> contextlib.AbstractContextManager[Any]:
    """LangSmith's tracing context with the run ``callbacks`` report under as the parent.

    What LangChain sets around a runnable it calls, so that code in a node that
    asks LangSmith for its current run tree gets the node's run (nothing to set
    when no LangSmith tracer is among the callbacks).
    """
    tracers = sys.modules.get("langchain_core.tracers.langchain")
    helpers = sys.modules.get("langsmith.run_helpers")
    parent_id = getattr(callbacks, "parent_run_id", None)
    if tracers is None or helpers is None or parent_id is None:
        return contextlib.nullcontext()
    for handler in getattr(callbacks, "handlers", ()):
        if isinstance(handler, tracers.LangChainTracer):
            found = handler.run_map.get(str(parent_id))
            if found is not None:
                context: contextlib.AbstractContextManager[Any] = helpers.tracing_context(
                    parent=found
                )
                return context
    return contextlib.nullcontext()


def _is_stream_handler(handler: Any) -> bool:
    # Such a handler exists only once LangChain's streaming module is loaded.
    module = sys.modules.get("langchain_core.tracers._streaming")
    return module is not None and module._StreamingCallbackHandler in type(handler).__mro__


def _is_tracer(handler: Any) -> bool:
    module = sys.modules.get("langchain_core.tracers.base")
    if module is None or _is_stream_handler(handler):
        return False
    return isinstance(handler, module.BaseTracer | module.AsyncBaseTracer)


def _config_metadata(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config's metadata plus its plain configurable values (``thread_id``...)."""
    metadata = dict(config.get("metadata") or {})
    for key, value in dict(config.get("configurable") or {}).items():
        if (
            not key.startswith("__")
            and isinstance(value, str | int | float | bool)
            and key not in metadata
        ):
            metadata[key] = value
    return metadata


def call_arguments(func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """A ``@task`` call's arguments by parameter name, as its trace run shows its input.

    Example:
        >>> call_arguments(lambda number, scale=2: 0, (1,), {})
        {'number': 1}
    """
    try:
        return dict(inspect.signature(func).bind_partial(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        return {"args": list(args), **dict(kwargs)}


async def _one(value: Any) -> AsyncIterator[Any]:
    yield value


class RunObserver:
    """The callbacks of one run (see the module docstring).

    Example:
        >>> # observer = await observe(run)   # None: the run has no callbacks
    """

    def __init__(self, run: Run, callbacks: Any, graph_callbacks: list[Any]) -> None:
        self.run = run
        self.callbacks = callbacks
        self.graph_callbacks = graph_callbacks
        self.manager: Any = None  # the graph run's callback manager, once started
        # Task id -> (its run's manager, the config its node sees).
        self.tasks: dict[str, tuple[Any, dict[str, Any]]] = {}

    # ---------------------------------------------------------------- graph run
    async def start(self) -> None:
        """Open the graph's run (when there are LangChain callbacks to hear it)."""
        module = _langchain() if self.callbacks is not None else None
        if module is None:
            return
        run = self.run
        config = run.config
        configured = module.AsyncCallbackManager.configure(
            inheritable_callbacks=self.callbacks,
            inheritable_tags=None if run.parent_scope is not None else config.get("tags"),
            inheritable_metadata=None if run.parent_scope is not None else _config_metadata(config),
        )
        if "ls_integration" not in configured.metadata:
            configured.add_metadata({"ls_integration": "langgraph"})
        self.manager = await configured.on_chain_start(
            None,
            run.input,
            name=config.get("run_name") or getattr(run.graph, "trace_name", None) or run.graph.name,
            run_id=config.get("run_id") if run.parent_scope is None else None,
        )

    def _output(self) -> Any:
        run = self.run
        if not run.channels:
            return None
        return run.graph.read_output(run.channels, run.output_keys)

    async def finished(self) -> None:
        """The run ended well: close the graph's run with the output state."""
        if self.manager is not None:
            await self.manager.on_chain_end(self._output())

    async def failed(self, error: BaseException) -> None:
        """The run raised ``error`` (a top-level pause is an end, as in LangGraph)."""
        from flowcore.compat.langgraph._errors import GraphInterrupt

        run = self.run
        if isinstance(error, GraphInterrupt) and run.parent_scope is None:
            await self._interrupted(error)
            if self.manager is not None:
                await self.manager.on_chain_end(self._output())
            return
        if self.manager is not None:
            await asyncio.shield(self.manager.on_chain_error(error))

    # ---------------------------------------------------------------- lifecycle
    def _status(self) -> Any:
        status = self.run.status
        return status if status in _STATUSES else "pending"

    def _checkpoint_id(self) -> str:
        run = self.run
        saved = (run.saved_config or {}).get("configurable") or {}
        return str(saved.get("checkpoint_id") or run.checkpoint.get("id") or "")

    async def resumed(self) -> None:
        """The run goes on from a saved checkpoint: tell the graph handlers."""
        if self.graph_callbacks:
            event = GraphResumeEvent(
                self._run_id(), self._status(), self._checkpoint_id(), self.run.ns_path
            )
            await dispatch_lifecycle(self.graph_callbacks, "on_resume", event)

    async def _interrupted(self, pause: Any) -> None:
        if self.graph_callbacks:
            event = GraphInterruptEvent(
                self._run_id(),
                self._status(),
                self._checkpoint_id(),
                self.run.ns_path,
                tuple(getattr(pause, "interrupts", ()) or ()),
            )
            await dispatch_lifecycle(self.graph_callbacks, "on_interrupt", event)

    def _run_id(self) -> Any:
        return None if self.manager is None else self.manager.run_id

    # ---------------------------------------------------------------- node runs
    def node_config(self, task: Task, config: dict[str, Any]) -> dict[str, Any]:
        """The config ``task``'s node sees: ``config`` with the task run's callbacks."""
        entry = self.tasks.get(task.id)
        return config if entry is None else entry[1]

    def task_callbacks(self, task_id: str) -> Any:
        """The callbacks a subgraph run inside task ``task_id`` reports to (None: no tracing)."""
        entry = self.tasks.get(task_id)
        return None if entry is None else entry[1].get("callbacks")

    async def call_node(self, task: Task, step: int, call: NodeCall) -> list[tuple[str, Any]]:
        """Run ``call`` (the loop's node call) inside a chain run of ``task``."""
        if self.manager is None:
            return await call(lambda result: None)
        graph = self.run.graph
        spec = graph.nodes.get(task.name)
        parent = self.manager.get_child(f"graph:step:{step}")
        shown = getattr(graph, "trace_output", None)
        if shown is not None:
            # An entrypoint's node shows the function's return value, not its channel writes.
            inner = call

            def call(seen: Callable[[Any], None]) -> Awaitable[list[tuple[str, Any]]]:
                return inner(lambda result: seen(shown(result)))

        return await self._traced(
            task, step, parent, task.input, getattr(spec, "trace_policy", None), call
        )

    async def call_task(
        self, call: Task, step: int, owner_id: str, shown: Any, run_call: Callable[[], Awaitable[T]]
    ) -> T:
        """Run one ``@task`` call (``run_call``) inside a chain run under its caller's run."""
        parent = self.task_callbacks(owner_id)
        if parent is None:
            return await run_call()

        async def body(seen: Callable[[Any], None]) -> T:
            value = await run_call()
            seen(value)
            return value

        # LangGraph's call path: (PUSH, the caller's path, the call's number, True).
        owner_ns = str(self.tasks[owner_id][1]["metadata"].get("langgraph_checkpoint_ns", ""))
        where = {
            "langgraph_path": (call.path[0], tuple(call.path[1:-1]), call.path[-1], True),
            "langgraph_checkpoint_ns": f"{owner_ns}|{call.name}:{call.id}".lstrip("|"),
        }
        return await self._traced(call, step, parent, shown, None, body, where)

    async def _traced(
        self,
        task: Task,
        step: int,
        parent: Any,
        shown: Any,
        policy: Any,
        call: Callable[[Callable[[Any], None]], Awaitable[T]],
        where: Mapping[str, Any] | None = None,
    ) -> T:
        """Run ``call`` inside a chain run of ``task``, a child of the callbacks ``parent``.

        ``where`` replaces metadata keys of the task's config.
        """
        run = self.run
        config = run.graph.task_config(run.config, task, step, run.ns)
        config.pop("run_id", None)
        if where:
            config["metadata"] = {**config["metadata"], **where}
        # As in LangGraph, the node's config names its task's namespace (LangChain shows
        # it in the metadata of the chat models the node calls).
        config["configurable"] = {
            **config["configurable"],
            "checkpoint_ns": config["metadata"]["langgraph_checkpoint_ns"],
        }
        manager = _langchain().AsyncCallbackManager.configure(
            inheritable_callbacks=parent,
            inheritable_metadata=dict(config.get("metadata") or {}),
        )
        task_run = await self._start_task(manager, task.name, shown, policy)
        node_config = {**config, "callbacks": task_run.get_child("seq:step:1")}
        timeout = getattr(task, "timeout", None) or getattr(
            run.graph.nodes.get(task.name), "timeout", None
        )
        if timeout is not None:
            node_config = with_idle_progress(node_config, timeout)
        self.tasks[task.id] = (task_run, node_config)
        seen: list[Any] = []
        var = _child_config_var()
        token = var.set(node_config)
        try:
            # LangSmith's ``get_current_run_tree()`` in the node is the task's run.
            with langsmith_parent(node_config["callbacks"]):
                outcome = await call(seen.append)
        except BaseException as exc:
            var.reset(token)
            self.tasks.pop(task.id, None)
            await asyncio.shield(task_run.on_chain_error(exc))
            raise
        var.reset(token)
        self.tasks.pop(task.id, None)
        output = seen[0] if seen else None
        for handler in task_run.handlers:
            if _is_stream_handler(handler):
                async for _ in handler.tap_output_aiter(task_run.run_id, _one(output)):
                    pass
        await self._end_task(task_run, output, policy)
        return outcome

    async def _start_task(self, manager: Any, name: str, shown: Any, policy: Any) -> Any:
        process = None if policy is None else policy.process_inputs
        recorded = recorded_payload(shown, process)
        if recorded is shown:
            return await manager.on_chain_start(None, shown, name=name)
        real, tracers = _split(manager)
        task_run = await real.on_chain_start(None, shown, name=name)
        await tracers.on_chain_start(None, recorded, name=name, run_id=task_run.run_id)
        task_run.handlers = list(manager.handlers)
        return task_run

    async def _end_task(self, task_run: Any, output: Any, policy: Any) -> None:
        process = None if policy is None else policy.process_outputs
        recorded = recorded_payload(output, process)
        if recorded is output:
            await task_run.on_chain_end(output)
            return
        real, tracers = _split(task_run)
        await tracers.on_chain_end(recorded)
        await real.on_chain_end(output)


def _split(manager: Any) -> tuple[Any, Any]:
    """Two copies of ``manager``: one with every handler but the tracers, one with the tracers."""
    import copy

    real, tracers = copy.copy(manager), copy.copy(manager)
    tracers.handlers = [h for h in manager.handlers if _is_tracer(h)]
    real.handlers = [h for h in manager.handlers if h not in tracers.handlers]
    return real, tracers


async def observe(run: Run) -> RunObserver | None:
    """The started observer of ``run``, or None when nobody listens to its callbacks.

    A top-level run listens to its config's ``callbacks``; a subgraph's run to
    the callbacks of the task it runs in.
    """
    parent = run.parent_scope
    if parent is None:
        callbacks = run.config.get("callbacks")
        handlers = graph_handlers(callbacks)
    else:
        host = getattr(parent.host, "observer", None)
        callbacks = None if host is None else host.task_callbacks(parent.task_id)
        handlers = []
    if not callbacks and not handlers:
        if parent is not None or not langsmith_tracing_on():
            return None
        # LangSmith tracing is on (env or tracing_context): LangChain adds its tracer
        # to the callbacks of the graph's run, as it does for LangGraph's.
        callbacks = []
    observer = RunObserver(run, callbacks if callbacks is not None else None, handlers)
    await observer.start()
    return observer
