"""Spec: what a compat run records as LangGraph does, beyond the state itself.

* ``versions_seen`` gains an empty ``"__input__"`` entry once a run applies input
  (LangGraph applies input through a pseudo-task of that name).
* A channel that was never written is not stored, even if it holds an initial
  value (an operator channel's empty value).
* A callable under ``configurable["__pregel_node_finished"]`` is told the name of
  each node that returned, in subgraphs too; the START task is not a node.
* A graph with a saver refuses a run whose config names no thread.
* A thread id that is not a string is addressed as one.
"""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, TypedDict

import pytest

from flowcore.compat.langgraph import END, START, InMemorySaver, StateGraph


class State(TypedDict, total=False):
    total: Annotated[int, operator.add]
    name: str


def _graph(saver: InMemorySaver | None = None) -> object:
    builder = StateGraph(State)
    builder.add_node("add", lambda state: {"total": 2})
    builder.add_edge(START, "add")
    builder.add_edge("add", END)
    return builder.compile(checkpointer=saver)


def test_input_marks_versions_seen() -> None:
    saver = InMemorySaver()
    app = _graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"name": "x"}, config)  # type: ignore[attr-defined]
    for item in saver.list(config):
        assert item.checkpoint["versions_seen"].get("__input__") == {}


def test_unwritten_channel_not_stored() -> None:
    saver = InMemorySaver()
    app = _graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"name": "x"}, config)  # type: ignore[attr-defined]
    first = list(saver.list(config))[-1]
    assert first.metadata["source"] == "input"
    assert "total" not in first.checkpoint["channel_values"]
    assert set(first.checkpoint["channel_values"]) <= set(first.checkpoint["channel_versions"])


def test_node_finished_hook_hears_nodes_and_subgraph_nodes() -> None:
    child = StateGraph(State)
    child.add_node("inner", lambda state: {"total": 1})
    child.add_edge(START, "inner")
    parent = StateGraph(State)
    parent.add_node("first", lambda state: {"total": 1})
    parent.add_node("sub", child.compile())
    parent.add_edge(START, "first")
    parent.add_edge("first", "sub")
    heard: list[str] = []
    parent.compile().invoke(
        {"total": 0}, {"configurable": {"__pregel_node_finished": heard.append}}
    )
    assert heard == ["first", "inner", "sub"]


def test_saver_needs_a_thread() -> None:
    app = _graph(InMemorySaver())
    with pytest.raises(ValueError, match="thread_id"):
        app.invoke({"name": "x"})  # type: ignore[attr-defined]
    assert app.invoke({"name": "x"}, {"configurable": {"thread_id": "t"}}) == {  # type: ignore[attr-defined]
        "name": "x",
        "total": 2,
    }


def test_thread_id_addressed_as_string() -> None:
    saver = InMemorySaver()
    app = _graph(saver)
    thread = uuid.uuid4()
    app.invoke({"name": "x"}, {"configurable": {"thread_id": thread}})  # type: ignore[attr-defined]
    saved = saver.get_tuple({"configurable": {"thread_id": str(thread)}})
    assert saved is not None
    assert saved.config["configurable"]["thread_id"] == str(thread)
