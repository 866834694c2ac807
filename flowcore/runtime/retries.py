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
import contextvars
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from tenacity import AsyncRetrying, RetryCallState, stop_never

__all__ = ["AttemptTimeout", "RetryRule", "attempt_with_retries", "heartbeat"]

T = TypeVar("T")


class AttemptTimeout(TimeoutError):
    """One attempt ran past its timeout (the caller turns it into its own error).

    ``kind`` says which one fired: ``"run"`` (the hard cap) or ``"idle"``
    (no :func:`heartbeat` for ``idle_timeout`` seconds).
    """

    def __init__(self, timeout: float, kind: str = "run", elapsed: float = 0.0) -> None:
        super().__init__(f"attempt exceeded its {kind} timeout of {timeout}s")
        self.timeout = timeout
        self.kind = kind
        self.elapsed = elapsed


_refresh: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "flowcore_attempt_refresh", default=None
)


def heartbeat() -> None:
    """Tell the running attempt it made progress: its idle timeout starts over.

    A no-op outside an attempt that has an idle timeout.

    Example:
        >>> heartbeat()  # outside any attempt: nothing happens
    """
    refresh = _refresh.get()
    if refresh is not None:
        refresh()


class RetryRule(Protocol):
    """Decides, after a failed attempt, whether to try again and after how long."""

    def pause_before_retry(self, error: Exception, failures: int) -> float | None:
        """Seconds to wait before attempt ``failures + 1``, or None to give up on ``error``."""
        ...


async def _attempt(
    call: Callable[[int], Awaitable[T]],
    attempt: int,
    timeout: float | None,
    idle_timeout: float | None = None,
) -> T:
    if timeout is None and idle_timeout is None:
        return await call(attempt)
    loop = asyncio.get_running_loop()
    start = loop.time()
    hard = None if timeout is None else start + timeout

    def deadline() -> float:
        # One scope serves both caps: its deadline is whichever comes first.
        if idle_timeout is None:
            assert hard is not None
            return hard
        idle = loop.time() + idle_timeout
        return idle if hard is None else min(hard, idle)

    scope = asyncio.timeout_at(deadline())

    def refresh() -> None:
        if not scope.expired():
            scope.reschedule(deadline())

    token = _refresh.set(refresh if idle_timeout is not None else None)
    try:
        async with scope:
            return await call(attempt)
    except TimeoutError:
        if scope.expired():
            elapsed = loop.time() - start
            if hard is not None and (idle_timeout is None or loop.time() >= hard):
                raise AttemptTimeout(timeout or 0.0, "run", elapsed) from None
            raise AttemptTimeout(idle_timeout or 0.0, "idle", elapsed) from None
        raise
    finally:
        _refresh.reset(token)


async def attempt_with_retries(
    call: Callable[[int], Awaitable[T]],
    rule: RetryRule | None,
    *,
    timeout: float | None = None,
    idle_timeout: float | None = None,
    passthrough: tuple[type[BaseException], ...] = (),
    gave_up: Callable[[Exception, int], BaseException] | None = None,
    sleep: Callable[[float], Awaitable[None]] | None = None,
) -> tuple[T, int]:
    """Run ``call(attempt)`` until it returns or ``rule`` gives up; return (result, attempts).

    The error of the last attempt is raised as it is (:class:`AttemptTimeout`
    for an attempt past ``timeout``), or ``gave_up(error, attempts)`` in its
    place when given; errors of the ``passthrough`` types are never retried
    and always raised as they are. ``idle_timeout`` caps the time between two
    :func:`heartbeat` calls of an attempt (and from its start to the first).
    ``sleep`` waits out the pause before a retry (default: ``asyncio.sleep``).

    Example:
        >>> import asyncio
        >>> async def once(attempt): return attempt * 10
        >>> asyncio.run(attempt_with_retries(once, None))
        (10, 1)
    """
    if rule is None:
        try:
            return await _attempt(call, 1, timeout, idle_timeout), 1
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
        retrying = AsyncRetrying(
            stop=stop_never, wait=wait, retry=retry, reraise=True, sleep=sleep or asyncio.sleep
        )
        async for attempt in retrying:
            with attempt:
                attempts = attempt.retry_state.attempt_number
                result = await _attempt(call, attempts, timeout, idle_timeout)
            outcome = attempt.retry_state.outcome
            if outcome is None or not outcome.failed:
                return result, attempts
    except Exception as exc:
        if gave_up is None or isinstance(exc, passthrough):
            raise
        raise gave_up(exc, attempts) from exc
    raise AssertionError("unreachable: tenacity stops by raising")  # pragma: no cover
