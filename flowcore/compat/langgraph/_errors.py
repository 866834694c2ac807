"""LangGraph's exception types, as flowcore errors that keep LangGraph's base classes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flowcore.errors import FlowcoreError

if TYPE_CHECKING:
    from flowcore.compat.langgraph._types import Command, Interrupt

__all__ = [
    "EmptyChannelError",
    "EmptyInputError",
    "GraphBubbleUp",
    "GraphDrained",
    "GraphInterrupt",
    "GraphRecursionError",
    "InvalidUpdateError",
    "NodeCancelledError",
    "NodeInterrupt",
    "NodeTimeoutError",
    "ParentCommand",
    "UnknownInterruptError",
]


class GraphRecursionError(FlowcoreError, RecursionError):
    """The run used up its ``recursion_limit`` of supersteps.

    Example:
        >>> isinstance(GraphRecursionError("limit"), RecursionError)
        True
    """

    code = "compat-recursion-limit"


class InvalidUpdateError(FlowcoreError):
    """A node's update cannot be applied (two values for a plain key, a non-dict return).

    Example:
        >>> InvalidUpdateError("At key 'x': Can receive only one value per step.").code
        'compat-invalid-update'
    """

    code = "compat-invalid-update"


class EmptyChannelError(FlowcoreError):
    """A channel was read before anything was written to it.

    Example:
        >>> EmptyChannelError().code
        'compat-empty-channel'
    """

    code = "compat-empty-channel"


class EmptyInputError(FlowcoreError):
    """The graph was invoked with no input and has nothing to resume.

    Example:
        >>> str(EmptyInputError("Received no input for __start__"))
        'Received no input for __start__'
    """

    code = "compat-empty-input"


class GraphBubbleUp(Exception):
    """Control flow that travels up through nodes and subgraphs (never a failure)."""


class GraphInterrupt(GraphBubbleUp):
    """A node paused with ``interrupt()``; ``invoke`` reports it as ``__interrupt__``.

    Example:
        >>> GraphInterrupt(()).interrupts
        ()
    """

    def __init__(self, interrupts: Sequence[Interrupt] = ()) -> None:
        # Kept as given (a list or a tuple), as LangGraph keeps it in ``args[0]``.
        super().__init__(interrupts if isinstance(interrupts, list | tuple) else tuple(interrupts))

    @property
    def interrupts(self) -> tuple[Interrupt, ...]:
        """The pauses this interrupt carries."""
        return tuple(self.args[0])


class GraphDrained(GraphBubbleUp):
    """The run stopped at a step boundary because its ``RunControl`` asked it to drain.

    Its last checkpoint is saved: invoking the thread again with ``None`` goes on.

    Example:
        >>> GraphDrained("sigterm").reason
        'sigterm'
    """

    def __init__(self, reason: str = "shutdown") -> None:
        self.reason = reason
        super().__init__(f"Graph drained: {reason}")


class NodeInterrupt(GraphInterrupt):
    """Deprecated: raised by a node to pause the run with ``value``; use ``interrupt()``.

    Example:
        >>> # raise NodeInterrupt("Approve?")  # warns: use interrupt("Approve?")
    """

    def __init__(self, value: Any, id: str | None = None) -> None:
        from flowcore.compat.langgraph._types import Interrupt
        from flowcore.compat.langgraph._warnings import LangGraphDeprecatedSinceV10, warn_deprecated

        warn_deprecated(
            LangGraphDeprecatedSinceV10,
            "NodeInterrupt is deprecated. Please use `langgraph.types.interrupt` instead.",
        )
        pause = Interrupt(value) if id is None else Interrupt(value, id)
        super().__init__([pause])


class ParentCommand(GraphBubbleUp):
    """A ``Command(graph=Command.PARENT)`` on its way to the parent graph."""

    def __init__(self, command: Command[Any]) -> None:
        super().__init__(command)

    @property
    def command(self) -> Command[Any]:
        """The command for the parent."""
        found: Command[Any] = self.args[0]
        return found


class NodeTimeoutError(FlowcoreError):
    """A node attempt ran past its ``run_timeout`` or ``idle_timeout``.

    Not a ``TimeoutError``, so LangGraph's default retry policy retries it.
    ``kind`` and ``timeout`` say which limit fired; ``run_timeout`` and
    ``idle_timeout`` are both as configured (None when not set).

    Example:
        >>> NodeTimeoutError("slow", 0.2, kind="run", run_timeout=0.1).timeout
        0.1
    """

    def __init__(
        self,
        node: str,
        elapsed: float,
        *,
        kind: str,
        idle_timeout: float | None = None,
        run_timeout: float | None = None,
    ) -> None:
        fired = idle_timeout if kind == "idle" else run_timeout if kind == "run" else None
        if fired is None:
            raise ValueError(
                f"kind={kind!r} needs its timeout: kind='idle' needs idle_timeout, "
                "kind='run' needs run_timeout"
            )
        what = "idle timeout" if kind == "idle" else "run timeout"
        super().__init__(
            f"Node '{node}' exceeded its {what} of {fired:.3f}s (elapsed: {elapsed:.3f}s)."
        )
        self.node = node
        self.elapsed = elapsed
        self.kind = kind
        self.timeout = fired
        self.idle_timeout = idle_timeout
        self.run_timeout = run_timeout


class UnknownInterruptError(Exception):
    """A strict resume that does not answer the pending interrupts (nothing was written).

    ``reason`` is ``"not_pending"`` (the ids in ``interrupt_ids`` are not
    waiting), ``"empty_map"`` or ``"ambiguous"`` (one value, several waiting);
    ``pending_ids`` are those still waiting, which can still be answered.

    Example:
        >>> UnknownInterruptError("no", reason="empty_map", pending_ids=["a"]).pending_ids
        ('a',)
    """

    def __init__(
        self,
        message: str,
        *,
        reason: str,
        interrupt_ids: Sequence[str] = (),
        pending_ids: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.interrupt_ids = tuple(interrupt_ids)
        self.pending_ids = tuple(pending_ids)


class NodeCancelledError(Exception):
    """A node's own code raised ``asyncio.CancelledError`` (the run did not cancel it).

    It fails the run as any other error of the node would; a task the run
    cancels (a sibling failed, the caller went away) is not one.

    Example:
        >>> NodeCancelledError("fetch").node
        'fetch'
    """

    def __init__(self, node: str, message: str | None = None) -> None:
        super().__init__(message or f"Node {node!r} raised asyncio.CancelledError")
        self.node = node
