"""What can go wrong talking to a model, in one vocabulary for every vendor."""

from __future__ import annotations

from typing import Literal

from flowcore.errors import FlowcoreError

__all__ = ["ProviderError", "ScriptExhaustedError", "ThrottleError", "ThrottleKind"]

ThrottleKind = Literal["rate_limit", "quota", "overloaded", "timeout"]


class ProviderError(FlowcoreError):
    """A model call failed. ``retryable`` says whether trying again can help.

    ``kind`` is e.g. ``"auth"`` or ``"bad_request"`` (never retried),
    ``"server"`` or ``"connection"`` (retried).

    Example:
        >>> ProviderError("bad key", provider="openai", kind="auth").retryable
        False
    """

    code = "provider"
    _RETRYABLE = frozenset({"server", "connection"})

    def __init__(
        self, message: str, *, provider: str, kind: str, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.kind = kind
        self.status = status

    @property
    def retryable(self) -> bool:
        """Whether the same call may succeed if tried again later."""
        return self.kind in self._RETRYABLE


class ThrottleError(ProviderError):
    """The provider asked us to slow down: rate limit, quota, overload or timeout.

    ``retry_after`` is the wait in seconds the provider asked for, if it said.

    Example:
        >>> ThrottleError("slow down", provider="openai", kind="rate_limit",
        ...               retry_after=2.0).retryable
        True
    """

    code = "throttled"

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        kind: ThrottleKind,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, kind=kind, status=status)
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Throttling passes: always worth another try (quota only after a wait)."""
        return True


class ScriptExhaustedError(FlowcoreError):
    """A :class:`~flowcore.llm.scripted.ScriptedProvider` was called more often than scripted.

    Example:
        >>> ScriptExhaustedError("no reply left for call 3").code
        'script-exhausted'
    """

    code = "script-exhausted"
