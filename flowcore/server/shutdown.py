"""Stopping cleanly: refuse new requests, stop runs at a checkpoint, then let the server exit.

On SIGTERM (or Ctrl-C) :class:`GracefulServer` first tells the run manager
to stop its runs: each is cancelled, the engine has already saved the
writes of every node that finished, and the run is marked ``suspended``.
Event streams of those runs end, so their connections close, and uvicorn's
own shutdown (stop listening, wait for open requests, run the app's
lifespan exit) finishes quickly. Requests that still arrive meanwhile get
503 from :class:`StoppingMiddleware`. The next ``flowcore serve`` on the same
database continues each suspended run from its thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from flowcore.server.limits import App, Receive, Scope, Send, error_response_bytes

__all__ = ["StoppingMiddleware", "graceful_server"]


class StoppingMiddleware:
    """Answers 503 to every request but ``/healthz`` once the server is stopping.

    Example:
        >>> # app = StoppingMiddleware(app, is_stopping=lambda: manager.stopping)
    """

    def __init__(self, app: App, is_stopping: Callable[[], bool]) -> None:
        self.app = app
        self.is_stopping = is_stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.is_stopping() or scope.get("path") == "/healthz":
            await self.app(scope, receive, send)
            return
        body = error_response_bytes(
            "shutting-down", "the server is stopping and takes no new requests; retry later"
        )
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", b"5"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def graceful_server(config: Any, stop_runs: Callable[[], Awaitable[None]]) -> Any:
    """A ``uvicorn.Server`` that stops the runs first when it is told to exit.

    ``stop_runs`` is the run manager's ``shutdown``; it is started on the
    first exit signal and awaited by the app's lifespan exit (calling it
    twice waits for the same stop).

    Example:
        >>> # server = graceful_server(uvicorn.Config(app), manager.shutdown)
        >>> # await server.serve()
    """
    import uvicorn

    class GracefulServer(uvicorn.Server):
        stopping_task: asyncio.Task[None] | None = None

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.stopping_task is None:
                self.stopping_task = asyncio.get_running_loop().create_task(_run(stop_runs))
            super().handle_exit(sig, frame)
            # uvicorn raises the signal again once it has stopped, which kills the process
            # before `flowcore serve` closes its stores; the stop is handled, so forget it
            # and let the command return (exit code 0).
            captured = getattr(self, "_captured_signals", None)
            if isinstance(captured, list) and sig in captured:
                captured.remove(sig)

    return GracefulServer(config)


async def _run(stop: Callable[[], Awaitable[None]]) -> None:
    await stop()
