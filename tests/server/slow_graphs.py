"""The graph ``flowcore serve --graphs tests.server.slow_graphs:build`` serves in the shutdown spec.

``prepare`` -> ``slow`` -> ``finish`` (which leaks the provider key into the
state, for the secrets scan); each node appends its name to the file
``$FLOWCORE_TEST_TRACE`` when it runs, so the spec can tell which nodes ran
how often across a server restart. ``slow`` waits ``$FLOWCORE_TEST_SLOW``
seconds (the spec stops the server while it waits).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, TypedDict

from flowcore import START, Graph
from flowcore.checkpoint.protocol import Checkpointer
from flowcore.graph.compiled import CompiledGraph


class SlowState(TypedDict, total=False):
    prepared: bool
    slept: bool
    finished: bool
    note: str


def _trace(name: str) -> None:
    with Path(os.environ["FLOWCORE_TEST_TRACE"]).open("a") as f:
        f.write(name + "\n")


async def prepare(state: SlowState) -> dict[str, Any]:
    await asyncio.to_thread(_trace, "prepare")
    return {"prepared": True}


async def slow(state: SlowState) -> dict[str, Any]:
    await asyncio.to_thread(_trace, "slow:start")
    await asyncio.sleep(float(os.environ.get("FLOWCORE_TEST_SLOW", "2")))
    await asyncio.to_thread(_trace, "slow:end")
    return {"slept": True}


async def finish(state: SlowState) -> dict[str, Any]:
    await asyncio.to_thread(_trace, "finish")
    # A careless node: it puts the provider key into the state. The server must never show it.
    return {"finished": True, "note": f"key={os.environ.get('OPENAI_API_KEY')}"}


def build(checkpointer: Checkpointer) -> CompiledGraph:
    """The graph, checkpointed in the server's database."""
    graph = Graph(SlowState, name="slow")
    graph.add_node("prepare", prepare).add_node("slow", slow).add_node("finish", finish)
    graph.add_edge(START, "prepare").add_edge("prepare", "slow").add_edge("slow", "finish")
    return graph.compile(checkpointer=checkpointer, version="1")
