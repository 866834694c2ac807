"""Pausing a run for a human: ``interrupt(value)`` and how a resume answers it.

A node calls :func:`interrupt` to ask for input. The first time, the call
does not return: the node stops, the run ends with status ``interrupted``
and the payload shows up in ``result.interrupts``. When the thread is resumed
with :class:`Resume`, the node runs again from its start, and its n-th
``interrupt()`` call returns the n-th value given so far.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from flowcore.errors import FlowcoreError

__all__ = ["Interrupt", "InterruptScope", "NodeInterrupted", "Resume", "interrupt"]


@dataclass(frozen=True, slots=True)
class Interrupt:
    """A pending question from a node: answer it by resuming with a value.

    Example:
        >>> Interrupt(id="a1b2", node="approve", value={"draft": "..."}).node
        'approve'
    """

    id: str
    node: str
    value: Any


@dataclass(frozen=True, slots=True)
class Resume:
    """Run input that resumes an interrupted thread with an answer.

    ``value`` answers the one pending interrupt; when several nodes paused in
    the same superstep, pass ``by_id`` mapping each interrupt id to its answer.

    Example:
        >>> Resume("approved").value
        'approved'
    """

    value: Any = None
    by_id: Mapping[str, Any] | None = None


class NodeInterrupted(BaseException):
    """Raised inside a node by :func:`interrupt`; the engine catches it.

    A ``BaseException`` on purpose: a node's own ``except Exception`` must not
    swallow the pause, and retry policies must not retry it.
    """

    def __init__(self, interrupt: Interrupt, resumes: tuple[Any, ...]) -> None:
        super().__init__(interrupt.id)
        self.interrupt = interrupt
        self.resumes = resumes


@dataclass(slots=True)
class InterruptScope:
    """The resume values one execution of one node may consume, in order.

    ``task`` tells apart the tasks one node runs in one superstep (its
    ``Send`` tasks, e.g. ``"map#2"``); None for the node's own task, whose
    interrupt ids stay what they were before Send existed.
    """

    node: str
    key: str
    resumes: tuple[Any, ...] = ()
    used: int = field(default=0)
    task: str | None = None

    def next_id(self) -> str:
        """A stable id for this task's next interrupt in this superstep."""
        who = self.node if self.task is None else self.task
        digest = hashlib.sha256(f"{self.key}|{who}|{self.used}".encode()).hexdigest()
        return digest[:16]


_SCOPE: ContextVar[InterruptScope | None] = ContextVar("flowcore_interrupt_scope", default=None)


def current_scope() -> ContextVar[InterruptScope | None]:
    """The context variable the engine sets around each node execution."""
    return _SCOPE


def interrupt(value: Any = None) -> Any:
    """Pause the run and surface ``value``; on resume, return the answer.

    Call it from inside a node (sync or async). Code before the call runs
    again on resume, so keep side effects after it, or make them idempotent.

    Example:
        >>> def approve(state):
        ...     answer = interrupt({"draft": state["draft"]})
        ...     return {"approved": answer == "yes"}
    """
    scope = _SCOPE.get()
    if scope is None:
        raise FlowcoreError(
            "interrupt() was called outside a running node; call it from a node's "
            "function while the graph runs"
        )
    index = scope.used
    if index < len(scope.resumes):
        scope.used += 1
        return scope.resumes[index]
    raise NodeInterrupted(Interrupt(scope.next_id(), scope.node, value), scope.resumes)
