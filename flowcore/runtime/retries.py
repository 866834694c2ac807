"""Attempts of one task: a timeout per attempt and a retry rule between them.

The loop is the same for every graph kind; what differs is the *rule*
(which errors are retried, how long to wait, when to give up): native
:class:`~flowcore.RetryPolicy` follows a provider's verdict on throttles
(``wait_before_retry``), the LangGraph planner follows LangGraph's
``RetryPolicy`` list (the first policy whose ``retry_on`` matches decides).
Control flow (interrupts, commands to a parent graph) passes through
unretried, and so does cancellation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from tenacity import AsyncRetrying, RetryCallState, stop_never

__all__ = ["AttemptTimeout", "RetryRule", "attempt_with_retries"]

T = TypeVar("T")


class AttemptTimeout(TimeoutError):
    """One attempt ran past its timeout (the caller turns it into its own error)."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"attempt exceeded {timeout}s")
        self.timeout = timeout


class RetryRule(Protocol):
    """Decides, after a failed attempt, whether to try again and after how long."""

    def pause_before_retry(self, error: Exception, failures: int) -> float | None:
        """Seconds to wait before attempt ``failures + 1``, or None to give up on ``error``."""
        ...


async def _attempt(call: Callable[[int], Awaitable[T]], attempt: int, timeout: float | None) -> T:
    if timeout is None:
        return await call(attempt)
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            return await call(attempt)
    except TimeoutError:
        if scope.expired():
            raise AttemptTimeout(timeout) from None
        raise


async def attempt_with_retries(
    call: Callable[[int], Awaitable[T]],
    rule: RetryRule | None,
    *,
    timeout: float | None = None,
    passthrough: tuple[type[BaseException], ...] = (),
    gave_up: Callable[[Exception, int], BaseException] | None = None,
) -> tuple[T, int]:
    """Run ``call(attempt)`` until it returns or ``rule`` gives up; return (result, attempts).

    The error of the last attempt is raised as it is (:class:`AttemptTimeout`
    for an attempt past ``timeout``), or ``gave_up(error, attempts)`` in its
    place when given; errors of the ``passthrough`` types are never retried
    and always raised as they are.

    Example:
        >>> import asyncio
        >>> async def once(attempt): return attempt * 10
        >>> asyncio.run(attempt_with_retries(once, None))
        (10, 1)
    """
    if rule is None:
        try:
            return await _attempt(call, 1, timeout), 1
        except Exception as exc:
            if gave_up is None or isinstance(exc, passthrough):
                raise
            raise gave_up(exc, 1) from exc
    pauses: dict[int, float] = {}

    def retry(state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome is not None else None
        if not isinstance(exc, Exception) or isinstance(exc, passthrough):
            return False
        pause = rule.pause_before_retry(exc, state.attempt_number)
        if pause is None:
            return False
        pauses[state.attempt_number] = pause
        return True

    def wait(state: RetryCallState) -> float:
        return pauses.pop(state.attempt_number, 0.0)

    attempts = 0
    try:
        async for attempt in AsyncRetrying(stop=stop_never, wait=wait, retry=retry, reraise=True):
            with attempt:
                attempts = attempt.retry_state.attempt_number
                result = await _attempt(call, attempts, timeout)
            outcome = attempt.retry_state.outcome
            if outcome is None or not outcome.failed:
                return result, attempts
    except Exception as exc:
        if gave_up is None or isinstance(exc, passthrough):
            raise
        raise gave_up(exc, attempts) from exc
    raise AssertionError("unreachable: tenacity stops by raising")  # pragma: no cover
