"""A UI message stream as an HTTP response, for any server: raw asyncio, ASGI, or a framework.

:func:`ui_message_response` bundles what a handler sends back for one run:
the status, the headers of the AI SDK's UI message stream protocol, and the
body as bytes. It needs no web framework; hand its parts to the server you
have:

- a raw ``asyncio`` server (like ``examples/port_app.py``): write
  :meth:`UIMessageResponse.head`, then each chunk of ``body``;
- an ASGI server: ``await response.send_asgi(send)``;
- Starlette, FastAPI and the like:
  ``StreamingResponse(response.body, headers=dict(response.headers))``.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from flowcore.port.events import AiEvent
from flowcore.port.redaction import NO_REDACTION, Redactor
from flowcore.port.ui_stream import UI_MESSAGE_STREAM_HEADERS, ui_message_stream

__all__ = ["UIMessageResponse", "ui_message_response"]

AsgiSend = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class UIMessageResponse:
    """Status, headers and body of one UI message stream response.

    ``body`` can be iterated once; it ends after the ``data: [DONE]`` line.

    Example:
        >>> response = UIMessageResponse(200, {"x-vercel-ai-ui-message-stream": "v1"}, None)
        >>> response.head().decode().splitlines()[:2]
        ['HTTP/1.1 200 OK', 'x-vercel-ai-ui-message-stream: v1']
    """

    status: int
    headers: Mapping[str, str]
    body: AsyncIterator[bytes] | None

    def head(self, *, close: bool = True) -> bytes:
        """The HTTP/1.1 status line and headers, up to the blank line, for a raw server.

        With ``close`` (the default) it adds ``Connection: close`` in place
        of the protocol's ``keep-alive``: a server that ends the response by
        closing the socket must say so.

        Example:
            >>> UIMessageResponse(200, {}, None).head()
            b'HTTP/1.1 200 OK\\r\\nconnection: close\\r\\n\\r\\n'
        """
        reason = HTTPStatus(self.status).phrase
        headers = dict(self.headers)
        if close:
            headers["connection"] = "close"
        lines = [f"HTTP/1.1 {self.status} {reason}", *(f"{k}: {v}" for k, v in headers.items())]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def send_asgi(self, send: AsgiSend) -> None:
        """Send the whole response through an ASGI ``send`` callable, chunk by chunk.

        Example:
            >>> # async def app(scope, receive, send):
            >>> #     await ui_message_response(executor.run(request)).send_asgi(send)
        """
        await send(
            {
                "type": "http.response.start",
                "status": self.status,
                "headers": [
                    (k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()
                ],
            }
        )
        if self.body is not None:
            async for chunk in self.body:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _encoded(lines: AsyncIterator[str]) -> AsyncIterator[bytes]:
    async for line in lines:
        yield line.encode("utf-8")


def ui_message_response(
    events: AsyncIterable[AiEvent],
    *,
    message_id: str | None = None,
    redactor: Redactor = NO_REDACTION,
    keepalive: float | None = 15.0,
) -> UIMessageResponse:
    """The HTTP response streaming ``events`` as an AI SDK UI message stream.

    ``keepalive`` (seconds, None for none) sends an SSE comment while the
    run is quiet, so proxies keep a paused or slow run's connection open.

    Example:
        >>> # response = ui_message_response(executor.run(request))
        >>> # writer.write(response.head())
        >>> # async for chunk in response.body: writer.write(chunk); await writer.drain()
    """
    lines = ui_message_stream(events, message_id=message_id, redactor=redactor, keepalive=keepalive)
    return UIMessageResponse(200, dict(UI_MESSAGE_STREAM_HEADERS), _encoded(lines))
