"""Retrying model calls: throttles wait (as long as the provider asks), bad requests never retry."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_exponential

from flowcore.llm.errors import ProviderError, ThrottleError

__all__ = ["call_with_retries"]

T = TypeVar("T")


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, ProviderError) and exc.retryable


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    attempts: int = 4,
    base_delay: float = 0.5,
    max_delay: float = 30.0,
) -> T:
    """Run ``call`` until it succeeds, retrying only retryable provider errors.

    The wait before a retry is the provider's ``Retry-After`` when it sent
    one, else exponential backoff from ``base_delay``, capped at ``max_delay``.

    Example:
        >>> # response = await call_with_retries(lambda: provider.complete(request))
    """
    backoff = wait_exponential(multiplier=base_delay, max=max_delay)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, ThrottleError) and exc.retry_after is not None:
            return min(max(exc.retry_after, 0.0), max_delay)
        return float(backoff(state))

    retrying = AsyncRetrying(
        stop=stop_after_attempt(attempts),
        wait=wait,
        retry=retry_if_exception(_retryable),
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            return await call()
    raise AssertionError("unreachable: tenacity stops by raising")  # pragma: no cover
