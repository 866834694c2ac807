"""``OfflineProvider``: a deterministic stand-in model, so pipelines run without an API key."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from flowcore.llm.types import LLMRequest, LLMResponse, StreamEvent, Usage

__all__ = ["OfflineProvider"]

_EXCERPT_WORDS = 8
_EXCERPT_CHARS = 80
# Values for string formats that consumers commonly parse; schema checks ignore them.
_FORMATS = {
    "date": "1970-01-01",
    "date-time": "1970-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "email": "offline@example.com",
    "uri": "https://example.com/offline",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


class OfflineProvider:
    """Answers every request from the request alone; no network, no key, no model.

    This is a stand-in for demos, smoke runs and first runs on a fresh
    machine, not a model: it does not read or reason about the prompt beyond
    quoting its first words, so its answers are placeholders with the right
    *shape*. It is what the CLI falls back to when no provider is configured.

    - With a ``response_schema`` the answer is JSON text that satisfies it:
      every declared property (and every required one) gets a value of its
      type. Strings read ``"offline answer: <first words of the last user
      message>"`` (cut to ``maxLength``, padded to ``minLength``; known
      ``format`` values get a fixed valid example); enums and ``const`` give
      their first non-null value, except a property named ``branch`` with an
      enum (a decision block's choice), which is picked by a stable hash of
      the prompt so different inputs take different branches; integers and
      numbers are 0 or the smallest allowed value; booleans are ``true``;
      arrays hold ``max(1, minItems)`` items; objects recurse; a nullable
      type or ``anyOf`` / ``oneOf`` takes its first non-null choice.
      ``pattern`` is not honoured (a regex cannot be satisfied in general).
    - Without a schema the answer is ``"offline answer to: <prompt excerpt>"``.
    - Offered tools are never called: good arguments cannot be known without
      a model, and made-up ones would run real tools with nonsense.

    The same request always gets the same answer. Token usage is estimated
    from word counts (system prompt and messages in, answer out).

    Example:
        >>> import asyncio
        >>> from flowcore.llm.types import LLMRequest, Message
        >>> ask = LLMRequest((Message("user", "Name a colour"),),
        ...                  response_schema={"type": "object",
        ...                                   "properties": {"ok": {"type": "boolean"}}})
        >>> asyncio.run(OfflineProvider().complete(ask)).text
        '{"ok": true}'
    """

    def __init__(self, name: str = "offline") -> None:
        self.name = name

    def _answer(self, request: LLMRequest) -> LLMResponse:
        prompt = _prompt(request)
        if request.response_schema is None:
            text = f"offline answer to: {_excerpt(prompt)}"
        else:
            value = _Filler(prompt).value(request.response_schema, None)
            text = json.dumps(value, ensure_ascii=False)
        words_in = len((request.system or "").split())
        words_in += sum(len(m.content.split()) for m in request.messages)
        return LLMResponse(
            text=text,
            usage=Usage(words_in, len(text.split())),
            model=request.model or self.name,
            finish_reason="stop",
        )

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The offline answer to ``request``, whole.

        Example:
            >>> # response = await OfflineProvider().complete(request)
        """
        return self._answer(request)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """The same answer as :meth:`complete`, word by word, then usage and done.

        Example:
            >>> # async for event in OfflineProvider().stream(request): ...
        """
        response = self._answer(request)
        for i, word in enumerate(response.text.split(" ")):
            yield StreamEvent(kind="text", text=word if i == 0 else f" {word}")
        yield StreamEvent(kind="usage", usage=response.usage)
        yield StreamEvent(kind="done", response=response)


def _prompt(request: LLMRequest) -> str:
    """The text the answer is derived from: the last user message, else the last message."""
    for message in reversed(request.messages):
        if message.role == "user":
            return message.content
    if request.messages:
        return request.messages[-1].content
    return request.system or ""


def _excerpt(prompt: str) -> str:
    words = prompt.split()
    if not words:
        return "(empty prompt)"
    text = " ".join(words[:_EXCERPT_WORDS])
    if len(text) > _EXCERPT_CHARS:
        text = text[:_EXCERPT_CHARS].rstrip()
        return f"{text}..."
    return f"{text}..." if len(words) > _EXCERPT_WORDS else text


class _Filler:
    """Builds the smallest readable value that fits a JSON Schema, for one prompt."""

    def __init__(self, prompt: str) -> None:
        self.text = f"offline answer: {_excerpt(prompt)}"
        # A stable hash (unlike hash(), which is salted per process).
        self.seed = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:8], "big")

    def value(self, schema: Mapping[str, Any], key: str | None) -> Any:
        schema = _merge_all_of(schema)
        if "const" in schema:
            return schema["const"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            allowed = [v for v in enum if v is not None] or enum
            if key == "branch":
                return allowed[self.seed % len(allowed)]
            return allowed[0]
        for combinator in ("anyOf", "oneOf"):
            options = schema.get(combinator)
            if isinstance(options, list) and options:
                chosen = next((o for o in options if _type_of(o) != "null"), options[0])
                rest = {k: v for k, v in schema.items() if k != combinator}
                return self.value({**rest, **chosen}, key)
        kind = _type_of(schema)
        if kind == "object":
            return self._object(schema)
        if kind == "array":
            return self._array(schema, key)
        if kind in ("integer", "number"):
            return _number(schema, integer=kind == "integer")
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return self._string(schema)

    def _object(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        props: Mapping[str, Any] = schema.get("properties") or {}
        out = {name: self.value(sub, name) for name, sub in props.items()}
        for name in schema.get("required") or ():
            if name not in out:
                out[name] = self.value({}, name)
        return out

    def _array(self, schema: Mapping[str, Any], key: str | None) -> list[Any]:
        items = schema.get("items")
        item_schema: Mapping[str, Any] = items if isinstance(items, Mapping) else {}
        count = max(1, int(schema.get("minItems", 0)))
        if "maxItems" in schema:
            count = min(count, int(schema["maxItems"]))
        return [self.value(item_schema, key) for _ in range(count)]

    def _string(self, schema: Mapping[str, Any]) -> str:
        text = _FORMATS.get(str(schema.get("format")), self.text)
        if "maxLength" in schema:
            text = text[: int(schema["maxLength"])]
        minimum = int(schema.get("minLength", 0))
        if len(text) < minimum:
            text = text + "." * (minimum - len(text))
        return text


def _type_of(schema: Mapping[str, Any]) -> str:
    declared = schema.get("type")
    if isinstance(declared, list):
        non_null = [t for t in declared if t != "null"]
        return str(non_null[0]) if non_null else "null"
    if isinstance(declared, str):
        return declared
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "string"


def _merge_all_of(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    parts = schema.get("allOf")
    if not isinstance(parts, list) or not parts:
        return schema
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in parts:
        part = _merge_all_of(part)
        props = {**(merged.get("properties") or {}), **(part.get("properties") or {})}
        required = [*(merged.get("required") or ()), *(part.get("required") or ())]
        merged.update(part)
        if props:
            merged["properties"] = props
        if required:
            merged["required"] = list(dict.fromkeys(required))
    return merged


def _number(schema: Mapping[str, Any], *, integer: bool) -> int | float:
    """0 when the bounds allow it, else the allowed value nearest to 0."""
    low: float | None = schema.get("minimum")
    high: float | None = schema.get("maximum")
    low_x: float | None = schema.get("exclusiveMinimum")
    high_x: float | None = schema.get("exclusiveMaximum")
    if integer:
        # Every bound as an inclusive integer bound.
        lows = [*_some(math.ceil, low), *_some(lambda b: math.floor(b) + 1, low_x)]
        highs = [*_some(math.floor, high), *_some(lambda b: math.ceil(b) - 1, high_x)]
        int_lo, int_hi = max(lows, default=None), min(highs, default=None)
        if int_lo is not None and int_lo > 0:
            return int_lo
        return int_hi if int_hi is not None and int_hi < 0 else 0
    # The tighter of each pair of bounds, and whether it is open.
    lo, lo_open = low, False
    if low_x is not None and (lo is None or low_x >= lo):
        lo, lo_open = low_x, True
    hi, hi_open = high, False
    if high_x is not None and (hi is None or high_x <= hi):
        hi, hi_open = high_x, True
    if lo is not None and (lo > 0 or (lo == 0 and lo_open)):
        if not lo_open:
            return lo
        # An open bound has no nearest value: step inside the interval.
        return (lo + hi) / 2 if hi is not None else lo + 1
    if hi is not None and (hi < 0 or (hi == 0 and hi_open)):
        if not hi_open:
            return hi
        return (lo + hi) / 2 if lo is not None else hi - 1
    return 0


def _some(convert: Callable[[Any], int], bound: Any) -> list[int]:
    return [] if bound is None else [convert(bound)]
