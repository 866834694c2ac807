"""The LLM provider port: every model backend implements these two calls."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from flowcore.llm.types import LLMRequest, LLMResponse, StreamEvent

__all__ = ["LLMProvider"]


@runtime_checkable
class LLMProvider(Protocol):
    """A model backend: one answer, or the same answer streamed.

    Implementations raise :class:`~flowcore.llm.errors.ThrottleError` for rate
    limits, quota, overload and timeouts, and
    :class:`~flowcore.llm.errors.ProviderError` for everything else; they do
    not retry themselves (see :func:`~flowcore.llm.retry.call_with_retries`).

    Example:
        >>> from flowcore.llm.scripted import ScriptedProvider
        >>> isinstance(ScriptedProvider(["hi"]), LLMProvider)
        True
    """

    name: str

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Ask once and wait for the whole answer."""
        ...

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Ask once and receive the answer piece by piece, ending with a ``done`` event."""
        ...
