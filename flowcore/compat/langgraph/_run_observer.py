"""flowcore's run observers (``config={"tracing": ...}``) on compat runs, however they are started.

A native run hands every event to the observer its config carries (see
:mod:`flowcore.scheduler.observers`); ``flowcore.tracing`` is such an
observer. A compat run started by ``invoke``, ``ainvoke``, ``stream`` or
``astream`` has no flowcore events of its own, so when its config carries an
observer the run adds one more reader to its one record stream: an
:class:`~flowcore.compat.langgraph._events.EventProjector` whose events go to
the observer, the projection ``run_stream`` and the port already read. The
observer then sees exactly what a ``run_stream`` of the same run emits:
``run_start``, per task ``node_start`` / ``node_end`` / ``node_error`` /
``interrupt`` / ``node_cancelled`` (subgraph tasks under their namespace),
``usage`` per model call, tool calls, checkpoints and one ``done``.

``run_stream`` (and so the port) feeds the observer from its own projector
instead: it takes the observer out of the config it runs with, so a run is
never observed twice. A run whose config has no observer pays for nothing
here but one dictionary lookup.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from flowcore.compat.langgraph._errors import GraphInterrupt
from flowcore.compat.langgraph._events import EventProjector
from flowcore.compat.langgraph._records import fan_out
from flowcore.scheduler.observers import TRACING_KEY, observed, run_observer

if TYPE_CHECKING:
    from flowcore.compat.langgraph._loop import Run

__all__ = ["TRACING_KEY", "observed_run"]


async def observed_run(run: Run, execute: Callable[[], Awaitable[None]]) -> None:
    """``await execute()`` for top-level ``run``, its events handed to its config's observer.

    Raises :class:`~flowcore.errors.InvalidInputError` before the run starts
    when ``config["tracing"]`` holds something that is not an observer.

    Example:
        >>> # await observed_run(run, run._execute_observed)
    """
    observer = run_observer(run.config)
    if observer is None:
        await execute()
        return
    given = run.config.get("run_id")
    run_id = uuid.uuid4().hex if given is None else str(given)
    projector = EventProjector(run.graph, run_id, observed(None, observer), None)
    run.sink = fan_out(run.sink, projector.record)
    # A fresh set: the caller's may be shared with nobody, but is not ours to grow.
    run.wants = run.wants | EventProjector.KINDS
    projector.run_start(run.input)
    try:
        await execute()
    except GraphInterrupt:
        projector.finish("interrupted", run, ())
        raise
    except asyncio.CancelledError:
        projector.finish("cancelled", run, ())
        raise
    except Exception as exc:
        projector.finish("failed", run, (exc,))
        raise
    projector.finish("completed", run, ())
