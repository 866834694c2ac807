"""Spec: ``update_state(config, None, as_node=END)`` closes the checkpoint's superstep.

The writes of the tasks that finished there (and of an update that stood in
for a task) go into the new checkpoint; nothing is left to run.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import END, START, InMemorySaver, StateGraph, interrupt


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _graph() -> Any:
    def q(state: State) -> dict[str, Any]:
        interrupt("continue?")
        return {"log": ["q"]}

    builder = StateGraph(State)
    builder.add_node("p", lambda state: {"log": ["p"]})
    builder.add_node("q", q)
    builder.add_edge(START, "p")
    builder.add_edge(START, "q")
    return builder.compile(checkpointer=InMemorySaver())


def test_clearing_keeps_the_finished_task_s_writes_and_ends_the_rest() -> None:
    graph = _graph()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["in"]}, config)
    cleared = graph.update_state(config, None, as_node=END)
    state = graph.get_state(cleared)
    assert state.values["log"] == ["in", "p"]
    assert state.next == ()


def test_clearing_after_an_edit_keeps_the_edit() -> None:
    graph = _graph()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["in"]}, config)
    head = graph.get_state(config)
    graph.update_state(head.config, {"log": ["edit"]}, as_node="q")
    cleared = graph.update_state(head.config, None, as_node=END)
    assert graph.get_state(cleared).values["log"] == ["in", "p", "edit"]
