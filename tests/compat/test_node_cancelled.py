"""A node that raises ``asyncio.CancelledError`` itself fails the run with ``NodeCancelledError``.

A run cancelled from outside is still cancelled (``CancelledError``).
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, TypedDict

import pytest

from flowcore.compat.langgraph import END, START, NodeCancelledError, StateGraph


class Vals(TypedDict, total=False):
    vals: Annotated[list[str], operator.add]


async def _ok(state: Vals) -> Vals:
    return {"vals": ["ok"]}


def test_a_node_raising_cancelled_error_fails_the_run() -> None:
    async def boom(state: Vals) -> Vals:
        raise asyncio.CancelledError("from the node")

    builder: StateGraph[Vals] = StateGraph(Vals)
    builder.add_node("ok", _ok)
    builder.add_node("boom", boom)
    builder.add_edge(START, "ok")
    builder.add_edge(START, "boom")
    builder.add_edge("boom", END)
    graph = builder.compile()

    with pytest.raises(NodeCancelledError) as raised:
        asyncio.run(graph.ainvoke({"vals": []}))

    assert raised.value.node == "boom"


def test_a_run_cancelled_from_outside_is_cancelled() -> None:
    started = asyncio.Event()

    async def slow(state: Vals) -> Vals:
        started.set()
        await asyncio.sleep(10)
        return {"vals": ["slow"]}

    builder: StateGraph[Vals] = StateGraph(Vals)
    builder.add_node("slow", slow)
    builder.add_edge(START, "slow")
    graph = builder.compile()

    async def run() -> None:
        running = asyncio.create_task(graph.ainvoke({"vals": []}))
        await started.wait()
        running.cancel()
        await running

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(run())
