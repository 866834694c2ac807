"""The data an LLM call takes and gives, independent of any vendor SDK."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "LLMRequest",
    "LLMResponse",
    "Message",
    "StreamEvent",
    "ToolCall",
    "ToolSpec",
    "Usage",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asks to call ``name`` with ``arguments``; answer with a tool message.

    Example:
        >>> ToolCall(id="call_1", name="search", arguments={"q": "ducks"}).name
        'search'
    """

    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message. ``tool_call_id`` links a tool result to the call it answers.

    Example:
        >>> Message("user", "Hello").role
        'user'
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_call_id: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call: its name, what it does, and a JSON Schema of its arguments.

    Example:
        >>> ToolSpec("search", "Search the web", {"type": "object"}).name
        'search'
    """

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one call consumed, and its price in US dollars when the provider reports one.

    Example:
        >>> Usage(input_tokens=10, output_tokens=5).total_tokens
        15
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class LLMRequest:
    """What to ask a model. ``model=None`` means the provider's configured default.

    ``response_schema`` asks for JSON output matching that JSON Schema.

    Example:
        >>> LLMRequest(messages=(Message("user", "Hi"),), temperature=0.0).temperature
        0.0
    """

    messages: tuple[Message, ...]
    model: str | None = None
    system: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    tools: tuple[ToolSpec, ...] = ()
    response_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class LLMResponse:
    """What a model answered: text and/or tool calls, and the tokens it cost.

    Example:
        >>> LLMResponse(text="Hello").usage.total_tokens
        0
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str = ""


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One piece of a streamed answer.

    ``text`` carries a text delta; ``tool_call`` a complete tool call; ``usage``
    the token counts; the last event has ``kind="done"`` and the whole
    ``response``.

    Example:
        >>> StreamEvent(kind="text", text="Hel").text
        'Hel'
    """

    kind: Literal["text", "tool_call", "usage", "done"]
    text: str = ""
    tool_call: ToolCall | None = None
    usage: Usage | None = None
    response: LLMResponse | None = None
