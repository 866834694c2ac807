"""Resume values: which answer each ``interrupt()`` call of a running task gets.

A paused task runs again from its start when the run resumes, so its code
calls ``interrupt()`` again in the same order. Its n-th call gets the n-th
answer given so far; the first call with no answer of its own may take an
answer the caller gave without saying which pause it is for (LangGraph's
``Command(resume=value)`` with several tasks paused); a call left without
an answer pauses the task again, under an id made from its index, so the
same pause keeps the same id across resumes.

Both kinds of graph ask through :class:`Answers`: native graphs in
:class:`flowcore.interrupts.InterruptScope`, LangGraph-shaped ones in the
compat layer's task scope. What a pause looks like to each (its error type,
its id scheme) stays with the graph kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

__all__ = ["UNANSWERED", "Answers"]


class _Unanswered:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNANSWERED"


UNANSWERED: Final[Any] = _Unanswered()
"""What :meth:`Answers.ask` gives a call that has no answer: the task pauses there."""


class Answers:
    """The answers one task's ``interrupt()`` calls receive, in call order.

    ``given`` holds the task's own answers, in order; ``unaddressed`` (shared
    by the run's tasks) holds answers meant for whichever call asks first.
    An answer taken from it becomes the task's own, so it is saved with the
    task's other answers and handed back in the same place on the next resume.

    Example:
        >>> answers = Answers(["yes"])
        >>> answers.ask()
        (0, 'yes')
        >>> answers.ask()
        (1, UNANSWERED)
    """

    __slots__ = ("asked", "given", "unaddressed")

    def __init__(self, given: Sequence[Any] = (), unaddressed: list[Any] | None = None) -> None:
        # Kept as given (not copied): most tasks never ask, so their answers are never read.
        self.given: Sequence[Any] = given
        self.unaddressed = unaddressed
        self.asked = 0

    def ask(self) -> tuple[int, Any]:
        """The index of this call and its answer, or :data:`UNANSWERED`."""
        index = self.asked
        self.asked += 1
        if index < len(self.given):
            return index, self.given[index]
        if self.unaddressed:
            answer = self.unaddressed.pop(0)
            self.given = [*self.given, answer]
            return index, answer
        return index, UNANSWERED

    def restart(self) -> None:
        """A new attempt of the task starts asking from its first call again."""
        self.asked = 0
