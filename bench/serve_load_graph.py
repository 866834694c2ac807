"""The graph ``bench/serve_load.py`` serves (``--graphs bench.serve_load_graph:build``).

``fetch`` -> ``work`` -> ``finish``. Each node awaits a short
``asyncio.sleep`` (a stand-in for I/O, so runs overlap on the event loop
the way real model calls do) and ``work`` sends three ``custom`` events
with ``ctx.emit``, so every run streams a handful of events through the
engine, the executor port and the server. The run is checkpointed in the
server's database, as a registered ``Graph`` builder would be.

``FLOWCORE_LOAD_HOLD=N`` makes the first N runs wait in ``fetch`` until all
N have reached it (at most :data:`HOLD_LIMIT` seconds), so the bench can
hold N runs and their streams open at the same time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any, TypedDict

from flowcore import START, Graph
from flowcore.checkpoint.protocol import Checkpointer
from flowcore.graph.compiled import CompiledGraph
from flowcore.scheduler.context import NodeContext

__all__ = ["STEPS", "build"]

STEPS = 3
"""How many ``custom`` progress events ``work`` sends per run."""

PAUSE = 0.02  # seconds each step awaits: long enough that 200 runs really overlap
HOLD_LIMIT = 30.0  # a hold that never fills (fewer runs came) lets its runs go after this


class _Hold:
    """The first ``size`` arrivals wait until all ``size`` have arrived; later ones pass."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.arrived = 0
        self.full = asyncio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived >= self.size:
            self.full.set()
        if self.arrived <= self.size:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.full.wait(), HOLD_LIMIT)


_holds: dict[int, _Hold] = {}


def _hold() -> _Hold | None:
    size = int(os.environ.get("FLOWCORE_LOAD_HOLD", "0") or 0)
    if size <= 1:
        return None
    return _holds.setdefault(size, _Hold(size))


class LoadState(TypedDict, total=False):
    topic: str
    pages: list[str]
    words: int
    summary: str


async def fetch(state: LoadState) -> dict[str, Any]:
    hold = _hold()
    if hold is not None:
        await hold.wait()
    await asyncio.sleep(PAUSE)
    topic = state.get("topic", "load")
    return {"pages": [f"{topic} page {i}" for i in range(STEPS)]}


async def work(state: LoadState, ctx: NodeContext) -> dict[str, Any]:
    words = 0
    for index, page in enumerate(state.get("pages", [])):
        await asyncio.sleep(PAUSE)
        words += len(page.split())
        ctx.emit("progress", {"step": index + 1, "of": STEPS, "words": words})
    return {"words": words}


async def finish(state: LoadState) -> dict[str, Any]:
    await asyncio.sleep(PAUSE)
    return {"summary": f"{state.get('topic', 'load')}: {state.get('words', 0)} words"}


def build(checkpointer: Checkpointer) -> CompiledGraph:
    """The load graph, checkpointed in the server's database.

    Example:
        >>> # flowcore serve --graphs bench.serve_load_graph:build
    """
    graph = Graph(LoadState, name="load")
    graph.add_node("fetch", fetch).add_node("work", work).add_node("finish", finish)
    graph.add_edge(START, "fetch").add_edge("fetch", "work").add_edge("work", "finish")
    return graph.compile(checkpointer=checkpointer, version="1")
