"""Turning the official SDKs' exceptions into flowcore's provider errors.

Both SDKs raise a status error carrying the HTTP response, a timeout error
and a connection error; the mapping is by status code and body, so it does
not depend on either SDK's class names.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

from flowcore.llm.errors import ProviderError, ThrottleError, ThrottleKind

__all__ = ["map_sdk_error", "retry_after_seconds"]


def retry_after_seconds(headers: Any) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, or ``retry-after`` seconds or date.

    Example:
        >>> retry_after_seconds({"retry-after": "2"})
        2.0
    """
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _error_code(body: Any) -> str:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return str(inner.get("code") or inner.get("type") or "")
    return ""


def map_sdk_error(exc: Exception, provider: str) -> ProviderError | None:
    """The flowcore error for an SDK exception, or None if it is not an API error.

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
    code = _error_code(getattr(exc, "body", None))
    if status == 429:
        kind: ThrottleKind = "quota" if "quota" in code else "rate_limit"
        return ThrottleError(message, provider=provider, kind=kind, status=status, retry_after=wait)
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
