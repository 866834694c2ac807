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


def test_clearing_an_old_checkpoint_does_not_pick_up_an_edit_of_it() -> None:
    builder = StateGraph(State)
    builder.add_node("a", lambda state: {"log": ["a"]})
    builder.add_node("b", lambda state: {"log": ["b"]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["in"]}, config, interrupt_before=["b"])
    base = graph.get_state(config)
    graph.update_state(config, {"log": ["later"]}, as_node="a")
    graph.update_state(base.config, {"log": ["edit"]}, as_node="b")
    cleared = graph.update_state(base.config, None, as_node=END)
    assert graph.get_state(cleared).values["log"] == ["in", "a"]
