"""LangGraph's functional API: ``@task`` and ``@entrypoint`` on flowcore's compat runtime.

An ``@entrypoint`` compiles to a one-node graph (:class:`EntrypointGraph`):
its input goes to the ``__start__`` channel, the node calls the function,
and its return value lands in ``__end__`` (what ``invoke`` returns) and in
``__previous__`` (what the next run on the thread gets as ``previous``).
``@task`` functions called inside it (or inside any ``StateGraph`` node)
run as tasks of the runtime's pool (see ``_calls``).
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar, cast

from pydantic import TypeAdapter

from flowcore.compat.langgraph._calls import RETURN, call_task, note_task_defined
from flowcore.compat.langgraph._channels import Channel
from flowcore.compat.langgraph._context import current_scope
from flowcore.compat.langgraph._graph import StateGraph
from flowcore.compat.langgraph._node import describe_callable
from flowcore.compat.langgraph._planner import INTERRUPT
from flowcore.compat.langgraph._pregel import CompiledStateGraph
from flowcore.compat.langgraph._task_cache import aclear_task_cache, clear_task_cache
from flowcore.compat.langgraph._types import (
    END,
    START,
    Interrupt,
    RetryPolicy,
    StateSnapshot,
    TimeoutPolicy,
)
from flowcore.compat.langgraph._warnings import (
    LangGraphDeprecatedSinceV05,
    LangGraphDeprecatedSinceV10,
    warn_deprecated,
)
from flowcore.runtime import call_node

if TYPE_CHECKING:
    from flowcore.compat.langgraph._loop import Run

__all__ = ["PREVIOUS", "EntrypointGraph", "entrypoint", "task"]

PREVIOUS = "__previous__"
"""The channel that keeps what an entrypoint saved for the thread's next run."""

R = TypeVar("R")
S = TypeVar("S")

_INJECTED = ("config", "writer", "store", "runtime", "previous")


def _name_of(func: Any) -> str:
    """A task's default name: its function's (a partial's inner function's; a callable
    object's class)."""
    while isinstance(func, functools.partial):
        func = func.func
    name = getattr(func, "__name__", None)
    return name if isinstance(name, str) else type(func).__name__


def _refuse_sync_timeout(what: str, name: str) -> ValueError:
    return ValueError(
        f"timeout= needs an async {what}: {name!r} is sync, and timeouts are only supported "
        "for async nodes (a sync function cannot be stopped in-process). Make it "
        "`async def`, or drop the timeout."
    )


def _policies(policy: RetryPolicy | Sequence[RetryPolicy] | None) -> tuple[RetryPolicy, ...]:
    if policy is None:
        return ()
    if isinstance(policy, RetryPolicy):
        return (policy,)
    return tuple(policy)


