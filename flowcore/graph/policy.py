"""Per-node policies as plain data, validated when they are built."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["RetryPolicy"]

RetryOn = type[BaseException] | tuple[type[BaseException], ...] | Callable[[BaseException], bool]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often, and after how long, a failing node is tried again.

    Wait before attempt ``n+1`` is ``initial_interval * backoff_factor**(n-1)``,
    capped at ``max_interval``, plus up to ``jitter`` seconds of random
    jitter. ``retry_on`` is an exception type, a tuple of types, or a predicate.

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
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts}")
        for field in ("initial_interval", "max_interval", "jitter"):
            if getattr(self, field) < 0:
                raise ValueError(f"RetryPolicy.{field} must be >= 0, got {getattr(self, field)}")
        if self.backoff_factor < 1:
            raise ValueError(f"RetryPolicy.backoff_factor must be >= 1, got {self.backoff_factor}")

    def should_retry(self, exc: BaseException) -> bool:
        """Whether ``exc`` is worth another attempt under this policy.

        Example:
            >>> RetryPolicy(retry_on=(KeyError,)).should_retry(ValueError())
            False
        """
        retry_on = self.retry_on
        if isinstance(retry_on, (type, tuple)):
            return isinstance(exc, retry_on)
        return bool(retry_on(exc))
