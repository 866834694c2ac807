"""Per-node policies as plain data, validated when they are built."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from flowcore._shown import shown
from flowcore.errors import GraphDefinitionError
from flowcore.llm.errors import ProviderError
from flowcore.llm.retry import provider_retry_delay

__all__ = ["RetryPolicy"]

RetryOn = type[BaseException] | tuple[type[BaseException], ...] | Callable[[BaseException], bool]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often, and after how long, a failing node is tried again.

    Wait before attempt ``n+1`` is ``initial_interval * backoff_factor**(n-1)``,
    capped at ``max_interval``, plus up to ``jitter`` seconds of random
    jitter. ``retry_on`` is an exception type, a tuple of types, or a predicate.

    A flowcore :class:`~flowcore.llm.ProviderError` (raised by the node, or
    the ``__cause__`` of what it raised) has the last word: one that says it
    is not retryable (``auth``, ``bad_request``, a ``quota_exhausted``
    throttle without ``retry_after``) is never retried, one whose
    ``retry_after`` exceeds ``max_interval`` is not retried either, and
    otherwise the wait is never shorter than its ``retry_after``.

    Example:
        >>> policy = RetryPolicy(max_attempts=3, initial_interval=0.1, retry_on=OSError)
        >>> policy.should_retry(ConnectionError())
        True
    """

    max_attempts: int = 3
    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 30.0
    jitter: float = 0.0
    retry_on: RetryOn = Exception

    def __post_init__(self) -> None:
        problems: list[str] = []
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            problems.append(
                f"RetryPolicy.max_attempts must be an int, got {shown(self.max_attempts)}"
            )
        elif self.max_attempts < 1:
            problems.append(
                f"RetryPolicy.max_attempts must be >= 1, got {shown(self.max_attempts)}"
            )
        for field in ("initial_interval", "backoff_factor", "max_interval", "jitter"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int | float):
                problems.append(f"RetryPolicy.{field} must be a number, got {shown(value)}")
            elif not math.isfinite(float(value) if abs(value) < 2**64 else math.inf):
                problems.append(
                    f"RetryPolicy.{field} must be finite and below 2**64, got {shown(value)}"
                )
            elif field == "backoff_factor" and value < 1:
                problems.append(f"RetryPolicy.backoff_factor must be >= 1, got {shown(value)}")
            elif value < 0:
                problems.append(f"RetryPolicy.{field} must be >= 0, got {shown(value)}")
        retry_on = self.retry_on
        if not (
            _is_exception_type(retry_on)
            or (isinstance(retry_on, tuple) and all(_is_exception_type(t) for t in retry_on))
            or (callable(retry_on) and not isinstance(retry_on, type))
        ):
            problems.append(
                "RetryPolicy.retry_on must be an exception type, a tuple of them, or a "
                f"predicate (exception) -> bool, got {shown(retry_on)}"
            )
        if problems:
            raise GraphDefinitionError(problems)

    def should_retry(self, exc: BaseException) -> bool:
        """Whether ``exc`` is worth another attempt under this policy.

        Example:
            >>> RetryPolicy(retry_on=(KeyError,)).should_retry(ValueError())
            False
        """
        retry_on = self.retry_on
        if isinstance(retry_on, (type, tuple)):
            wanted = isinstance(exc, retry_on)
        else:
            wanted = bool(retry_on(exc))
        if not wanted:
            return False
        provider = _provider_error(exc)
        # The provider knows better than a blanket retry_on=Exception: a used-up quota
        # or a Retry-After longer than this policy waits would only burn attempts.
        return provider is None or (
            provider_retry_delay(provider, 0.0, max_delay=self.max_interval) is not None
        )

    def wait_before_retry(self, exc: BaseException, backoff: float) -> float:
        """The wait before retrying after ``exc``: ``backoff`` or a longer ``retry_after``.

        Example:
            >>> from flowcore.llm import ThrottleError
            >>> busy = ThrottleError("429", provider="openai", kind="rate_limit", retry_after=2.0)
            >>> RetryPolicy().wait_before_retry(busy, 0.5)
            2.0
            >>> RetryPolicy().wait_before_retry(ConnectionError(), 0.5)
            0.5
        """
        provider = _provider_error(exc)
        if provider is None:
            return backoff
        asked = provider_retry_delay(provider, 0.0, max_delay=self.max_interval)
        return max(backoff, asked or 0.0)


def _provider_error(exc: BaseException) -> ProviderError | None:
    # Only the explicit cause chain: an error merely raised while handling a
    # provider error (its __context__) is a different failure.
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ProviderError):
            return current
        seen.add(id(current))
        current = current.__cause__
    return None


def _is_exception_type(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseException)
