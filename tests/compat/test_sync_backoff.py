"""A sync run (``invoke``, ``stream``) waits between retries with ``time.sleep``, as in LangGraph.

So code that patches ``time.sleep`` to skip backoff sees the pauses; an async
run keeps waiting with ``asyncio.sleep``.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict
from unittest.mock import patch

from flowcore.compat.langgraph import START, RetryPolicy, StateGraph


class State(TypedDict):
    n: int


def _flaky_graph(failures: int) -> Any:
    left = [failures]

    def flaky(state: State) -> State:
        if left[0]:
            left[0] -= 1
            raise ConnectionError("flaky")
        return {"n": state["n"] + 1}

    policy = RetryPolicy(max_attempts=5, initial_interval=0.5, backoff_factor=2.0, jitter=False)
    builder: StateGraph[State] = StateGraph(State)
    builder.add_node("flaky", flaky, retry_policy=policy)
    builder.add_edge(START, "flaky")
    return builder.compile()


def test_invoke_waits_with_time_sleep() -> None:
    graph = _flaky_graph(2)

    with patch("time.sleep") as slept:
        assert graph.invoke({"n": 0}) == {"n": 1}

    assert [c.args[0] for c in slept.call_args_list] == [0.5, 1.0]


def test_stream_waits_with_time_sleep() -> None:
    graph = _flaky_graph(1)

    with patch("time.sleep") as slept:
        chunks = list(graph.stream({"n": 0}))

    assert chunks == [{"flaky": {"n": 1}}]
    assert [c.args[0] for c in slept.call_args_list] == [0.5]


def test_ainvoke_does_not_use_time_sleep() -> None:
    graph = _flaky_graph(1)

    async def no_wait(seconds: float) -> None:
        waits.append(seconds)

    waits: list[float] = []
    with patch("time.sleep") as slept, patch("asyncio.sleep", no_wait):
        result = asyncio.run(graph.ainvoke({"n": 0}))

    assert result == {"n": 1}
    assert slept.call_args_list == []
    assert 0.5 in waits
