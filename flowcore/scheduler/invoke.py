"""A native node's attempts: its :class:`~flowcore.RetryPolicy` as a runtime retry rule.

The loop itself (timeouts per attempt, waiting, giving up) and the call of
the node's function live in :mod:`flowcore.runtime`, shared with the
LangGraph planner; this module says what native policies decide and turns
a give-up into :class:`~flowcore.errors.NodeError` or
:class:`~flowcore.errors.NodeTimeoutError`.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

from flowcore.errors import NodeError, NodeTimeoutError
from flowcore.graph.policy import RetryPolicy
from flowcore.runtime import AttemptTimeout, attempt_with_retries, call_node

__all__ = ["AttemptTimeout", "NativeRetryRule", "call_user_function", "invoke_with_policy"]


async def call_user_function(func: Callable[..., Any], is_async: bool, *args: Any) -> Any:
    """Call a node or router function through the runtime; sync ones run in a worker thread.

    Example:
        >>> import asyncio
        >>> asyncio.run(call_user_function(lambda s: s + 1, False, 1))
        2
    """
    return await call_node(func, is_async, args)


class NativeRetryRule:
    """A :class:`RetryPolicy` as the runtime's retry rule: exponential backoff, provider verdicts.

    Example:
        >>> NativeRetryRule(RetryPolicy(max_attempts=2, initial_interval=1.0)).pause_before_retry(
        ...     ValueError("x"), 1)
        1.0
    """

    __slots__ = ("policy",)

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy

    def pause_before_retry(self, error: Exception, failures: int) -> float | None:
        """Seconds before the next attempt, or None when the policy gives up on ``error``."""
        policy = self.policy
        if failures >= policy.max_attempts or not policy.should_retry(error):
            return None
        backoff = policy.initial_interval * policy.backoff_factor ** (failures - 1)
        pause = max(0.0, min(backoff, policy.max_interval))
        if policy.jitter:
            # Jitter only spreads concurrent retries apart; it is not secret.
            pause += random.uniform(0, policy.jitter)
        return policy.wait_before_retry(error, pause)


def _node_error(node: str) -> Callable[[Exception, int], BaseException]:
    def gave_up(exc: Exception, attempts: int) -> BaseException:
        if isinstance(exc, AttemptTimeout):
            return NodeTimeoutError(node=node, attempts=attempts, timeout=exc.timeout)
        return NodeError(node=node, attempts=attempts, cause=exc)

    return gave_up


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
    rule = None if retry is None or retry.max_attempts == 1 else NativeRetryRule(retry)
    return await attempt_with_retries(call, rule, timeout=timeout, gave_up=_node_error(node))
