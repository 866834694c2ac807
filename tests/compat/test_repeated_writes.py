"""Spec: a task that writes one key several times shows every write in its task result.

The ``tasks`` stream lists the key's writes under ``$writes``, as LangGraph does.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import START, Command, StateGraph
from flowcore.compat.langgraph._task_result import task_result


class State(TypedDict, total=False):
    foo: Annotated[list[str], operator.add]
    bar: str


def _graph() -> Any:
    builder = StateGraph(State)
    builder.add_node(
        "one", lambda state: Command(update=[("foo", ["a"]), ("foo", ["b"]), ("bar", "x")])
    )
    builder.add_edge(START, "one")
    return builder.compile()


def test_the_task_result_lists_repeated_writes() -> None:
    writes = [("foo", 1), ("bar", 2), ("foo", 3), ("foo", 4), ("hidden", 5)]
    assert task_result(writes, {"foo", "bar"}) == {"foo": {"$writes": [1, 3, 4]}, "bar": 2}


def test_the_tasks_stream_shows_the_repeated_writes() -> None:
    events = list(_graph().stream({"foo": []}, stream_mode="tasks"))
    results = [e["result"] for e in events if "result" in e and e.get("name") == "one"]
    assert results == [{"foo": {"$writes": [["a"], ["b"]]}, "bar": "x"}]
