"""Spec: ``batch``/``abatch`` on a compiled StateGraph run one ordinary run per input.

Results come back in input order; one config applies to every input, a list
gives one config per input (its length must match); with
``return_exceptions=True`` a failing input's error takes its place.
"""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from flowcore.compat.langgraph import START, InMemorySaver, StateGraph


class State(TypedDict):
    n: int


def _graph(checkpointer: Any = None) -> Any:
    def double(state: State) -> State:
        if state["n"] < 0:
            raise ValueError("negative")
        return {"n": state["n"] * 2}

    builder = StateGraph(State).add_node("double", double).add_edge(START, "double")
    return builder.compile(checkpointer=checkpointer)


def test_batch_gives_each_input_its_result_in_order() -> None:
    assert _graph().batch([{"n": 1}, {"n": 2}, {"n": 3}]) == [{"n": 2}, {"n": 4}, {"n": 6}]


def test_a_config_per_input_keeps_the_runs_apart() -> None:
    graph = _graph(InMemorySaver())
    configs = [{"configurable": {"thread_id": t}} for t in ("a", "b")]
    graph.batch([{"n": 1}, {"n": 5}], configs)
    assert graph.get_state(configs[0]).values == {"n": 2}
    assert graph.get_state(configs[1]).values == {"n": 10}
    with pytest.raises(ValueError, match="2 configs for 1 inputs"):
        graph.batch([{"n": 1}], configs)


async def test_abatch_can_return_errors_in_place() -> None:
    out = await _graph().abatch([{"n": 1}, {"n": -1}], return_exceptions=True)
    assert out[0] == {"n": 2}
    assert isinstance(out[1], ValueError)
    with pytest.raises(ValueError, match="negative"):
        await _graph().abatch([{"n": -1}])
