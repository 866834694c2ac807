"""Request limits: a body size cap (413) and a per-key rate limit (429 with ``Retry-After``).

The size cap is plain ASGI middleware, so it also covers bodies sent
without a ``Content-Length`` (chunked): it counts bytes as they arrive and
answers 413 the moment the cap is passed, before a route reads the body.
"""

from __future__ import annotations

import json
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from flowcore.server.errors import RateLimitedError

__all__ = ["BodyLimitMiddleware", "RateLimiter", "error_response_bytes"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def error_response_bytes(code: str, message: str) -> bytes:
    """The JSON body of an error response, as bytes (for middleware that has no framework).

    Example:
        >>> json.loads(error_response_bytes("x", "y"))["error"]["code"]
        'x'
    """
    body = {"error": {"code": code, "message": message, "problems": []}}
    return json.dumps(body).encode("utf-8")


class RateLimiter:
    """At most ``limit`` requests per ``window`` seconds for each key (a sliding window).

    ``clock`` is injectable so tests step time instead of sleeping.

    Example:
        >>> limiter = RateLimiter(limit=1, window=60, clock=lambda: 0.0)
        >>> limiter.hit("k1")
        >>> try:
        ...     limiter.hit("k1")
        ... except RateLimitedError as exc:
        ...     exc.retry_after
        60
    """

    def __init__(
        self, limit: int = 600, window: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self._hits: dict[str, deque[float]] = {}

    def hit(self, key: str) -> None:
        """Count one request of ``key``; :class:`RateLimitedError` when it is one too many."""
        now = self.clock()
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= self.limit:
            wait = max(1, math.ceil(hits[0] + self.window - now))
            raise RateLimitedError(
                f"more than {self.limit} requests in {self.window:g} s with this API key; "
                f"retry after {wait} s",
                retry_after=wait,
            )
        hits.append(now)


class BodyLimitMiddleware:
    """Answers 413 to any request whose body is over ``max_bytes``.

    Example:
        >>> # app = BodyLimitMiddleware(app, max_bytes=1_048_576)
    """

    def __init__(self, app: App, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared: int | None = None
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
        if declared is not None:
            # The HTTP server stops a body at its Content-Length, so the header is the size.
            if declared > self.max_bytes:
                await self._refuse(send)
                return
            await self.app(scope, receive, send)
            return
        # No Content-Length (a chunked body): read it here, up to the cap, then hand the
        # app the bytes read. A route never sees a body that is over the cap.
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                await self._refuse(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        body = error_response_bytes(
            "payload-too-large",
            f"the request body is over {self.max_bytes} bytes; send less (for a big pipeline, "
            "save its blocks first and refer to them by id)",
        )
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
