"""A failed task's streamed result (``tasks``, ``debug``) holds its exception itself."""

from __future__ import annotations

from typing import TypedDict

import pytest

from flowcore.compat.langgraph import START, StateGraph


class State(TypedDict):
    x: str


@pytest.mark.parametrize("mode", ["tasks", "debug"])
def test_the_streamed_error_is_the_exception_itself(mode: str) -> None:
    def failing(state: State) -> State:
        raise ValueError("boom")

    builder: StateGraph[State] = StateGraph(State)
    builder.add_node("failing", failing)
    builder.add_edge(START, "failing")
    errors = []

    def consume() -> None:
        for chunk in builder.compile().stream({"x": ""}, stream_mode=mode):
            payload = chunk["payload"] if mode == "debug" else chunk
            if "error" in payload and payload["error"] is not None:
                errors.append(payload["error"])

    with pytest.raises(ValueError, match="boom"):
        consume()

    assert [(type(e), str(e)) for e in errors] == [(ValueError, "boom")]