class _TaskFunction:
    """A ``@task`` function: calling it starts the task and returns its future."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None,
        retry_policy: Sequence[RetryPolicy],
        cache_policy: Any,
        timeout: TimeoutPolicy | None = None,
    ) -> None:
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            raise NotImplementedError("Generators are not supported in the Functional API.")
        self.func = func
        self.name: str = name or _name_of(func)
        self.retry_policy = retry_policy
        self.cache_policy = cache_policy
        self.timeout = timeout
        self.is_async = describe_callable(func)[1]
        functools.update_wrapper(self, func)
        note_task_defined()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return call_task(self, args, kwargs)

    def clear_cache(self, cache: Any) -> None:
        """Drop this task's cached results from ``cache`` (the graph's ``cache=``)."""
        clear_task_cache(cache, self.name)

    async def aclear_cache(self, cache: Any) -> None:
        """The async form of :meth:`clear_cache`."""
        await aclear_task_cache(cache, self.name)


def task(
    __func_or_none__: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: Any = None,
    timeout: float | timedelta | TimeoutPolicy | None = None,
    **kwargs: Any,
) -> Any:
    """Make a function a task: calling it inside an entrypoint or node returns a future.

    In sync code ``future.result()`` waits for it; in async code ``await future``.
    A finished task's result is saved with the run, so a node resumed after a
    pause gets it back without running the task again. ``timeout`` (seconds, a
    ``timedelta`` or a ``TimeoutPolicy``) caps each attempt of an async task
    (``NodeTimeoutError``).

    Example:
        >>> @task
        ... def add(a: int, b: int) -> int:
        ...     return a + b
        >>> add.name
        'add'
    """
    retry = kwargs.pop("retry", None)
    if kwargs:
        raise TypeError(f"task() got unexpected arguments: {sorted(kwargs)}")
    retry_policy = _retry_policy(retry, retry_policy)

    policy = TimeoutPolicy.coerce(timeout)

    def wrap(func: Callable[..., Any]) -> _TaskFunction:
        made = _TaskFunction(
            func,
            name=name,
            retry_policy=_policies(retry_policy),
            cache_policy=cache_policy,
            timeout=policy,
        )
        if policy is not None and not made.is_async:
            raise _refuse_sync_timeout("task", made.name)
        return made

    if __func_or_none__ is not None:
        return wrap(__func_or_none__)
    return wrap


class _EntrypointNode:
    """The entrypoint's one node: call the function, split its result into return and save."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func
        names, self.is_async = describe_callable(func)
        self.wants = tuple(n for n in _INJECTED if n in names)
        self.__name__ = getattr(func, "__name__", "entrypoint")

    async def __call__(self, arg: Any, config: Any, writer: Any, store: Any) -> Any:
        given = {"config": config, "writer": writer, "store": store}
        kwargs: dict[str, Any] = {}
        for name in self.wants:
            if name == "runtime":
                kwargs[name] = current_scope().runtime()
            elif name == "previous":
                # The channels hold the state the step started from: the last run's save.
                run = cast("Run", current_scope().host)
                saved = run.channels[PREVIOUS]
                kwargs[name] = saved.get() if saved.is_available() else None
            else:
                kwargs[name] = given[name]
        result = await call_node(self.func, self.is_async, (arg,), kwargs)
        if isinstance(result, entrypoint.final):
            return {END: result.value, PREVIOUS: result.save}
        return {END: result, PREVIOUS: result}


