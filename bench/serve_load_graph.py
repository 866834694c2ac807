"""The graph ``bench/serve_load.py`` serves (``--graphs bench.serve_load_graph:build``).

``fetch`` -> ``work`` -> ``finish``. Each node awaits a short
``asyncio.sleep`` (a stand-in for I/O, so runs overlap on the event loop
the way real model calls do) and ``work`` sends three ``custom`` events
with ``ctx.emit``, so every run streams a handful of events through the
engine, the executor port and the server. The run is checkpointed in the
server's database, as a registered ``Graph`` builder would be.

``FLOWCORE_LOAD_HOLD=N`` makes the first N runs wait in ``fetch`` until a
run of the ``load_release`` graph lets them go (or :data:`HOLD_LIMIT`
seconds pass): the bench starts that run once all N streams are open and
have their first event, so N runs and their streams really are live at
the same time, whatever the client's own speed.
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
HOLD_LIMIT = 60.0  # a hold nobody releases (the bench died) lets its runs go after this


class _Hold:
    """The first ``size`` runs wait in ``fetch`` until :meth:`release`; later ones pass."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.arrived = 0
        self.released = asyncio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived <= self.size and not self.released.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.released.wait(), HOLD_LIMIT)

    def release(self) -> int:
        self.released.set()
        return self.arrived


_holds: dict[int, _Hold] = {}


def _hold() -> _Hold | None:
    size = int(os.environ.get("FLOWCORE_LOAD_HOLD", "0") or 0)
    if size < 1:
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


class ReleaseState(TypedDict, total=False):
    held: int


async def release(state: ReleaseState) -> dict[str, Any]:
    hold = _hold()
    return {"held": hold.release() if hold is not None else 0}


def build(checkpointer: Checkpointer) -> dict[str, CompiledGraph]:
    """The load graph (checkpointed in the server's database) and the one that releases its hold.

    Example:
        >>> # flowcore serve --graphs bench.serve_load_graph:build
    """
    graph = Graph(LoadState, name="load")
    graph.add_node("fetch", fetch).add_node("work", work).add_node("finish", finish)
    graph.add_edge(START, "fetch").add_edge("fetch", "work").add_edge("work", "finish")
    releaser = Graph(ReleaseState, name="load_release")
    releaser.add_node("release", release).add_edge(START, "release")
    return {
        "load": graph.compile(checkpointer=checkpointer, version="1"),
        "load_release": releaser.compile(version="1"),
    }
