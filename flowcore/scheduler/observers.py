"""Run observers: listeners a run's config hands the engine, fed every event the run emits.

An observer is how a projection of the event stream that is not the caller's
own stream (OpenTelemetry spans, see :mod:`flowcore.tracing`) sees a run. It
travels in the run's config, the way the engine passes every per-run
dependency, so every front door that takes a config (``run``, ``stream``,
pipelines, the port) carries it without a parameter of its own. Nothing here
imports a tracing library: the observer object brings its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from flowcore.errors import InvalidInputError
from flowcore.events import Event

__all__ = ["TRACING_KEY", "RunObserver", "observed", "run_observer"]

TRACING_KEY = "tracing"
"""The config key a run's tracing observer is passed under: ``config={"tracing": ...}``."""

_log = logging.getLogger("flowcore.tracing")

EmitFn = Callable[[Event], None]


@runtime_checkable
class RunObserver(Protocol):
    """Anything with ``observe(event)``; called on the event loop for each event of the run.

    Example:
        >>> class Count:
        ...     seen = 0
        ...     def observe(self, event):
        ...         self.seen += 1
        >>> isinstance(Count(), RunObserver)
        True
    """

    def observe(self, event: Event) -> None:
        """Take one event of the run (already scrubbed of the run's known secrets)."""
        ...


def run_observer(config: Mapping[str, Any]) -> RunObserver | None:
    """The observer in ``config[TRACING_KEY]``, None when there is none.

    Raises :class:`~flowcore.errors.InvalidInputError` when the key holds
    something that is not an observer, so a misspelt setup fails before the
    run starts instead of tracing nothing.

    Example:
        >>> run_observer({}) is None
        True
    """
    value = config.get(TRACING_KEY)
    if value is None:
        return None
    if not isinstance(value, RunObserver):
        raise InvalidInputError(
            f"config[{TRACING_KEY!r}] must be a run observer such as "
            f"flowcore.tracing.enable(tracer_provider), got {type(value).__name__}"
        )
    return value


def observed(emit: EmitFn | None, observer: RunObserver) -> EmitFn:
    """``emit`` (may be None) that also hands each event to ``observer`` first.

    An observer that raises is logged and skipped: tracing must never change
    how a run ends.

    Example:
        >>> class Keep:
        ...     def __init__(self): self.events = []
        ...     def observe(self, event): self.events.append(event)
        >>> keep = Keep(); out = []
        >>> observed(out.append, keep)("ev"); (keep.events, out)
        (['ev'], ['ev'])
    """
    watch = observer.observe

    def both(event: Event) -> None:
        try:
            watch(event)
        except Exception:
            _log.exception("run observer %r failed on a %s event", observer, event.type)
        if emit is not None:
            emit(event)

    return both
