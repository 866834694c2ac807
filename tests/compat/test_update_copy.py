"""Spec: an update as ``__copy__`` forks the checkpoint it addresses.

The copy holds the same values, has the same parent, and is the thread's
newest checkpoint, so the next updates build on it; a superseded
checkpoint's updates are not stored as its tasks' results.
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


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _graph() -> Any:
    builder = StateGraph(State)
    builder.add_node("n", lambda state: {"log": ["out"]})
    builder.add_edge(START, "n")
    return builder.compile(checkpointer=InMemorySaver())


def test_a_copy_forks_with_the_same_values_and_parent() -> None:
    graph = _graph()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["in-1"]}, config)
    base = graph.get_state(config)
    graph.invoke({"log": ["in-2"]}, config)

    copied = graph.update_state(base.config, None, as_node="__copy__")

    state = graph.get_state(copied)
    assert state.values == base.values
    assert state.parent_config == base.parent_config
    assert state.metadata["source"] == "fork"
    assert graph.get_state(config).config == state.config


def test_a_bulk_update_after_a_copy_builds_on_the_copy() -> None:
    graph = _graph()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["in-1"]}, config)
    base = graph.get_state(config)
    graph.invoke({"log": ["in-2"]}, config)
    forked = graph.bulk_update_state(
        base.config,
        [[StateUpdate(None, "__copy__")], [StateUpdate({"log": ["s2"]}, "n")]],
    )
    assert graph.get_state(forked).values["log"] == ["in-1", "out", "s2"]


def test_a_thread_without_the_checkpoint_cannot_be_copied() -> None:
    graph = _graph()
    with pytest.raises(InvalidUpdateError):
        graph.update_state({"configurable": {"thread_id": "none"}}, None, as_node="__copy__")


def test_updates_given_with_a_copy_stand_in_for_the_copy_s_tasks() -> None:
    graph = _graph()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["in"]}, config)
    before_n = next(s for s in graph.get_state_history(config) if s.next == ("n",))

    updated = graph.update_state(before_n.config, [StateUpdate({"log": ["edit"]}, "n")], "__copy__")

    state = graph.get_state(updated)
    assert state.values["log"] == ["in", "edit"]
    assert state.next == ()
    copy = graph.get_state(state.parent_config)
    assert copy.metadata["source"] == "fork"
    assert [t.result for t in copy.tasks] == [{"log": ["edit"]}]
