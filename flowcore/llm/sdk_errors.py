"""Turning the official SDKs' exceptions into flowcore's provider errors.

Both SDKs raise a status error carrying the HTTP response, a timeout error
and a connection error; the mapping is by status code and body, so it does
not depend on either SDK's class names.
"""

from __future__ import annotations

import email.utils
import math
import time
from typing import Any

from flowcore.llm.errors import ProviderError, ThrottleError

__all__ = ["map_sdk_error", "retry_after_seconds"]


def retry_after_seconds(headers: Any) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, or ``retry-after`` seconds or date.

    A value that is neither a number nor a date, or is not finite, counts as
    not said; a negative number or a date in the past means "now" (0.0).

    Example:
        >>> retry_after_seconds({"retry-after": "2"})
        2.0
        >>> retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"})
        0.25
        >>> retry_after_seconds({"retry-after": "soon"}) is None
        True
    """
    if headers is None:
        return None
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    try:
        parsed = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def _number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, number) if math.isfinite(number) else None


# Error codes and types that mean the account's quota or credit is used up.
_QUOTA_CODES = frozenset(
    {
        "insufficient_quota",  # OpenAI, HTTP 429
        "billing_hard_limit_reached",  # OpenAI
        "billing_not_active",  # OpenAI
        "billing_error",  # Anthropic, HTTP 402
        "quota_exceeded",
        "quota_exhausted",
    }
)
# Anthropic answers a prepaid account out of credit with a plain 400 that says so.
_QUOTA_MESSAGES = ("credit balance is too low", "exceeded your current quota")


def _error_fields(body: Any) -> tuple[str, str]:
    """(code or type, message) of an error body, in either vendor's shape."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            code = str(inner.get("code") or inner.get("type") or "")
            return code, str(inner.get("message") or "")
    return "", ""


def _quota_exhausted(status: int, code: str, message: str) -> bool:
    lowered = message.lower()
    return (
        status == 402
        or code in _QUOTA_CODES
        or (status == 429 and "quota" in code)
        or any(phrase in lowered for phrase in _QUOTA_MESSAGES)
    )


def map_sdk_error(exc: Exception, provider: str) -> ProviderError | None:
    """The flowcore error for an SDK exception, or None if it is not an API error.

    A used-up quota or credit balance becomes a ``ThrottleError`` of kind
    ``"quota_exhausted"`` whatever its status (429, 402, or Anthropic's 400),
    carrying the server's ``Retry-After`` if it sent one.

    Example:
        >>> map_sdk_error(ValueError("x"), "openai") is None
        True
    """
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    message = f"{provider}: {exc}"
    if name == "APITimeoutError":
        return ThrottleError(message, provider=provider, kind="timeout")
    if name == "APIConnectionError":
        return ProviderError(message, provider=provider, kind="connection")
    if not isinstance(status, int):
        return None
    response = getattr(exc, "response", None)
    wait = retry_after_seconds(getattr(response, "headers", None))
    code, said = _error_fields(getattr(exc, "body", None))
    if status not in (401, 403) and _quota_exhausted(status, code, said or str(exc)):
        when = (
            f"the server asks to retry after {wait:g} s"
            if wait is not None
            else "not retried: the server gave no Retry-After"
        )
        return ThrottleError(
            f"{message} (quota exhausted: add credit or raise the usage limit of the "
            f"{provider} account, or use another provider; {when})",
            provider=provider,
            kind="quota_exhausted",
            status=status,
            retry_after=wait,
        )
    if status == 429:
        return ThrottleError(
            message, provider=provider, kind="rate_limit", status=status, retry_after=wait
        )
    if status in (503, 529) or "overloaded" in code:
        return ThrottleError(
            message, provider=provider, kind="overloaded", status=status, retry_after=wait
        )
    if status == 408:
        return ThrottleError(message, provider=provider, kind="timeout", status=status)
    if status in (401, 403):
        return ProviderError(
            f"{message} (check the API key for {provider})",
            provider=provider,
            kind="auth",
            status=status,
        )
    if status >= 500:
        return ProviderError(message, provider=provider, kind="server", status=status)
    return ProviderError(message, provider=provider, kind="bad_request", status=status)
