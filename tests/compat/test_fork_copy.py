"""Spec: ``update_state(config, values, as_node="__copy__")`` forks a checkpoint.

The copy has the same values and parent as the checkpoint it copies, is
marked ``source="fork"``, and a run from it makes a new branch; a list of
``StateUpdate``s given with it is applied to the copy, standing in for the
copy's scheduled tasks. Copying nothing, or copying in a bulk update with
other updates, is an error.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    START,
    InMemorySaver,
    InvalidUpdateError,
    StateGraph,
    StateUpdate,
)


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph() -> Any:
    builder = StateGraph(State)
    builder.add_node("one", lambda s: {"log": ["one"]}).add_node("two", lambda s: {"log": ["two"]})
    builder.add_edge(START, "one").add_edge("one", "two")
    return builder.compile(checkpointer=InMemorySaver())


def test_a_copy_is_a_sibling_fork_and_runs_a_new_branch() -> None:
    graph = _graph()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["start"]}, config)
    before_two = next(s for s in graph.get_state_history(config) if s.next == ("two",))
    fork = graph.update_state(before_two.config, None, as_node="__copy__")
    copied = graph.get_state(fork)
    assert copied.values == before_two.values
    assert copied.next == ("two",)
    assert copied.parent_config == before_two.parent_config
    assert copied.metadata["source"] == "fork"
    assert graph.invoke(None, fork) == {"log": ["start", "one", "two"]}


def test_updates_carried_by_a_copy_stand_in_for_its_tasks() -> None:
    graph = _graph()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["start"]}, config)
    before_two = next(s for s in graph.get_state_history(config) if s.next == ("two",))
    made = graph.update_state(
        before_two.config, [StateUpdate({"log": ["two*"]}, as_node="two")], as_node="__copy__"
    )
    assert graph.get_state(made).values == {"log": ["start", "one", "two*"]}
    fork = graph.get_state(graph.get_state(made).parent_config)
    assert [(t.name, t.result) for t in fork.tasks] == [("two", {"log": ["two*"]})]


def test_copying_nothing_or_in_bulk_is_an_error() -> None:
    graph = _graph()
    with pytest.raises(InvalidUpdateError, match="non-existent"):
        graph.update_state({"configurable": {"thread_id": "none"}}, None, as_node="__copy__")
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": []}, config)
    with pytest.raises(InvalidUpdateError, match="multiple updates"):
        graph.bulk_update_state(
            config, [[StateUpdate(None, "__copy__"), StateUpdate({"log": ["x"]}, "one")]]
        )
