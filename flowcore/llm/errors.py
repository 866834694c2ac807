"""What can go wrong talking to a model, in one vocabulary for every vendor."""

from __future__ import annotations

from typing import Literal

from flowcore.errors import FlowcoreError

__all__ = ["ProviderError", "ScriptExhaustedError", "ThrottleError", "ThrottleKind"]

ThrottleKind = Literal["rate_limit", "quota_exhausted", "overloaded", "timeout"]

# Kinds of earlier releases, still accepted when a ThrottleError is built.
_LEGACY_KINDS = {"quota": "quota_exhausted"}


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
    """The provider refused the call for now: rate limit, used-up quota, overload or timeout.

    ``retry_after`` is the wait in seconds the provider asked for, if it said
    (``retry-after-ms`` or ``Retry-After``). ``kind`` is one of
    :data:`ThrottleKind`:

    - ``"rate_limit"``: too many requests or tokens per minute; passes soon.
    - ``"quota_exhausted"``: the account's quota, credit or billing limit is
      used up (OpenAI's ``insufficient_quota``, Anthropic's ``billing_error``
      or "credit balance is too low", HTTP 402). Waiting does not help unless
      the server says when it will: retryable only with a ``retry_after``.
    - ``"overloaded"``: the service is busy (HTTP 503 / 529).
    - ``"timeout"``: the call took too long (the SDK's timeout, HTTP 408).

    The kind ``"quota"`` of earlier releases is read as ``"quota_exhausted"``.

    Example:
        >>> ThrottleError("slow down", provider="openai", kind="rate_limit",
        ...               retry_after=2.0).retryable
        True
        >>> ThrottleError("no credit", provider="openai", kind="quota_exhausted").retryable
        False
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
        kind = _LEGACY_KINDS.get(kind, kind)  # type: ignore[assignment]
        super().__init__(message, provider=provider, kind=kind, status=status)
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Whether another try can help: always, except a used-up quota with no ``retry_after``.

        How long a wait is acceptable is the caller's choice
        (:func:`~flowcore.llm.retry.call_with_retries`' ``max_delay``).
        """
        if self.kind == "quota_exhausted":
            return self.retry_after is not None
        return True


class ScriptExhaustedError(FlowcoreError):
    """A :class:`~flowcore.llm.scripted.ScriptedProvider` was called more often than scripted.

    Example:
        >>> ScriptExhaustedError("no reply left for call 3").code
        'script-exhausted'
    """

    code = "script-exhausted"
