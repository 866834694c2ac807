"""Spec: a failed task's ``tasks``/``debug`` result carries the exception object itself."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from flowcore.compat.langgraph import START, StateGraph


class State(TypedDict):
    x: str


@pytest.mark.parametrize("mode", ["tasks", "debug"])
def test_the_failure_is_streamed_as_the_exception(mode: str) -> None:
    def failing(state: State) -> State:
        raise ValueError("boom")

    graph = StateGraph(State).add_node("failing", failing).add_edge(START, "failing").compile()
    errors: list[Any] = []

    def collect() -> None:
        for chunk in graph.stream({"x": ""}, stream_mode=mode):
            payload = chunk["payload"] if mode == "debug" else chunk
            if payload.get("error") is not None:
                errors.append(payload["error"])

    with pytest.raises(ValueError, match="boom"):
        collect()
    assert len(errors) == 1
    assert isinstance(errors[0], ValueError)
    assert str(errors[0]) == "boom"
