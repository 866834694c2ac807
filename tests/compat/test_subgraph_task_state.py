"""Spec: a subgraph task's ``state`` in snapshots names the subgraph's history.

In ``get_state`` and in every ``get_state_history`` snapshot, a task that runs
a subgraph carries the config of the subgraph's checkpoints, and
``get_state_history`` on that config lists the subgraph's own snapshots; a
subgraph compiled with ``checkpointer=False`` keeps none, so its task has none.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import END, START, InMemorySaver, StateGraph


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _app(subgraph_checkpointer: bool | None = None) -> Any:
    child = StateGraph(State)
    child.add_node("a", lambda state: {"log": ["a"]})
    child.add_node("b", lambda state: {"log": ["b"]})
    child.add_edge(START, "a")
    child.add_edge("a", "b")
    child.add_edge("b", END)
    parent = StateGraph(State)
    parent.add_node("child", child.compile(checkpointer=subgraph_checkpointer))
    parent.add_edge(START, "child")
    return parent.compile(checkpointer=InMemorySaver())


def _child_configs(app: Any, config: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        task.state
        for snapshot in app.get_state_history(config)
        for task in snapshot.tasks
        if task.name == "child" and isinstance(task.state, dict)
    ]


def test_history_snapshots_name_the_subgraph_s_checkpoints() -> None:
    app = _app()
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    [child] = _child_configs(app, config)
    assert child["configurable"]["checkpoint_ns"].startswith("child:")
    assert app.get_state(child).values == {"log": ["a", "b"]}
    logs = [s.values.get("log") for s in app.get_state_history(child)]
    assert logs[0] == ["a", "b"]
    assert ["a"] in logs


def test_a_subgraph_without_checkpoints_has_no_task_state() -> None:
    app = _app(subgraph_checkpointer=False)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    assert _child_configs(app, config) == []
