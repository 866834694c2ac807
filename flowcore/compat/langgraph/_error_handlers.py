"""Node error handlers: ``add_node(..., error_handler=)`` and ``set_node_defaults(error_handler=)``.

When a node fails for good (its retry policy, if any, gave up), its error
handler runs in its place, in the same task: it gets the node's input, and a
:class:`NodeError` (the node's name and exception) in a parameter named
``error``. What the handler returns is the task's result (a state update, or a
``Command`` to route on); the failed node's own edges do not fire. A handler
that fails fails the run; handlers never handle each other's failures.

Before the handler runs, the failure is saved with the task (the
:data:`ERROR_SOURCE` write), so a run that stops while the handler runs (it
failed, the process died) runs the handler again on resume, not the node.
This is a decision on the node's call path, not a second runner: the task,
its writes and its retries are the loop's as for any node.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from flowcore.compat.langgraph._errors import GraphBubbleUp
from flowcore.compat.langgraph._node import call_with_config, describe_callable, retry_call
from flowcore.compat.langgraph._types import RetryPolicy, TimeoutPolicy

if TYPE_CHECKING:
    from flowcore.compat.langgraph._graph import NodeSpec

__all__ = [
    "DEFAULT_HANDLER_NODE",
    "ERROR_SOURCE",
    "ErrorHandler",
    "HandlerHost",
    "NodeError",
    "RestoredError",
    "failure_from_record",
    "failure_record",
    "finish_handlers",
    "handler_node_name",
    "run_handled",
]

ERROR_SOURCE = "__error_source_node__"
"""The write channel that marks a task whose node failed and went to its handler."""

DEFAULT_HANDLER_NODE = "__default_error_handler__"
"""The name of the handler ``set_node_defaults(error_handler=)`` gives every node."""


def handler_node_name(node: str) -> str:
    """The name LangGraph gives the handler of ``node`` (``__error_handler__<node>``).

    Example:
        >>> handler_node_name("fetch")
        '__error_handler__fetch'
    """
    return f"__error_handler__{node}"


@dataclass(frozen=True, slots=True)
class NodeError:
    """What an error handler is told: which node failed, and with what.

    Example:
        >>> NodeError("fetch", ValueError("bad")).node
        'fetch'
    """

    node: str
    """The name of the node that failed."""

    error: BaseException
    """The exception it raised (after a resume: a :class:`RestoredError`)."""


class RestoredError(Exception):
    """A node's exception as read back from a checkpoint: its message, and its type's name.

    Example:
        >>> RestoredError("boom", "RuntimeError")
        RuntimeError('boom')
    """

    def __init__(self, message: str, type_name: str = "Exception") -> None:
        super().__init__(message)
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"{self.type_name}({str(self)!r})"


@dataclass(frozen=True, slots=True)
class ErrorHandler:
    """A node's error handler: its function, and the retry and time limits it runs under."""

    name: str
    func: Any
    retry: RetryPolicy | Sequence[RetryPolicy] | None = None
    timeout: TimeoutPolicy | None = None


def finish_handlers(nodes: Mapping[str, NodeSpec], defaults: Mapping[str, Any]) -> None:
    """At compile: check handler names are free; handlers take the default retry and timeout.

    Raises ``ValueError`` when a node already has the name a handler would take.
    """
    default = defaults.get("error_handler")
    if default is not None and DEFAULT_HANDLER_NODE in nodes:
        raise ValueError(
            f"Auto-generated default error handler node `{DEFAULT_HANDLER_NODE}` already exists."
        )
    retry, timeout = defaults.get("retry"), defaults.get("timeout")
    if retry is None and timeout is None:
        return
    for spec in nodes.values():
        handler = spec.error_handler
        if isinstance(handler, ErrorHandler) and handler.retry is None and handler.timeout is None:
            spec.error_handler = replace(handler, retry=retry, timeout=timeout)


def failure_record(failure: NodeError) -> dict[str, str]:
    """A node's failure as saved with its task (plain data)."""
    error = failure.error
    return {"node": failure.node, "type": type(error).__name__, "message": str(error)}


def failure_from_record(record: Any) -> NodeError | None:
    """The failure :func:`failure_record` saved (None when ``record`` is not one).

    Example:
        >>> failure_from_record({"node": "a", "type": "KeyError", "message": "k"}).error
        KeyError('k')
    """
    if isinstance(record, str):  # LangGraph's form: the node's name alone
        return NodeError(record, RestoredError("", "Exception"))
    if not isinstance(record, dict) or "node" not in record:
        return None
    error = RestoredError(str(record.get("message", "")), str(record.get("type", "Exception")))
    return NodeError(str(record["node"]), error)


class HandlerHost(Protocol):
    """What :func:`run_handled` needs of the run (the loop implements it)."""

    async def record_failure(self, task: Any, failure: NodeError) -> None:
        """Save that ``task``'s node failed and its handler takes over."""
        ...


async def run_handled(
    host: HandlerHost,
    task: Any,
    scope: Any,
    handler: ErrorHandler,
    call: Callable[[], Awaitable[Any]],
    extras: Mapping[str, Any],
) -> Any:
    """The node's result from ``call()``, or its handler's when the node fails.

    ``task.handled`` holds the failure once the handler has taken over (also
    when restored from a checkpoint: then the node is not called again).
    Control flow (interrupts, commands for a parent graph) is not a failure.
    """
    failure: NodeError | None = task.handled
    if failure is None:
        try:
            return await call()
        except GraphBubbleUp:
            raise
        except Exception as exc:
            failure = NodeError(task.name, exc)
            task.handled = failure
            await host.record_failure(task, failure)
    given = {**extras, "error": failure}
    func = handler.func
    shape = describe_callable(func)

    async def attempt() -> Any:
        scope.calls = 0
        return await call_with_config(func, task.input, scope.get_config, given, shape)

    if handler.retry is None and handler.timeout is None:
        return await attempt()
    return await retry_call(attempt, handler.retry, handler.timeout, handler.name)
