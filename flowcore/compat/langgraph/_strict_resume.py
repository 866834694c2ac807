"""Strict resume: a ``Command(resume=...)`` that answers no pending interrupt is refused.

LangGraph turns it on with the configurable key :data:`STRICT_RESUME_KEY`
(``config["configurable"]["__pregel_strict_resume"] = True``). Then, before
anything of the resume is written, :func:`check_resume` raises
:class:`UnknownInterruptError` when the resume names an interrupt that is not
pending (already answered, or never asked), is an empty map, or is a single
value while several interrupts wait. A single value with nothing pending is
accepted: it resumes a graph paused at a breakpoint.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from flowcore.compat.langgraph._errors import UnknownInterruptError

__all__ = ["STRICT_RESUME_KEY", "check_resume", "strict_resume_on"]

STRICT_RESUME_KEY = "__pregel_strict_resume"
"""The configurable key that turns strict resume on (LangGraph's name for it)."""

AMBIGUOUS = (
    "When there are multiple pending interrupts, you must specify the interrupt id when resuming."
)
"""Why a single resume value is refused while several interrupts wait."""


def strict_resume_on(configurable: Mapping[str, Any]) -> bool:
    """Whether the run's configurable asks for strict resume.

    Example:
        >>> strict_resume_on({STRICT_RESUME_KEY: True}), strict_resume_on({})
        (True, False)
    """
    return bool(configurable.get(STRICT_RESUME_KEY, False))


def check_resume(resume: Any, by_id: bool, pending: Collection[str], *, strict: bool) -> None:
    """Refuse a resume that does not answer the pending interrupts.

    ``by_id``: ``resume`` maps interrupt ids to answers. Without ``strict``
    only a single value while several interrupts wait is refused (a
    ``RuntimeError``, as LangGraph does).

    Example:
        >>> try:
        ...     check_resume({"a" * 32: 1}, True, ["b" * 32], strict=True)
        ... except UnknownInterruptError as refused:
        ...     print(refused.reason, refused.pending_ids == ("b" * 32,))
        not_pending True
    """
    waiting = sorted(set(pending))
    if by_id:
        if not strict:
            return
        if not resume:
            raise UnknownInterruptError(
                "The resume map names no interrupt", reason="empty_map", pending_ids=waiting
            )
        unknown = sorted(set(resume) - set(waiting))
        if unknown:
            raise UnknownInterruptError(
                f"Unknown or already-consumed interrupt: {unknown[0]}",
                reason="not_pending",
                interrupt_ids=unknown,
                pending_ids=waiting,
            )
        return
    if len(waiting) > 1:
        if strict:
            raise UnknownInterruptError(AMBIGUOUS, reason="ambiguous", pending_ids=waiting)
        raise RuntimeError(AMBIGUOUS)
