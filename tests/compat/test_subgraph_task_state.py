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


def test_a_doubly_nested_subgraph_s_state_is_read_through_the_task_configs() -> None:
    inner = StateGraph(State)
    inner.add_node("a", lambda state: {"log": ["a"]})
    inner.add_edge(START, "a")
    middle = StateGraph(State)
    middle.add_node("child", inner.compile())
    middle.add_edge(START, "child")
    outer = StateGraph(State)
    outer.add_node("child", middle.compile())
    outer.add_edge(START, "child")
    app = outer.compile(checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    for _ in range(2):
        [config] = _child_configs(app, config)
    assert config["configurable"]["checkpoint_ns"].count("|") == 1
    assert app.get_state(config).values == {"log": ["a"]}


def test_an_update_through_a_per_thread_subgraph_s_task_config_reaches_its_history() -> None:
    from flowcore.compat.langgraph import interrupt

    child = StateGraph(State)
    child.add_node("a", lambda state: {"log": ["a"]})
    child.add_node("b", lambda state: {"log": [interrupt("go?")]})
    child.add_edge(START, "a")
    child.add_edge("a", "b")
    parent = StateGraph(State)
    parent.add_node("child", child.compile(checkpointer=True))
    parent.add_edge(START, "child")
    app = parent.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    (task,) = app.get_state(config).tasks
    app.update_state(task.state, {"log": ["edit"]}, as_node="a")
    (task,) = app.get_state(config, subgraphs=True).tasks
    assert task.state.values == {"log": ["a", "edit"]}


def test_a_per_thread_subgraph_read_on_its_own_has_no_saver() -> None:
    import pytest

    graph = StateGraph(State)
    graph.add_node("a", lambda state: {"log": ["a"]})
    graph.add_edge(START, "a")
    app = graph.compile(checkpointer=True)
    with pytest.raises(RuntimeError, match="checkpointer=True"):
        app.get_state({"configurable": {"thread_id": "t"}})
