"""Retrying model calls: throttles wait (as long as the provider asks), bad requests never retry.

One rule for every retry of a provider error, here and in the block
executor: a retry never comes before the server's ``Retry-After``; a wait
longer than the caller accepts (``max_delay``) means no retry at all, and a
used-up quota is retried only when the server said when to come back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_exponential

from flowcore.llm.errors import ProviderError, ThrottleError

__all__ = ["DEFAULT_MAX_DELAY", "call_with_retries", "provider_retry_delay"]

T = TypeVar("T")

DEFAULT_MAX_DELAY = 30.0
"""The longest wait, in seconds, before a retry; a longer ``Retry-After`` is not waited out."""


def provider_retry_delay(
    exc: BaseException, backoff: float, *, max_delay: float = DEFAULT_MAX_DELAY
) -> float | None:
    """How long to wait before retrying after ``exc``, or None when it must not be retried.

    None for anything but a retryable :class:`ProviderError` (so never for
    ``auth``, ``bad_request`` or a ``quota_exhausted`` without
    ``retry_after``) and for a ``retry_after`` above ``max_delay``. A
    ``retry_after`` is waited exactly (at least what the server asked);
    without one, ``backoff`` capped at ``max_delay``.

    Example:
        >>> slow = ThrottleError("429", provider="openai", kind="rate_limit", retry_after=2.0)
        >>> provider_retry_delay(slow, 0.5)
        2.0
        >>> spent = ThrottleError("429", provider="openai", kind="quota_exhausted")
        >>> provider_retry_delay(spent, 0.5) is None
        True
        >>> later = ThrottleError("429", provider="x", kind="quota_exhausted", retry_after=3600)
        >>> provider_retry_delay(later, 0.5) is None
        True
    """
    if not isinstance(exc, ProviderError) or not exc.retryable:
        return None
    if isinstance(exc, ThrottleError) and exc.retry_after is not None:
        wait = max(exc.retry_after, 0.0)
        return wait if wait <= max_delay else None
    return min(max(backoff, 0.0), max_delay)


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    attempts: int = 4,
    base_delay: float = 0.5,
    max_delay: float = DEFAULT_MAX_DELAY,
) -> T:
    """Run ``call`` until it succeeds, retrying only provider errors worth retrying.

    The wait before a retry is the provider's ``Retry-After`` when it sent
    one, else exponential backoff from ``base_delay``, capped at
    ``max_delay``. Errors :func:`provider_retry_delay` refuses are raised at
    once: ``auth`` and ``bad_request``, a ``quota_exhausted`` throttle
    without ``Retry-After``, and any ``Retry-After`` longer than
    ``max_delay``.

    Example:
        >>> # response = await call_with_retries(lambda: provider.complete(request))
    """
    backoff = wait_exponential(multiplier=base_delay, max=max_delay)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if exc is None:
            return 0.0
        return provider_retry_delay(exc, float(backoff(state)), max_delay=max_delay) or 0.0

    retrying = AsyncRetrying(
        stop=stop_after_attempt(attempts),
        wait=wait,
        retry=retry_if_exception(
            lambda exc: provider_retry_delay(exc, 0.0, max_delay=max_delay) is not None
        ),
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            return await call()
    raise AssertionError("unreachable: tenacity stops by raising")  # pragma: no cover
