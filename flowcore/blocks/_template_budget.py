"""What one template render may spend, and the sizes it is charged for.

A render installs its :class:`Budget` in a context variable; every hook of
the bounded environment (operators, calls, lookups, loops, filters, outputs)
spends from it and raises :class:`LimitExceededError` when a limit is used
up, when time runs out, or when the caller has stopped waiting.
"""

from __future__ import annotations

import contextvars
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flowcore.blocks.templates import TemplateLimits

__all__: list[str] = []


class LimitExceededError(Exception):
    """A render ran out of one of its limits; the message says which and how to fix it."""


class Budget:
    """What one render may still spend; shared by every hook while that render runs."""

    def __init__(self, limits: TemplateLimits, deadline: float, stop: threading.Event) -> None:
        self.limits = limits
        self.deadline = deadline
        self.stop = stop
        self.steps = 0
        self.iterations = 0
        self.built = 0
        self.depth = 0

    def tick(self) -> None:
        self.steps += 1
        # The clock and the stop flag are read every few steps: a step is
        # microseconds, and this runs on every operation of the template.
        if self.steps & 15 == 0 or self.steps > self.limits.max_steps:
            self.check()

    def check(self) -> None:
        if self.steps > self.limits.max_steps:
            raise LimitExceededError(
                f"the template did more than {self.limits.max_steps} operations "
                "(TemplateLimits.max_steps); simplify it or raise the limit"
            )
        if self.stop.is_set():
            raise LimitExceededError("the render was cancelled (its block timed out)")
        if time.monotonic() > self.deadline:
            raise LimitExceededError(
                "the template ran past its time limit; simplify it, or raise the block's "
                "timeout_seconds (or TemplateLimits.max_seconds)"
            )

    def iterate(self, body_chars: int) -> None:
        self.iterations += 1
        if self.iterations > self.limits.max_iterations:
            raise LimitExceededError(
                f"the template's loops ran more than {self.limits.max_iterations} iterations "
                "in all (TemplateLimits.max_iterations); loop over less data"
            )
        self.tick()
        self.spend(body_chars)

    def fits(self, size: int, what: str) -> None:
        """Refuse, before it is built, a value larger than one render may hold."""
        if size > self.limits.max_output_chars:
            raise LimitExceededError(
                f"{what} would be about {size} characters or items long, more than a prompt "
                f"may hold (TemplateLimits.max_output_chars={self.limits.max_output_chars})"
            )

    def spend(self, size: int) -> None:
        self.built += size
        if self.built > self.limits.max_total_chars:
            raise LimitExceededError(
                f"the template built more than {self.limits.max_total_chars} characters of "
                "values in all (TemplateLimits.max_total_chars); it is growing values in a loop"
            )

    def charge(self, value: object) -> None:
        size = size_of(value)
        if size:
            self.fits(size, "a value")
            self.spend(size)


_CURRENT: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "flowcore_template_budget", default=None
)


def current_budget() -> Budget:
    budget = _CURRENT.get()
    if budget is None:  # pragma: no cover - every entry point installs one
        raise RuntimeError("a bounded template ran outside flowcore.blocks.templates")
    return budget


def install_budget(budget: Budget) -> contextvars.Token[Budget | None]:
    return _CURRENT.set(budget)


def remove_budget(token: contextvars.Token[Budget | None]) -> None:
    _CURRENT.reset(token)


def size_of(value: object) -> int:
    """A value's size in the units limits use: characters, items, or bytes of a number."""
    if isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
        return len(value)
    if isinstance(value, int):
        return value.bit_length() // 8
    return 0


def text_size(value: object, cap: int) -> int:
    """About ``len(str(value))``, counted only until it passes ``cap`` so it stays cheap.

    A list holding a million references to one long string is small in
    memory but enormous as text; this is what refuses it before ``str()``.
    """
    if isinstance(value, str | bytes):
        return len(value)
    total = 0
    stack = [value]
    while stack and total <= cap:
        item = stack.pop()
        if isinstance(item, str | bytes):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2 + 4 * len(item)
            if total <= cap:
                stack.extend(item.keys())
                stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            total += 2 + 2 * len(item)
            if total <= cap:
                stack.extend(item)
        else:
            total += len(str(item))
    return total


def text_len(value: object) -> int:
    """``text_size`` against the current render's output limit."""
    return text_size(value, current_budget().limits.max_output_chars)
