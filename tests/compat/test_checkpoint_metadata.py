"""Spec: each checkpoint's metadata carries the run's own plain config keys.

A key of ``configurable`` (or ``metadata``) with a str/int/float/bool value,
not private (``__``-prefixed) and not one of LangGraph's addressing keys
(``thread_id``, ``checkpoint_ns`` ...), is stored in every checkpoint the run
saves, beside ``source``, ``step`` and ``parents``.
"""

from __future__ import annotations

from typing import TypedDict

from flowcore.compat.langgraph import START, InMemorySaver, StateGraph


class State(TypedDict):
    n: int


def test_every_checkpoint_of_a_run_carries_its_config_keys() -> None:
    saver = InMemorySaver()
    graph = (
        StateGraph(State)
        .add_node("inc", lambda s: {"n": s["n"] + 1})
        .add_edge(START, "inc")
        .compile(checkpointer=saver)
    )
    config = {
        "configurable": {"thread_id": "t", "user": "ann", "tries": 2, "obj": object()},
        "metadata": {"team": "blue"},
    }
    graph.invoke({"n": 0}, config)
    stored = [t.metadata for t in saver.list({"configurable": {"thread_id": "t"}})]
    assert len(stored) == 3
    for metadata in stored:
        assert metadata["user"] == "ann"
        assert metadata["tries"] == 2
        assert metadata["team"] == "blue"
        assert "thread_id" not in metadata
        assert "obj" not in metadata
    assert graph.get_state({"configurable": {"thread_id": "t"}}).metadata["source"] == "loop"
