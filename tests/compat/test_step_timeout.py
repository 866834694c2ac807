"""Spec: ``graph.step_timeout`` caps each superstep of a run.

A step whose tasks run past it is stopped: its running tasks are cancelled
and the run fails with ``TimeoutError``; steps that finish in time are not
affected.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

from flowcore.compat.langgraph import START, StateGraph


class State(TypedDict):
    hello: str


async def test_a_step_past_its_timeout_is_cancelled_and_fails_the_run() -> None:
    cancelled: list[str] = []

    async def stuck(state: State) -> Any:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append("stuck")
            raise

    async def quick(state: State) -> Any:
        return {"hello": "quick"}

    builder = StateGraph(State).add_node("stuck", stuck).add_node("quick", quick)
    builder.add_conditional_edges(START, lambda s: ["stuck", "quick"])
    graph = builder.compile()
    graph.step_timeout = 0.05
    with pytest.raises(TimeoutError):
        await graph.ainvoke({"hello": "world"})
    assert cancelled == ["stuck"]


def test_steps_that_finish_in_time_run_as_usual() -> None:
    builder = StateGraph(State).add_node("a", lambda s: {"hello": "a"}).add_edge(START, "a")
    graph = builder.compile()
    graph.step_timeout = 30
    assert graph.invoke({"hello": "world"}) == {"hello": "a"}
