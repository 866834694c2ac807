"""``OpenAIProvider``: chat completions through the official ``openai`` SDK.

``base_url`` makes any OpenAI-compatible server work (vLLM, llama.cpp,
Ollama...). The SDK is imported when the provider is created, never when
flowcore is imported. The SDK's own retries are switched off: retrying is
:func:`~flowcore.llm.retry.call_with_retries`' job, so that a Retry-After
is honoured once and bad requests are never repeated.

The API key is kept as a :class:`~flowcore.secrets.Secret` (``api_key``):
it never shows in the provider's ``repr``, and it (with its encoded forms)
is scrubbed from every error the provider raises, the SDK's error included,
since servers echo keys back in their "invalid key" messages.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from flowcore.llm.errors import ProviderError
from flowcore.llm.sdk_errors import map_sdk_error
from flowcore.llm.types import LLMRequest, LLMResponse, StreamEvent, ToolCall, Usage
from flowcore.secrets import (
    DEFAULT_MIN_LENGTH,
    NO_REDACTION,
    Redactor,
    Secret,
    SecretRedactor,
    scrub_error,
)

__all__ = ["OpenAIProvider"]


class OpenAIProvider:
    """An :class:`~flowcore.llm.protocol.LLMProvider` on the OpenAI chat completions API.

    Example:
        >>> # model = OpenAIProvider(api_key="sk-...", model="gpt-4o-mini")
        >>> # local = OpenAIProvider(base_url="http://127.0.0.1:8000/v1", api_key="x", model="m")
    """

    name = "openai"

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        import openai  # the SDK is heavy: only load it for a provider that uses it

        self.model = model
        self.base_url = base_url
        self._api_key = Secret(api_key, name="openai api key")
        self._key_redactor = _key_redactor(api_key)
        self._client = openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )

    def __repr__(self) -> str:
        return f"OpenAIProvider(model={self.model!r}, base_url={self.base_url!r}, api_key=***)"

    @property
    def api_key(self) -> Secret:
        """The API key, as a :class:`~flowcore.secrets.Secret` (give it to your redactor).

        Example:
            >>> # redactor.add(provider.api_key)
        """
        return self._api_key

    def _arguments(self, request: LLMRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        for m in request.messages:
            item: dict[str, Any] = {"role": m.role, "content": m.content}
            if m.tool_call_id is not None:
                item["tool_call_id"] = m.tool_call_id
            if m.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
                    }
                    for c in m.tool_calls
                ]
            messages.append(item)
        args: dict[str, Any] = {"model": request.model or self.model, "messages": messages}
        if request.temperature is not None:
            args["temperature"] = request.temperature
        if request.max_tokens is not None:
            args["max_tokens"] = request.max_tokens
        if request.tools:
            args["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.parameters),
                    },
                }
                for t in request.tools
            ]
        if request.response_schema is not None:
            args["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": dict(request.response_schema)},
            }
        return args

    def _error(self, exc: Exception) -> Exception:
        # The SDK's error is scrubbed in place: it stays the mapped error's cause.
        scrub_error(exc, self._key_redactor)
        error = map_sdk_error(exc, self.name) or exc
        scrub_error(error, self._key_redactor)
        return error

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """One chat completion.

        Example:
            >>> # response = await model.complete(LLMRequest((Message("user", "Hi"),)))
        """
        try:
            raw = await self._client.chat.completions.create(**self._arguments(request))
        except Exception as exc:
            raise self._error(exc) from exc
        choice = raw.choices[0]
        calls = tuple(
            ToolCall(c.id, c.function.name, _parse_arguments(c.function.arguments, self.name))
            for c in (choice.message.tool_calls or [])
        )
        usage = raw.usage
        return LLMResponse(
            text=choice.message.content or "",
            tool_calls=calls,
            usage=Usage(usage.prompt_tokens, usage.completion_tokens) if usage else Usage(),
            model=raw.model,
            finish_reason=choice.finish_reason or "",
        )

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """A streamed chat completion: text deltas, whole tool calls, usage, done.

        Example:
            >>> # async for event in model.stream(request): print(event.text, end="")
        """
        args = self._arguments(request)
        args.update(stream=True, stream_options={"include_usage": True})
        text: list[str] = []
        partial: dict[int, dict[str, str]] = {}
        usage = Usage()
        model = args["model"]
        finish = ""
        try:
            chunks = await self._client.chat.completions.create(**args)
            async for chunk in chunks:
                model = chunk.model or model
                if chunk.usage is not None:
                    usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
                for choice in chunk.choices:
                    finish = choice.finish_reason or finish
                    delta = choice.delta
                    if delta.content:
                        text.append(delta.content)
                        yield StreamEvent(kind="text", text=delta.content)
                    for call in delta.tool_calls or []:
                        # Tool calls arrive in pieces keyed by index; join them first.
                        slot = partial.setdefault(call.index, {"id": "", "name": "", "args": ""})
                        slot["id"] = call.id or slot["id"]
                        if call.function is not None:
                            slot["name"] = call.function.name or slot["name"]
                            slot["args"] += call.function.arguments or ""
        except Exception as exc:
            raise self._error(exc) from exc
        calls = tuple(
            ToolCall(s["id"], s["name"], _parse_arguments(s["args"], self.name))
            for _, s in sorted(partial.items())
        )
        for call in calls:
            yield StreamEvent(kind="tool_call", tool_call=call)
        yield StreamEvent(kind="usage", usage=usage)
        response = LLMResponse("".join(text), calls, usage, model, finish)
        yield StreamEvent(kind="done", response=response)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()


def _key_redactor(api_key: str) -> Redactor:
    """A redactor of the key alone; a stand-in key shorter than any real one is left alone."""
    return SecretRedactor([api_key]) if len(api_key) >= DEFAULT_MIN_LENGTH else NO_REDACTION


def _parse_arguments(raw: str, provider: str) -> dict[str, Any]:
    try:
        parsed = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise ProviderError(
            f"{provider} returned tool-call arguments that are not JSON: {raw[:200]!r}",
            provider=provider,
            kind="bad_response",
        ) from exc
    if not isinstance(parsed, dict):
        raise ProviderError(
            f"{provider} returned tool-call arguments that are not an object: {raw[:200]!r}",
            provider=provider,
            kind="bad_response",
        )
    return parsed
