"""A saver lent through ``configurable["__pregel_checkpointer"]`` is the one a graph uses."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import START, InMemorySaver, StateGraph

LENT = "__pregel_checkpointer"


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _builder() -> Any:
    return StateGraph(State).add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a")


def test_a_graph_without_a_saver_runs_and_reads_on_a_lent_one() -> None:
    saver = InMemorySaver()
    app = _builder().compile()
    config = {"configurable": {"thread_id": "t", LENT: saver}}

    app.invoke({"log": ["in"]}, config)
    app.update_state(config, {"log": ["edit"]}, as_node="a")

    assert app.get_state(config).values == {"log": ["in", "a", "edit"]}
    assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is not None
    assert next(iter(app.get_state_history(config))).values == {"log": ["in", "a", "edit"]}


def test_a_lent_saver_wins_over_the_graphs_own() -> None:
    own, lent = InMemorySaver(), InMemorySaver()
    app = _builder().compile(checkpointer=own)

    app.invoke({"log": []}, {"configurable": {"thread_id": "t", LENT: lent}})

    assert lent.get_tuple({"configurable": {"thread_id": "t"}}) is not None
    assert own.get_tuple({"configurable": {"thread_id": "t"}}) is None


def test_a_checkpointer_true_graph_reads_only_through_a_lent_saver() -> None:
    app = _builder().compile(checkpointer=True)

    with pytest.raises(RuntimeError, match="root graphs"):
        app.get_state({"configurable": {"thread_id": "t"}})
    saver = InMemorySaver()
    _builder().compile().invoke({"log": ["x"]}, {"configurable": {"thread_id": "t", LENT: saver}})
    snapshot = app.get_state({"configurable": {"thread_id": "t", LENT: saver}})
    assert snapshot.values == {"log": ["x", "a"]}


def test_a_graph_without_any_saver_still_refuses_state_reads() -> None:
    with pytest.raises(ValueError, match="No checkpointer set"):
        _builder().compile().get_state({"configurable": {"thread_id": "t"}})
