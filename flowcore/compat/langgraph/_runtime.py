"""LangGraph's ``Runtime``: what a node may ask for besides its state and config.

A node that takes a ``runtime`` parameter (or calls :func:`get_runtime`)
receives a :class:`Runtime` with the run's ``context`` (given as
``invoke(..., context=...)`` and coerced to the graph's ``context_schema``),
the graph's ``store``, its stream writer, the :class:`ExecutionInfo` of the
task it runs in and the run's :class:`RunControl`, through which a host asks
a run to stop at the next superstep boundary (``GraphDrained``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from flowcore.runtime.retries import heartbeat as attempt_heartbeat

__all__ = [
    "DEFAULT_RUNTIME",
    "ExecutionInfo",
    "RunControl",
    "Runtime",
    "ServerInfo",
    "coerce_context",
    "get_runtime",
]

ContextT = TypeVar("ContextT")


@dataclass(frozen=True, slots=True)
class ExecutionInfo:
    """Where a node runs: its checkpoint, namespace, task, thread, run and attempt.

    Example:
        >>> ExecutionInfo("c1", "", "t1").patch(node_attempt=2).node_attempt
        2
    """

    checkpoint_id: str
    checkpoint_ns: str
    task_id: str
    thread_id: str | None = None
    run_id: str | None = None
    node_attempt: int = 1
    node_first_attempt_time: float | None = None

    def patch(self, **overrides: Any) -> ExecutionInfo:
        """A copy with the given fields replaced.

        Example:
            >>> ExecutionInfo("c1", "", "t1").patch(thread_id="x").thread_id
            'x'
        """
        return replace(self, **overrides)


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What a LangGraph server says about a run (``assistant_id``, ``graph_id``, ``user``).

    Filled from the run config's ``configurable`` when it carries them.

    Example:
        >>> ServerInfo("a1", "g1").graph_id
        'g1'
    """

    assistant_id: str
    graph_id: str
    user: Any = None


class RunControl:
    """A run's control surface: :meth:`request_drain` stops it at the next step boundary.

    Safe to call from any thread: the request is one attribute write.

    Example:
        >>> control = RunControl(); control.request_drain("sigterm"); control.drain_reason
        'sigterm'
    """

    __slots__ = ("_reason",)

    def __init__(self) -> None:
        self._reason: str | None = None

    def request_drain(self, reason: str = "shutdown") -> None:
        """Ask the run to stop before its next superstep (its checkpoint is kept)."""
        self._reason = reason

    @property
    def drain_requested(self) -> bool:
        """Whether a drain was asked for."""
        return self._reason is not None

    @property
    def drain_reason(self) -> str | None:
        """The reason given to :meth:`request_drain`, or None."""
        return self._reason


def _no_writer(_: Any) -> None:
    """The stream writer of a runtime outside a run: chunks go nowhere."""


def _default_heartbeat() -> None:
    """The default heartbeat: restarts the idle timeout of the node attempt running now.

    Outside an attempt with an idle timeout it does nothing.
    """
    attempt_heartbeat()


@dataclass(frozen=True)
class Runtime(Generic[ContextT]):
    """The run-scoped things a node may use: context, store, writer, execution info.

    Example:
        >>> Runtime(context={"user": "u1"}).override(context={"user": "u2"}).context
        {'user': 'u2'}
    """

    context: ContextT = field(default=None)  # type: ignore[assignment]
    store: Any = None
    stream_writer: Callable[[Any], None] = _no_writer
    heartbeat: Callable[[], None] = _default_heartbeat
    previous: Any = None
    execution_info: ExecutionInfo | None = None
    server_info: ServerInfo | None = None
    control: RunControl | None = None

    def merge(self, other: Runtime[ContextT]) -> Runtime[ContextT]:
        """This runtime with every field ``other`` sets taken from ``other``.

        Example:
            >>> Runtime(context=1).merge(Runtime(store="s")).context
            1
        """
        return Runtime(
            context=other.context or self.context,
            store=other.store or self.store,
            stream_writer=(
                self.stream_writer if other.stream_writer is _no_writer else other.stream_writer
            ),
            heartbeat=self.heartbeat if other.heartbeat is _default_heartbeat else other.heartbeat,
            previous=self.previous if other.previous is None else other.previous,
            execution_info=other.execution_info or self.execution_info,
            server_info=other.server_info or self.server_info,
            control=other.control or self.control,
        )

    def override(self, **overrides: Any) -> Runtime[ContextT]:
        """A copy with the given fields replaced.

        Example:
            >>> Runtime().override(previous=3).previous
            3
        """
        return replace(self, **overrides)

    def patch_execution_info(self, **overrides: Any) -> Runtime[ContextT]:
        """A copy whose execution info has the given fields replaced.

        Example:
            >>> Runtime(execution_info=ExecutionInfo("c", "", "t")).patch_execution_info(
            ...     node_attempt=3).execution_info.node_attempt
            3
        """
        if self.execution_info is None:
            raise RuntimeError(
                "this runtime has no execution_info to patch: only a runtime given to a "
                "running node has one"
            )
        return replace(self, execution_info=self.execution_info.patch(**overrides))

    @property
    def drain_requested(self) -> bool:
        """Whether the run's control was asked to drain."""
        return self.control.drain_requested if self.control is not None else False

    @property
    def drain_reason(self) -> str | None:
        """Why the run was asked to drain, or None."""
        return self.control.drain_reason if self.control is not None else None


DEFAULT_RUNTIME: Runtime[Any] = Runtime()
"""The runtime of code that runs outside any graph run."""


def get_runtime(context_schema: type[ContextT] | None = None) -> Runtime[ContextT]:
    """The runtime of the node that is running (``context_schema`` only types the result).

    Raises ``RuntimeError`` outside a running node.

    Example:
        >>> # inside a node: api_key = get_runtime(Context).context.api_key
    """
    from flowcore.compat.langgraph._context import current_scope

    runtime: Runtime[ContextT] = current_scope().runtime()
    return runtime


def coerce_context(schema: Any, context: Any) -> Any:
    """``context`` as the graph's ``context_schema`` wants it.

    A mapping given for a dataclass or pydantic schema is turned into an
    instance (a missing or unknown field raises ``TypeError``, a pydantic
    validation error is raised as is); for a TypedDict or no schema the value
    is kept.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Ctx:
        ...     key: str
        >>> coerce_context(Ctx, {"key": "k"})
        Ctx(key='k')
    """
    if schema is None or context is None or not isinstance(context, Mapping):
        return context
    if isinstance(schema, type) and dataclasses.is_dataclass(schema):
        return schema(**context)
    validate = getattr(schema, "model_validate", None)
    if callable(validate) and isinstance(schema, type):
        return validate(dict(context))
    # A TypedDict (or any other schema) is a plain mapping at run time.
    return context