class EntrypointGraph(CompiledStateGraph):
    """What ``@entrypoint`` makes of a function: LangGraph's run API around one node.

    ``invoke`` returns the function's return value; ``stream`` shows it as
    ``{name: value}`` (``stream_mode="updates"``, the default) along with each
    task's result as ``{task_name: result}``.

    Example:
        >>> @entrypoint()
        ... def double(n: int) -> int:
        ...     return 2 * n
        >>> double.invoke(21)
        42
    """

    #: What its runs are called in LangChain callbacks (``astream_events``, tracers):
    #: LangGraph names every entrypoint's graph run "LangGraph", its node after the function.
    trace_name = "LangGraph"

    def trace_output(self, result: Any) -> Any:
        """What the node's trace run shows as its output: the function's return value."""
        return result.get(END) if isinstance(result, dict) else result

    @property
    def context_schema(self) -> Any:
        """The ``context_schema`` the entrypoint was declared with (None without one)."""
        return self.builder.context_schema

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        checkpointer: Any,
        store: Any,
        context_schema: Any,
        retry_policy: Sequence[RetryPolicy],
        timeout: TimeoutPolicy | None = None,
        cache: Any = None,
        cache_policy: Any = None,
    ) -> None:
        name = getattr(func, "__name__", "entrypoint")
        builder: StateGraph[Any, Any, Any, Any] = StateGraph(
            _EntrypointState, context_schema=context_schema
        )
        builder.add_node(
            name,
            _EntrypointNode(func),
            retry_policy=list(retry_policy) or None,
            timeout=timeout,
            cache_policy=cache_policy,
        )
        builder.add_edge(START, name)
        builder.compiled = True
        super().__init__(
            builder,
            checkpointer=checkpointer,
            store=store,
            cache=cache,
            interrupt_before=(),
            interrupt_after=(),
            name=name,
            debug=False,
        )
        self.func = func
        self.entry = name
        # An entrypoint may define its @task functions in its own body, after its node
        # started: nodes run with a task-call pool from now on.
        note_task_defined()
        self.input_type, self.output_type = _io_types(func)
        # The node runs on the input itself, not behind a __start__ task that would
        # read it as a state update.
        self.node_order = [name]
        self.triggers = {name: [START]}
        self.static_writes = {START: [], name: []}
        self._trigger_to_nodes = {START: [name]}
        self.trigger_channels = frozenset({START})
        self._node_rank = {name: 0}
        self.stream_keys = [END]
        self.output_keys = [END]
        functools.update_wrapper(self, func, updated=())  # type: ignore[arg-type]

    def read_input(
        self,
        node: str,
        channels: Mapping[str, Channel],
        steps: tuple[int, int] | None = None,
        reads: dict[int, Any] | None = None,
    ) -> Any:
        """The entrypoint's input (its ``previous`` value is read when the function asks)."""
        start = channels[START]
        return start.get() if start.is_available() else None

    def read_output(
        self, channels: Mapping[str, Channel], keys: Sequence[str] | None = None
    ) -> Any:
        """The entrypoint's last return value (None before it returned)."""
        end = channels[END]
        return end.get() if end.is_available() else None

    def task_update(self, update: Any, keys: Sequence[str]) -> Any:
        """The return value, as LangGraph streams an entrypoint's update."""
        return None if update is None else update.get(END)

    async def aupdate_state(
        self,
        config: Mapping[str, Any],
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        """Store ``values`` as if the entrypoint had returned it (and saved it).

        Example:
            >>> # workflow.update_state(config, "edited")
        """
        if isinstance(values, entrypoint.final):
            update = {END: values.value, PREVIOUS: values.save}
        else:
            update = {END: values, PREVIOUS: values}
        return await super().aupdate_state(config, update, as_node, task_id)

    def _snapshot(self, config: Mapping[str, Any], saved: Any, *, live: bool) -> StateSnapshot:
        snapshot = super()._snapshot(config, saved, live=live)
        if saved is None or not snapshot.tasks:
            return snapshot
        # A paused @task call saved its question under its own id (see _calls): the
        # entrypoint's task shows it, until the call finished with an answer.
        known = {t.id for t in snapshot.tasks}
        writes = [(str(t), c, v) for t, c, v in saved.pending_writes or ()]
        finished = {t for t, c, _ in writes if c == RETURN}
        asked = tuple(
            i
            for t, c, v in writes
            if c == INTERRUPT and t not in known and t not in finished
            for i in self.decode_write(c, v)
            if isinstance(i, Interrupt)
        )
        if not asked:
            return snapshot
        first, *rest = snapshot.tasks
        shown = first._replace(interrupts=(*first.interrupts, *asked))
        return snapshot._replace(tasks=(shown, *rest), interrupts=(*snapshot.interrupts, *asked))

    def get_input_jsonschema(self, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The JSON Schema of the entrypoint's input (its first parameter's annotation).

        Example:
            >>> # workflow.get_input_jsonschema() -> {"type": "integer", "title": "LangGraphInput"}
        """
        return _json_schema(self.input_type, "LangGraphInput")

    def get_output_jsonschema(self, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The JSON Schema of what the entrypoint returns (``entrypoint.final``'s value type).

        Example:
            >>> # workflow.get_output_jsonschema() -> {"type": "string", "title": "LangGraphOutput"}
        """
        return _json_schema(self.output_type, "LangGraphOutput")

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        """The JSON Schema of the ``context_schema`` (None without one).

        Example:
            >>> # workflow.get_context_jsonschema()["title"] -> "Context"
        """
        schema = self.builder.context_schema
        if schema is None:
            return None
        return _json_schema(schema, getattr(schema, "__name__", "Context"))

    def __repr__(self) -> str:
        return f"<EntrypointGraph {self.entry!r}>"


def _json_schema(kind: Any, title: str) -> dict[str, Any]:
    found: dict[str, Any] = TypeAdapter(kind).json_schema()
    return {**found, "title": found.get("title", title)} if kind is not Any else {"title": title}


def _io_types(func: Callable[..., Any]) -> tuple[Any, Any]:
    """The input and output types an entrypoint function declares (``Any`` when it does not)."""
    signature = inspect.signature(func)
    try:
        hints = typing.get_type_hints(func)
    except (NameError, AttributeError):
        # Annotations naming what is not defined are read as written (or as Any).
        hints = {}
    first = next(iter(signature.parameters))
    written = signature.parameters[first].annotation
    input_type = hints.get(first, Any if written is inspect.Parameter.empty else written)
    returned = hints.get("return", signature.return_annotation)
    if returned is inspect.Signature.empty or returned is entrypoint.final:
        return input_type, Any
    if typing.get_origin(returned) is entrypoint.final:
        parts = typing.get_args(returned)
        if len(parts) != 2:
            raise TypeError(
                "Annotate both the returned and the saved value of entrypoint.final, "
                "for example `-> entrypoint.final[int, str]`."
            )
        return input_type, parts[0]
    return input_type, returned


_EntrypointState = TypedDict("_EntrypointState", {END: Any, PREVIOUS: Any})  # type: ignore[misc]


class entrypoint:
    """Turn a function into a runnable workflow (LangGraph's ``@entrypoint``).

    The function takes one input; it may also ask for ``previous`` (what the
    last run on the thread returned or saved), ``config``, ``writer``,
    ``store`` and ``runtime`` by name. Return ``entrypoint.final(value=,
    save=)`` to return one value and save another for the next run.

    Example:
        >>> @entrypoint()
        ... def greet(name: str) -> str:
        ...     return f"hi {name}"
        >>> greet.invoke("ann")
        'hi ann'
    """

    @dataclass
    class final(Generic[R, S]):
        """Return ``value`` from the run but save ``save`` as the next run's ``previous``.

        Example:
            >>> entrypoint.final(value=1, save=2).save
            2
        """

        value: R
        save: S

    def __init__(
        self,
        checkpointer: Any = None,
        store: Any = None,
        cache: Any = None,
        context_schema: Any = None,
        cache_policy: Any = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
        **kwargs: Any,
    ) -> None:
        config_schema = kwargs.pop("config_schema", None)
        retry = kwargs.pop("retry", None)
        if kwargs:
            raise TypeError(f"entrypoint() got unexpected arguments: {sorted(kwargs)}")
        if config_schema is not None:
            warn_deprecated(
                LangGraphDeprecatedSinceV10,
                "`config_schema` is deprecated and will be removed. "
                "Please use `context_schema` instead.",
            )
            context_schema = context_schema or config_schema
        retry_policy = _retry_policy(retry, retry_policy)
        self.checkpointer = checkpointer
        self.store = store
        self.cache = cache
        self.context_schema = context_schema
        self.cache_policy = cache_policy
        self.retry_policy = _policies(retry_policy)
        # Checked here, so a bad value fails where the decorator is written.
        self.timeout = TimeoutPolicy.coerce(timeout)

    def __call__(self, func: Callable[..., Any]) -> EntrypointGraph:
        """Compile ``func`` into an :class:`EntrypointGraph`."""
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            raise NotImplementedError("Generators are not supported in the Functional API.")
        if not inspect.signature(func).parameters:
            raise ValueError("Entrypoint function must have at least one parameter")
        if self.timeout is not None and not describe_callable(func)[1]:
            raise _refuse_sync_timeout("entrypoint", getattr(func, "__name__", "entrypoint"))
        return EntrypointGraph(
            func,
            checkpointer=self.checkpointer,
            store=self.store,
            context_schema=self.context_schema,
            retry_policy=self.retry_policy,
            timeout=self.timeout,
            cache=self.cache,
            cache_policy=self.cache_policy,
        )


def _retry_policy(retry: Any, retry_policy: Any) -> Any:
    """``retry_policy``, or the deprecated ``retry=`` given in its place (with a warning)."""
    if retry is None:
        return retry_policy
    warn_deprecated(
        LangGraphDeprecatedSinceV05,
        "`retry` is deprecated and will be removed. Please use `retry_policy` instead.",
        stacklevel=3,
    )
    return retry_policy or retry
