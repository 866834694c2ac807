"""What one task of a native run is, and what running it gave.

Shared by the engine (:mod:`flowcore.scheduler.engine`), its superstep pass
(:mod:`flowcore.scheduler.supersteps`) and its dataflow pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flowcore.errors import BudgetExceededError
from flowcore.graph.commands import Send
from flowcore.interrupts import Interrupt
from flowcore.runtime.usage import UsageMeter

__all__ = ["NO_ARG", "Outcome", "RunFailed", "RunPaused", "Task", "ends_run"]


def ends_run(error: BaseException | None, fail_fast: bool) -> bool:
    """Whether a task's failure stops the whole run: any under ``fail_fast``, a budget stop always.

    A refused model call (``BudgetExceededError``, as a node error's cause)
    ends the run whatever its failure policy, so the thread can be resumed
    from that node once the budget is raised.

    Example:
        >>> ends_run(ValueError("x"), fail_fast=False), ends_run(ValueError("x"), True)
        (False, True)
    """
    if error is None:
        return False
    return (
        fail_fast
        or isinstance(error, BudgetExceededError)
        or (isinstance(getattr(error, "cause", None), BudgetExceededError))
    )


@dataclass(slots=True)
class Outcome:
    """One task's run: its update, routes and Sends, or its error or pause.

    Example:
        >>> Outcome("a", 1, 0.0).attempts
        0
    """

    node: str
    level: int
    started: float
    duration: float = 0.0
    attempts: int = 0
    update: Mapping[str, Any] | None = None
    routes: tuple[str, ...] = ()
    error: BaseException | None = None
    interrupt: Interrupt | None = None
    resumes: tuple[Any, ...] = ()
    key: str = ""
    """The task's key: the node's name, or ``node#i`` for its i-th Send task."""
    sends: tuple[Send, ...] = ()
    meter: UsageMeter | None = None
    """What the task's model calls cost (None until it starts)."""


NO_ARG: Any = object()
"""A task's input when it is the node's own task: the state view, not a Send's arg."""

Task = tuple[str, str, Any]
"""One task of a superstep: (key, node, Send arg or NO_ARG)."""


class RunFailed(Exception):
    """Internal: stop the run; the errors are already recorded."""


class RunPaused(Exception):
    """Internal: stop the run as ``interrupted``; it can be resumed."""
