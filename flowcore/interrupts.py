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
from dataclasses import dataclass
from typing import Any

from flowcore.errors import FlowcoreError
from flowcore.runtime.answers import UNANSWERED, Answers

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


class InterruptScope(Answers):
    """The resume values one execution of one node may consume, in order.

    ``task`` tells apart the tasks one node runs in one superstep (its
    ``Send`` tasks, e.g. ``"map#2"``); None for the node's own task, whose
    interrupt ids stay what they were before Send existed. Which answer each
    ``interrupt()`` call gets is the runtime's rule
    (:class:`flowcore.runtime.answers.Answers`).

    Example:
        >>> scope = InterruptScope("approve", "ckpt-1", ("yes",))
        >>> scope.ask()
        (0, 'yes')
    """

    __slots__ = ("key", "node", "task")

    def __init__(
        self, node: str, key: str, resumes: tuple[Any, ...] = (), task: str | None = None
    ) -> None:
        # Answers' fields set here, not through super().__init__: this runs once per node run.
        self.given = resumes
        self.unaddressed = None
        self.asked = 0
        self.node = node
        self.key = key
        self.task = task

    @property
    def resumes(self) -> tuple[Any, ...]:
        """The answers given to this task so far, in order."""
        return tuple(self.given)

    @property
    def used(self) -> int:
        """How many ``interrupt()`` calls this attempt has made (0 starts the node over)."""
        return self.asked

    @used.setter
    def used(self, value: int) -> None:
        self.asked = value

    def next_id(self, index: int | None = None) -> str:
        """A stable id for this task's ``index``-th interrupt (default: its next) in this step."""
        who = self.node if self.task is None else self.task
        at = self.asked if index is None else index
        digest = hashlib.sha256(f"{self.key}|{who}|{at}".encode()).hexdigest()
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
    index, answer = scope.ask()
    if answer is not UNANSWERED:
        return answer
    raise NodeInterrupted(Interrupt(scope.next_id(index), scope.node, value), scope.resumes)
