"""Graph lifecycle callbacks (``langgraph.callbacks``): hear when a run pauses and resumes.

A :class:`GraphCallbackHandler` given in ``config["callbacks"]`` (a list of
handlers, one handler, or a LangChain callback manager holding them) is told
:meth:`~GraphCallbackHandler.on_interrupt` when the run pauses (questions or a
breakpoint) and :meth:`~GraphCallbackHandler.on_resume` when it goes on from a
saved checkpoint. Only the graph the caller runs reports (not its subgraphs),
and other callback handlers in the list are left alone. A handler that fails
is logged and skipped, unless it sets ``raise_error = True``: then the run
fails with its error. A handler's method may be a coroutine function.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from flowcore.compat.langgraph._types import Interrupt

__all__ = [
    "GraphCallbackHandler",
    "GraphInterruptEvent",
    "GraphLifecycleEvent",
    "GraphResumeEvent",
    "graph_handlers",
    "notify",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GraphInterruptEvent:
    """The run paused: with ``interrupts`` (none for a breakpoint) at ``checkpoint_id``."""

    run_id: UUID | None
    status: str
    checkpoint_id: str
    checkpoint_ns: tuple[str, ...]
    interrupts: tuple[Interrupt, ...]


@dataclass(frozen=True)
class GraphResumeEvent:
    """The run goes on from the saved checkpoint ``checkpoint_id``."""

    run_id: UUID | None
    status: str
    checkpoint_id: str
    checkpoint_ns: tuple[str, ...]


GraphLifecycleEvent = GraphInterruptEvent | GraphResumeEvent
"""Either lifecycle event."""


class GraphCallbackHandler:
    """Base class of handlers that hear a graph run pause and resume; override what you need.

    Example:
        >>> class Log(GraphCallbackHandler):
        ...     def on_interrupt(self, event): print(event.interrupts)
    """

    raise_error: bool = False
    """True: a failure of this handler fails the run (else it is logged and skipped)."""

    def on_interrupt(self, event: GraphInterruptEvent) -> Any:
        """The run paused."""

    def on_resume(self, event: GraphResumeEvent) -> Any:
        """The run goes on from a saved checkpoint."""


def graph_handlers(callbacks: Any) -> list[GraphCallbackHandler]:
    """The graph lifecycle handlers among ``config["callbacks"]``.

    Example:
        >>> handler = GraphCallbackHandler()
        >>> graph_handlers([object(), handler]) == [handler]
        True
    """
    if callbacks is None:
        return []
    if isinstance(callbacks, GraphCallbackHandler):
        return [callbacks]
    held = getattr(callbacks, "handlers", None)  # a LangChain callback manager
    if isinstance(held, list):
        callbacks = held
    if isinstance(callbacks, str | bytes) or not isinstance(callbacks, Sequence):
        return []
    return [h for h in callbacks if isinstance(h, GraphCallbackHandler)]


async def notify(
    handlers: Sequence[GraphCallbackHandler],
    method: Literal["on_interrupt", "on_resume"],
    event: GraphLifecycleEvent,
) -> None:
    """Call ``method`` of each handler with ``event`` (awaited when it is a coroutine)."""
    for handler in handlers:
        try:
            result = getattr(handler, method)(event)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            if getattr(handler, "raise_error", False):
                raise
            logger.warning("Error in %s.%s callback: %r", type(handler).__name__, method, exc)
