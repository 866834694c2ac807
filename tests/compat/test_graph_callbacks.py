"""Graph lifecycle callbacks: ``config["callbacks"]`` handlers hear a run pause and resume."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    START,
    Command,
    GraphCallbackHandler,
    GraphInterruptEvent,
    GraphResumeEvent,
    InMemorySaver,
    StateGraph,
    interrupt,
)


class State(TypedDict):
    answer: str | None


class Recorder(GraphCallbackHandler):
    def __init__(self) -> None:
        self.events: list[GraphInterruptEvent | GraphResumeEvent] = []

    def on_interrupt(self, event: GraphInterruptEvent) -> None:
        self.events.append(event)

    def on_resume(self, event: GraphResumeEvent) -> None:
        self.events.append(event)


class Failing(GraphCallbackHandler):
    def __init__(self, *, raise_error: bool) -> None:
        self.raise_error = raise_error

    async def on_interrupt(self, event: GraphInterruptEvent) -> None:
        raise ValueError("handler failed")


def _graph() -> Any:
    builder: StateGraph[State] = StateGraph(State)
    builder.add_node("ask", lambda s: {"answer": interrupt("value?")})
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=InMemorySaver())


def test_a_pause_and_a_resume_are_reported_to_graph_handlers_only() -> None:
    graph = _graph()
    recorder = Recorder()
    config = {"configurable": {"thread_id": "cb"}, "callbacks": [object(), recorder]}

    graph.invoke({"answer": None}, config)
    paused = graph.get_state(config)
    assert graph.invoke(Command(resume="done"), config) == {"answer": "done"}

    pause, resume = recorder.events
    assert isinstance(pause, GraphInterruptEvent)
    assert [i.value for i in pause.interrupts] == ["value?"]
    assert pause.checkpoint_ns == ()
    assert isinstance(resume, GraphResumeEvent)
    assert resume.checkpoint_id == paused.config["configurable"]["checkpoint_id"]


def test_a_failing_handler_is_skipped_unless_it_asks_to_raise() -> None:
    graph = _graph()
    recorder = Recorder()

    first = asyncio.run(
        graph.ainvoke(
            {"answer": None},
            {
                "configurable": {"thread_id": "skip"},
                "callbacks": [Failing(raise_error=False), recorder],
            },
        )
    )
    assert "__interrupt__" in first
    assert len(recorder.events) == 1

    with pytest.raises(ValueError, match="handler failed"):
        graph.invoke(
            {"answer": None},
            {"configurable": {"thread_id": "raise"}, "callbacks": [Failing(raise_error=True)]},
        )
