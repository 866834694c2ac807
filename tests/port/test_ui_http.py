"""Spec: a UI message stream served over HTTP, by any server.

``ui_message_response`` gives status 200, the protocol's headers and the
body as bytes; ``head()`` is the HTTP/1.1 head a raw asyncio server writes
(it ends the response by closing, so it says ``connection: close``);
``send_asgi`` drives an ASGI ``send``. A real request over loopback gets a
stream the SDK's rules accept.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from flowcore.port import UI_MESSAGE_STREAM_HEADERS, Caller, RunRequest, ui_message_response
from flowcore.port.ui_stream import DONE_LINE

from .test_ui_stream import well_formed
from .ui_streams import executor, request


def test_the_head_carries_the_protocol_header_and_closes_the_connection() -> None:
    response = ui_message_response(_no_events())
    head = response.head().decode("latin-1")
    assert head.startswith("HTTP/1.1 200 OK\r\n")
    assert head.endswith("\r\n\r\n")
    fields = dict(line.split(": ", 1) for line in head.split("\r\n")[1:] if line)
    assert fields["x-vercel-ai-ui-message-stream"] == "v1"
    assert fields["content-type"] == "text/event-stream"
    assert fields["connection"] == "close"
    assert response.headers == UI_MESSAGE_STREAM_HEADERS  # the response itself keeps keep-alive


async def _no_events() -> Any:
    return
    yield


async def test_an_asgi_send_gets_the_start_every_chunk_and_the_end() -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async with executor() as runner:
        await ui_message_response(runner.run(request("text_run")), keepalive=None).send_asgi(send)
    start, *body, end = sent
    assert start["type"] == "http.response.start"
    assert start["status"] == 200
    assert (b"x-vercel-ai-ui-message-stream", b"v1") in start["headers"]
    assert all(m["more_body"] for m in body)
    assert end == {"type": "http.response.body", "body": b"", "more_body": False}
    text = b"".join(m["body"] for m in body).decode("utf-8")
    assert text.endswith(DONE_LINE)


async def test_a_run_served_over_loopback_is_a_well_formed_message() -> None:
    runner = executor()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        handle = runner.run(RunRequest("tool_loop", {"question": "q"}, Caller("req-http", "tr")))
        response = ui_message_response(handle)
        writer.write(response.head())
        assert response.body is not None
        async for data in response.body:
            writer.write(data)
            await writer.drain()
        writer.close()
        await writer.wait_closed()

    async with runner:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /chat/tool_loop HTTP/1.1\r\nHost: x\r\n\r\n")
            await writer.drain()
            raw = (await reader.read()).decode("utf-8")
            writer.close()
            await writer.wait_closed()
    head, _, body = raw.partition("\r\n\r\n")
    assert head.split("\r\n")[0] == "HTTP/1.1 200 OK"
    assert "x-vercel-ai-ui-message-stream: v1" in head.split("\r\n")
    assert body.endswith(DONE_LINE)
    chunks = [json.loads(b.removeprefix("data: ")) for b in body.split("\n\n")[:-2]]
    well_formed(chunks)
    assert chunks[0]["messageMetadata"]["requestId"] == "req-http"
    assert [c["toolCallId"] for c in chunks if c["type"] == "tool-output-error"] == ["call-3"]
