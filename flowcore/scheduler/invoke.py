"""Calling one node: sync or async, with its timeout and retry policy.

Sync callables run in a worker thread (``asyncio.to_thread``) so they never
block the event loop. A timeout bounds each attempt; it cannot stop a sync
function's thread, only stop waiting for it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from flowcore.errors import NodeError, NodeTimeoutError
from flowcore.graph.policy import RetryPolicy

__all__ = ["AttemptTimeout", "call_user_function", "invoke_with_policy"]


class AttemptTimeout(TimeoutError):
    """One attempt of a node ran past its timeout (private to the scheduler)."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"attempt exceeded {timeout}s")
        self.timeout = timeout


async def call_user_function(func: Callable[..., Any], is_async: bool, *args: Any) -> Any:
    """Call a node or router function; sync ones run in a worker thread.

    Example:
        >>> import asyncio
        >>> asyncio.run(call_user_function(lambda s: s + 1, False, 1))
        2
    """
    if is_async:
        return await func(*args)
    result = await asyncio.to_thread(func, *args)
    if inspect.isawaitable(result):
        # A sync wrapper that hands back a coroutine: finish it on the loop.
        return await result
    return result


async def _attempt(
    call: Callable[[int], Awaitable[Any]], attempt: int, timeout: float | None
) -> Any:
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


async def invoke_with_policy(
    node: str,
    call: Callable[[int], Awaitable[Any]],
    *,
    retry: RetryPolicy | None,
    timeout: float | None,
) -> tuple[Any, int]:
    """Run ``call(attempt)`` under the node's policies; return (result, attempts).

    Raises :class:`NodeError` (or :class:`NodeTimeoutError`) once the retry
    policy gives up. Cancellation passes straight through.

    Example:
        >>> import asyncio
        >>> async def once(attempt): return attempt
        >>> asyncio.run(invoke_with_policy("n", once, retry=None, timeout=None))
        (1, 1)
    """
    if retry is None or retry.max_attempts == 1:
        try:
            return await _attempt(call, 1, timeout), 1
        except AttemptTimeout as exc:
            raise NodeTimeoutError(node=node, attempts=1, timeout=exc.timeout) from None
        except Exception as exc:
            raise NodeError(node=node, attempts=1, cause=exc) from exc

    policy = retry
    backoff = wait_exponential(
        multiplier=policy.initial_interval,
        exp_base=policy.backoff_factor,
        max=policy.max_interval,
    )
    if policy.jitter:
        backoff = backoff + wait_random(0, policy.jitter)  # type: ignore[assignment]

    def wait(state: RetryCallState) -> float:
        pause = float(backoff(state))
        exc = state.outcome.exception() if state.outcome else None
        return pause if exc is None else policy.wait_before_retry(exc, pause)

    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_attempts),
        wait=wait,
        retry=retry_if_exception(lambda e: isinstance(e, Exception) and policy.should_retry(e)),
        reraise=True,
    )
    attempts = 0
    try:
        async for attempt in retrying:
            with attempt:
                attempts = attempt.retry_state.attempt_number
                result = await _attempt(call, attempts, timeout)
            if not attempt.retry_state.outcome or not attempt.retry_state.outcome.failed:
                return result, attempts
    except AttemptTimeout as exc:
        raise NodeTimeoutError(node=node, attempts=attempts, timeout=exc.timeout) from None
    except Exception as exc:
        raise NodeError(node=node, attempts=attempts, cause=exc) from exc
    raise AssertionError("unreachable: tenacity stops by raising")  # pragma: no cover
