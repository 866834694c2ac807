"""Server-Sent Events: AiEvents as ``text/event-stream`` text, with no web framework.

Each event becomes one SSE message::

    event: <type>
    id: <seq>
    data: <the event as compact JSON>

(``data`` is split into one ``data:`` line per line, as the SSE spec
requires, should the JSON ever hold a line break.) Write the strings of
:func:`sse_stream` to any HTTP response with :data:`SSE_HEADERS`; browsers
read them with ``EventSource``, and :func:`parse_sse` reads them back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import Any, Final, TypeVar

from flowcore.port.events import AiEvent, event_from_dict, event_to_dict

__all__ = ["KEEPALIVE", "SSE_HEADERS", "parse_sse", "sse_stream", "to_sse", "with_keepalive"]

T = TypeVar("T")

SSE_HEADERS: Final[Mapping[str, str]] = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}
"""Response headers for an SSE stream (the last one stops nginx from buffering it)."""

KEEPALIVE: Final = ": keep-alive\n\n"
"""An SSE comment line: keeps idle connections open through proxies; clients ignore it."""

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _field(name: str, value: str) -> str:
    return "".join(f"{name}: {line}\n" for line in _LINE_BREAK.split(value))


def to_sse(event: AiEvent) -> str:
    """One SSE message for ``event``: ``event:``, ``id:`` and ``data:`` lines, blank line.

    Example:
        >>> from flowcore.port.events import DoneAiEvent
        >>> ev = DoneAiEvent(run_id="r1", graph_name="chat", graph_version="1",
        ...                  request_id="q", trace_id="t", seq=3, status="completed")
        >>> to_sse(ev).splitlines()[:2]
        ['event: done', 'id: 3']
    """
    data = json.dumps(event_to_dict(event), separators=(",", ":"), ensure_ascii=False)
    return f"event: {event.type}\nid: {event.seq}\n{_field('data', data)}\n"


async def _next(iterator: AsyncIterator[T]) -> T:
    return await anext(iterator)


async def with_keepalive(
    items: AsyncIterable[T], keepalive: float | None
) -> AsyncIterator[T | None]:
    """``items`` as they arrive, with a None whenever none came for ``keepalive`` seconds.

    The stream writers turn a None into an SSE comment, which keeps proxies
    from closing a quiet connection; with ``keepalive=None`` nothing is added.
    The pending read is cancelled if the consumer stops early.

    Example:
        >>> # async for item in with_keepalive(events, 15):
        >>> #     send(KEEPALIVE if item is None else to_sse(item))
    """
    iterator = aiter(items)
    if keepalive is None:
        async for item in iterator:
            yield item
        return
    pending: asyncio.Task[T] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(_next(iterator))
            done, _ = await asyncio.wait({pending}, timeout=keepalive)
            if not done:
                yield None
                continue
            finished, pending = pending, None
            try:
                item = finished.result()
            except StopAsyncIteration:
                return
            yield item
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending


async def sse_stream(
    events: AsyncIterable[AiEvent], *, keepalive: float | None = None
) -> AsyncIterator[str]:
    """The SSE text of ``events``, one message per event, as they arrive.

    With ``keepalive`` (seconds), a :data:`KEEPALIVE` comment is sent
    whenever no event came for that long.

    Example:
        >>> # async for chunk in sse_stream(handle, keepalive=15):
        >>> #     writer.write(chunk.encode()); await writer.drain()
    """
    async for event in with_keepalive(events, keepalive):
        yield KEEPALIVE if event is None else to_sse(event)


def parse_sse(text: str) -> list[AiEvent]:
    """Read SSE text (as :func:`to_sse` writes it) back into AiEvents.

    Comments and messages without data are skipped; ``data:`` lines of one
    message are joined with line breaks, as the SSE spec says.

    Example:
        >>> from flowcore.port.events import DoneAiEvent
        >>> ev = DoneAiEvent(run_id="r1", graph_name="chat", graph_version="1",
        ...                  request_id="q", trace_id="t", seq=3, status="completed")
        >>> parse_sse(to_sse(ev) + KEEPALIVE) == [ev]
        True
    """
    out: list[AiEvent] = []
    for block in re.split(r"(?:\r\n|\r|\n){2}", text):
        data: list[str] = []
        for line in _LINE_BREAK.split(block):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            if name == "data":
                data.append(value.removeprefix(" "))
        if data:
            parsed: Any = json.loads("\n".join(data))
            out.append(event_from_dict(parsed))
    return out
