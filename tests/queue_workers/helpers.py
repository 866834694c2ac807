"""Shared pieces of the queue specs: a worker running as a task of the test's loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from flowcore.port import InProcExecutor
from flowcore.queue import QueueWorker
from flowcore.storage import Backends
from flowcore.testing import build_kit_graphs

# Fast heartbeats so a dead worker is noticed within seconds in the specs.
FAST = {"heartbeat": 0.5, "stalled_after": 3.0, "lease_ttl": 3.0, "retry_delay": 0.1}


def kit_executor(backends: Backends) -> InProcExecutor:
    """The conformance kit's graphs, the pausing one on the worker's Postgres checkpointer."""
    return InProcExecutor(graphs=build_kit_graphs(backends.checkpoints), history=backends.history)


@contextlib.asynccontextmanager
async def running_worker(
    url: str,
    build: Callable[[Backends], InProcExecutor] = kit_executor,
    **options: Any,
) -> AsyncIterator[QueueWorker]:
    """A :class:`QueueWorker` working in this event loop for the block's duration."""
    settings: Mapping[str, Any] = {**FAST, "concurrency": 4, **options}
    worker = QueueWorker(url, build, **settings)
    task = asyncio.ensure_future(worker.run())
    try:
        yield worker
    finally:
        worker.stop()
        async with asyncio.timeout(30):
            await task
