"""Messages written to a messages DeltaChannel get their ids before the writes are saved."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import START, DeltaChannel, InMemorySaver, StateGraph
from flowcore.compat.langgraph._delta import messages_delta_reducer


class State(TypedDict):
    messages: Annotated[list[Any], DeltaChannel(messages_delta_reducer)]


def _graph(write: Any) -> Any:
    return (
        StateGraph(State)
        .add_node("n", lambda s: {"messages": write})
        .add_edge(START, "n")
        .compile(checkpointer=InMemorySaver())
    )


def test_a_written_string_reads_back_with_one_id() -> None:
    app = _graph("hello")
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"messages": []}, config)

    first = app.get_state(config).values["messages"][-1]
    again = app.get_state(config).values["messages"][-1]

    assert first.content == "hello"
    assert first.id
    assert first.id == again.id


def test_a_write_that_cannot_be_a_message_fails_the_task_and_is_not_saved() -> None:
    app = _graph([{"role": "tool", "content": "no call id"}])
    config = {"configurable": {"thread_id": "t"}}

    with pytest.raises(Exception):  # noqa: B017, PT011  (the message class's own error)
        app.invoke({"messages": [("user", "hi")]}, config)

    assert [m.content for m in app.get_state(config).values["messages"]] == ["hi"]
