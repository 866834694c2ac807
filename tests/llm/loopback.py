"""A loopback HTTP server that speaks the OpenAI and Anthropic wire formats.

Tests point the real SDKs at it (``base_url``), so requests and responses
travel over real HTTP: JSON bodies, status codes, Retry-After headers and
server-sent events. Each server replays a queue of scripted replies and
records every request it received.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """One scripted HTTP response: a JSON body, or a list of SSE events."""

    status: int = 200
    body: Any = None
    events: list[tuple[str | None, Any]] | None = None  # (event name, data); data "[DONE]" raw
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float = field(default_factory=time.monotonic)  # when the request was read


class LoopbackServer:
    """``async with LoopbackServer() as server``: ``server.url``, ``server.replies``."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Received] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> LoopbackServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = (await reader.readline()).decode()
            if not request_line:
                return
            method, path, _ = request_line.split(" ", 2)
            headers: dict[str, str] = {}
            while (line := (await reader.readline()).decode()) not in ("\r\n", "\n", ""):
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            raw = await reader.readexactly(length) if length else b""
            body = json.loads(raw) if raw else None
            self.requests.append(Received(method, path, headers, body))
            reply = self.replies.pop(0) if self.replies else Reply(500, {"error": "no reply"})
            await self._respond(writer, reply)
        finally:
            writer.close()
            await writer.wait_closed()

    async def _respond(self, writer: asyncio.StreamWriter, reply: Reply) -> None:
        reason = {
            200: "OK",
            400: "Bad Request",
            401: "Unauthorized",
            402: "Payment Required",
            429: "Too Many Requests",
            500: "Internal Server Error",
            529: "Overloaded",
        }.get(reply.status, "Status")
        head = [f"HTTP/1.1 {reply.status} {reason}", "Connection: close"]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        if reply.events is None:
            payload = json.dumps(reply.body).encode()
            head += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
            await writer.drain()
            return
        head.append("Content-Type: text/event-stream")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        for event, data in reply.events:
            text = data if isinstance(data, str) else json.dumps(data)
            chunk = (f"event: {event}\n" if event else "") + f"data: {text}\n\n"
            writer.write(chunk.encode())
            await writer.drain()


# ------------------------------------------------------------ OpenAI shapes
def openai_completion(
    text: str | None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: tuple[int, int] = (9, 3),
    model: str = "gpt-test",
) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": sum(usage),
            },
        }
    )


def openai_stream(
    pieces: list[str],
    *,
    tool_args: list[str] | None = None,
    usage: tuple[int, int] = (9, 3),
    model: str = "gpt-test",
) -> Reply:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
    events += [(None, chunk({"content": p})) for p in pieces]
    if tool_args is not None:
        events.append(
            (
                None,
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "search", "arguments": ""},
                            }
                        ]
                    }
                ),
            )
        )
        events += [
            (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}))
            for a in tool_args
        ]
    events.append((None, chunk({}, "tool_calls" if tool_args is not None else "stop")))
    events.append(
        (
            None,
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [],
                "usage": {
                    "prompt_tokens": usage[0],
                    "completion_tokens": usage[1],
                    "total_tokens": sum(usage),
                },
            },
        )
    )
    events.append((None, "[DONE]"))
    return Reply(events=events)


def openai_error(status: int, code: str, *, retry_after: str | None = None) -> Reply:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return Reply(
        status=status,
        headers=headers,
        body={"error": {"message": f"{code} happened", "type": code, "code": code}},
    )


# --------------------------------------------------------- Anthropic shapes
def anthropic_message(
    text: str,
    *,
    tool: dict[str, Any] | None = None,
    usage: tuple[int, int] = (10, 2),
    model: str = "claude-test",
) -> Reply:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    if tool is not None:
        content.append({"type": "tool_use", **tool})
    return Reply(
        body={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "tool_use" if tool else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        }
    )


def anthropic_stream(
    pieces: list[str],
    *,
    tool_json: list[str] | None = None,
    usage: tuple[int, int] = (10, 2),
    model: str = "claude-test",
) -> Reply:
    events: list[tuple[str | None, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": usage[0], "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    events += [
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
        )
        for p in pieces
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    if tool_json is not None:
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "search",
                        "input": {},
                    },
                },
            )
        )
        events += [
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": j},
                },
            )
            for j in tool_json
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 1}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if tool_json is not None else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": usage[1]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return Reply(events=events)


def anthropic_error(status: int, kind: str, *, retry_after: str | None = None) -> Reply:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return Reply(
        status=status,
        headers=headers,
        body={"type": "error", "error": {"type": kind, "message": f"{kind} happened"}},
    )
