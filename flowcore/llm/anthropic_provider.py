"""``AnthropicProvider``: the messages API through the official ``anthropic`` SDK.

Imported lazily, SDK retries off (see :mod:`flowcore.llm.openai_provider`
for why). Tool results travel as ``tool_result`` blocks in a user message;
structured output is asked for in the system prompt, since the messages
API has no response-format switch. The API key is kept as a
:class:`~flowcore.secrets.Secret` and scrubbed from every error, as in
:mod:`flowcore.llm.openai_provider`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from flowcore.llm.sdk_errors import map_sdk_error
from flowcore.llm.types import LLMRequest, LLMResponse, Message, StreamEvent, ToolCall, Usage
from flowcore.secrets import (
    DEFAULT_MIN_LENGTH,
    NO_REDACTION,
    Redactor,
    Secret,
    SecretRedactor,
    scrub_error,
)

__all__ = ["AnthropicProvider"]


class AnthropicProvider:
    """An :class:`~flowcore.llm.protocol.LLMProvider` on Anthropic's messages API.

    Example:
        >>> # model = AnthropicProvider(api_key="sk-ant-...", model="claude-sonnet-4-5")
    """

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None = None,
        max_tokens: int = 1024,
        timeout: float = 60.0,
    ) -> None:
        import anthropic  # the SDK is heavy: only load it for a provider that uses it

        self.model = model
        self.max_tokens = max_tokens
        self.base_url = base_url
        self._api_key = Secret(api_key, name="anthropic api key")
        self._key_redactor = _key_redactor(api_key)
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r}, base_url={self.base_url!r}, api_key=***)"

    @property
    def api_key(self) -> Secret:
        """The API key, as a :class:`~flowcore.secrets.Secret` (give it to your redactor).

        Example:
            >>> # redactor.add(provider.api_key)
        """
        return self._api_key

    def _arguments(self, request: LLMRequest) -> dict[str, Any]:
        system = request.system or ""
        if request.response_schema is not None:
            system += (
                "\n\nAnswer with one JSON object and nothing else. It must match this JSON "
                f"Schema:\n{json.dumps(dict(request.response_schema))}"
            )
        args: dict[str, Any] = {
            "model": request.model or self.model,
            "max_tokens": request.max_tokens or self.max_tokens,
            "messages": [_message(m) for m in request.messages if m.role != "system"],
        }
        extra_system = "\n".join(m.content for m in request.messages if m.role == "system")
        system = "\n\n".join(p for p in (extra_system, system.strip()) if p)
        if system:
            args["system"] = system
        if request.temperature is not None:
            args["temperature"] = request.temperature
        if request.tools:
            args["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                for t in request.tools
            ]
        return args

    def _error(self, exc: Exception) -> Exception:
        # The SDK's error is scrubbed in place: it stays the mapped error's cause.
        scrub_error(exc, self._key_redactor)
        error = map_sdk_error(exc, self.name) or exc
        scrub_error(error, self._key_redactor)
        return error

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """One message.

        Example:
            >>> # response = await model.complete(LLMRequest((Message("user", "Hi"),)))
        """
        try:
            raw = await self._client.messages.create(**self._arguments(request))
        except Exception as exc:
            raise self._error(exc) from exc
        text = "".join(b.text for b in raw.content if b.type == "text")
        calls = tuple(
            ToolCall(b.id, b.name, dict(b.input)) for b in raw.content if b.type == "tool_use"
        )
        return LLMResponse(
            text=text,
            tool_calls=calls,
            usage=Usage(raw.usage.input_tokens, raw.usage.output_tokens),
            model=raw.model,
            finish_reason=raw.stop_reason or "",
        )

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """A streamed message: text deltas, whole tool calls, usage, done.

        Example:
            >>> # async for event in model.stream(request): print(event.text, end="")
        """
        args = self._arguments(request)
        text: list[str] = []
        tools: dict[int, dict[str, Any]] = {}
        input_tokens = output_tokens = 0
        model = args["model"]
        finish = ""
        try:
            events = await self._client.messages.create(**args, stream=True)
            async for event in events:
                kind = event.type
                if kind == "message_start":
                    model = event.message.model or model
                    input_tokens = event.message.usage.input_tokens
                    output_tokens = event.message.usage.output_tokens
                elif kind == "content_block_start" and event.content_block.type == "tool_use":
                    block = event.content_block
                    tools[event.index] = {"id": block.id, "name": block.name, "json": ""}
                elif kind == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        text.append(delta.text)
                        yield StreamEvent(kind="text", text=delta.text)
                    elif delta.type == "input_json_delta":
                        tools[event.index]["json"] += delta.partial_json
                elif kind == "message_delta":
                    finish = event.delta.stop_reason or finish
                    output_tokens = event.usage.output_tokens
        except Exception as exc:
            raise self._error(exc) from exc
        calls = tuple(
            ToolCall(t["id"], t["name"], json.loads(t["json"] or "{}"))
            for _, t in sorted(tools.items())
        )
        for call in calls:
            yield StreamEvent(kind="tool_call", tool_call=call)
        usage = Usage(input_tokens, output_tokens)
        yield StreamEvent(kind="usage", usage=usage)
        yield StreamEvent(
            kind="done", response=LLMResponse("".join(text), calls, usage, model, finish)
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()


def _key_redactor(api_key: str) -> Redactor:
    """A redactor of the key alone; a stand-in key shorter than any real one is left alone."""
    return SecretRedactor([api_key]) if len(api_key) >= DEFAULT_MIN_LENGTH else NO_REDACTION


def _message(m: Message) -> dict[str, Any]:
    if m.role == "tool":
        return {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            ],
        }
    if m.tool_calls:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
        blocks += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
            for c in m.tool_calls
        ]
        return {"role": "assistant", "content": blocks}
    return {"role": m.role, "content": m.content}
