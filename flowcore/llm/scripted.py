"""``ScriptedProvider``: replays declared answers, for tests and offline demos."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from flowcore.llm.errors import ScriptExhaustedError
from flowcore.llm.types import LLMRequest, LLMResponse, StreamEvent, Usage

__all__ = ["ScriptedProvider"]

Reply = LLMResponse | str | Exception


class ScriptedProvider:
    """Answers each call with the next scripted reply; fails loudly when none is left.

    A reply is an :class:`LLMResponse`, a string (the answer text, with token
    counts estimated from word counts), or an exception to raise (e.g. a
    :class:`ThrottleError`). ``requests`` records every request received.
    ``model`` is the provider's default model (None: answers name the
    provider), used when a request names none, as a real provider's is.

    Example:
        >>> import asyncio
        >>> from flowcore.llm.types import LLMRequest, Message
        >>> model = ScriptedProvider(["Paris"])
        >>> asyncio.run(model.complete(LLMRequest((Message("user", "Capital of France?"),)))).text
        'Paris'
    """

    def __init__(
        self, script: Sequence[Reply], *, name: str = "scripted", model: str | None = None
    ) -> None:
        self.name = name
        self.model = model
        self._script = list(script)
        self.requests: list[LLMRequest] = []

    @property
    def remaining(self) -> int:
        """How many scripted replies are left."""
        return len(self._script)

    def _next(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        if not self._script:
            raise ScriptExhaustedError(
                f"ScriptedProvider {self.name!r} has no reply left for call "
                f"{len(self.requests)}; add one more reply to its script"
            )
        reply = self._script.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, str):
            prompt_words = sum(len(m.content.split()) for m in request.messages)
            return LLMResponse(
                text=reply,
                usage=Usage(prompt_words, len(reply.split())),
                model=request.model or self.model or self.name,
                finish_reason="stop",
            )
        return reply

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The next scripted reply.

        Example:
            >>> # response = await ScriptedProvider(["ok"]).complete(request)
        """
        return self._next(request)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """The next scripted reply, word by word.

        Example:
            >>> # async for event in ScriptedProvider(["a b"]).stream(request): ...
        """
        response = self._next(request)
        words = response.text.split(" ")
        for i, word in enumerate(words):
            yield StreamEvent(kind="text", text=word if i == 0 else f" {word}")
        for call in response.tool_calls:
            yield StreamEvent(kind="tool_call", tool_call=call)
        yield StreamEvent(kind="usage", usage=response.usage)
        yield StreamEvent(kind="done", response=response)
