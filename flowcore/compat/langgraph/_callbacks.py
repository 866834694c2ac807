"""Graph lifecycle callbacks: LangGraph's ``langgraph.callbacks`` on compat runs.

A handler that subclasses :class:`GraphCallbackHandler`, passed in
``config["callbacks"]`` (alone, in a list, or in a LangChain callback
manager), hears when a run pauses (``on_interrupt``) and when a run goes on
from a paused or saved checkpoint (``on_resume``). Other handlers in the same
list are left alone. A handler that raises is logged and skipped unless it
sets ``raise_error = True``, in which case the error ends the run.

``GraphCallbackHandler`` has the interface LangChain's callback managers
expect of a handler (:class:`CallbackHandlerBase`: every LangChain event a
no-op), so it can sit in the same list or manager as LangChain's handlers
without flowcore loading LangChain.
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
    "CallbackHandlerBase",
    "GraphCallbackHandler",
    "GraphInterruptEvent",
    "GraphLifecycleStatus",
    "GraphResumeEvent",
    "dispatch_lifecycle",
    "graph_handlers",
]

_log = logging.getLogger(__name__)

#: The run's status when a lifecycle event was taken.
GraphLifecycleStatus = Literal[
    "input", "pending", "done", "interrupt_before", "interrupt_after", "out_of_steps"
]


def _ignore(*args: Any, **kwargs: Any) -> None:
    """A LangChain callback event this handler does not handle."""


class CallbackHandlerBase:
    """What LangChain's callback managers expect of a handler; every ``on_*`` event a no-op.

    Example:
        >>> CallbackHandlerBase().on_chain_start({}, {"a": 1}) is None
        True
    """

    raise_error: bool = False
    run_inline: bool = True
    ignore_llm: bool = False
    ignore_retry: bool = False
    ignore_chain: bool = False
    ignore_agent: bool = False
    ignore_retriever: bool = False
    ignore_chat_model: bool = False
    ignore_custom_event: bool = False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("on_"):
            return _ignore
        raise AttributeError(name)


@dataclass(frozen=True)
class GraphInterruptEvent:
    """A run paused: its ``interrupts``, under namespace ``checkpoint_ns`` (``()``: the top graph).

    Example:
        >>> GraphInterruptEvent(None, "pending", "c1", (), ()).checkpoint_ns
        ()
    """

    run_id: UUID | None
    status: GraphLifecycleStatus
    checkpoint_id: str
    checkpoint_ns: tuple[str, ...]
    interrupts: tuple[Interrupt, ...]


@dataclass(frozen=True)
class GraphResumeEvent:
    """A run went on from checkpoint ``checkpoint_id`` of its thread.

    Example:
        >>> GraphResumeEvent(None, "input", "c1", ()).status
        'input'
    """

    run_id: UUID | None
    status: GraphLifecycleStatus
    checkpoint_id: str
    checkpoint_ns: tuple[str, ...]


class GraphCallbackHandler(CallbackHandlerBase):
    """Subclass and override :meth:`on_interrupt` / :meth:`on_resume` (sync or async).

    Example:
        >>> class Log(GraphCallbackHandler):
        ...     def on_interrupt(self, event: GraphInterruptEvent) -> None:
        ...         print(event.interrupts)
    """

    def on_interrupt(self, event: GraphInterruptEvent) -> Any:
        """The run paused (``event.interrupts`` are its questions)."""

    def on_resume(self, event: GraphResumeEvent) -> Any:
        """The run goes on from a checkpoint of its thread."""


def graph_handlers(callbacks: Any) -> list[GraphCallbackHandler]:
    """The :class:`GraphCallbackHandler` instances in a config's ``callbacks`` value.

    Example:
        >>> handler = GraphCallbackHandler()
        >>> graph_handlers([object(), handler]) == [handler]
        True
    """
    if callbacks is None:
        return []
    if isinstance(callbacks, GraphCallbackHandler):
        return [callbacks]
    handlers = getattr(callbacks, "handlers", None)
    items: Sequence[Any]
    if isinstance(handlers, list):
        items = handlers
    elif isinstance(callbacks, Sequence) and not isinstance(callbacks, str | bytes):
        items = callbacks
    else:
        return []
    return [h for h in items if isinstance(h, GraphCallbackHandler)]


async def dispatch_lifecycle(
    handlers: Sequence[GraphCallbackHandler],
    method: Literal["on_interrupt", "on_resume"],
    event: GraphInterruptEvent | GraphResumeEvent,
) -> None:
    """Hand ``event`` to each handler's ``method``.

    A handler that raises is logged and skipped, unless it sets ``raise_error``.

    Example:
        >>> # await dispatch_lifecycle(handlers, "on_resume", event)
    """
    for handler in handlers:
        try:
            outcome = getattr(handler, method)(event)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            if getattr(handler, "raise_error", False):
                raise
            name = type(handler).__name__
            _log.warning("graph callback %s.%s raised", name, method, exc_info=True)
