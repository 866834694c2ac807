"""Spec: ``debug`` checkpoint records of nested subgraphs agree with their histories.

A ``debug`` (and ``checkpoints``) record of a checkpoint shows, for each upcoming
task that runs a saving subgraph, the config of that subgraph's history as the
task's ``state``, like the snapshot ``get_state_history`` gives for the same
checkpoint; its ``config`` and ``parent_config`` carry the checkpoint map the
metadata implies. Under ``durability="exit"`` a subgraph that ends normally
stores no checkpoint of its own: only the root's last one is kept.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import END, START, InMemorySaver, StateGraph


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _step(name: str) -> Any:
    return lambda state: {"log": [name]}


def _nested() -> Any:
    child = StateGraph(State)
    child.add_node("c", _step("c"))
    child.add_edge(START, "c")
    child.add_edge("c", END)
    parent = StateGraph(State)
    parent.add_node("p", _step("p"))
    parent.add_node("inner", child.compile())
    parent.add_edge(START, "p")
    parent.add_edge("p", "inner")
    parent.add_edge("inner", END)
    root = StateGraph(State)
    root.add_node("r", _step("r"))
    root.add_node("outer", parent.compile())
    root.add_edge(START, "r")
    root.add_edge("r", "outer")
    root.add_edge("outer", END)
    return root.compile(checkpointer=InMemorySaver())


def _records(app: Any, durability: str) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    found: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    config = {"configurable": {"thread_id": "t"}}
    for ns, event in app.stream(
        {"log": []}, config, stream_mode="debug", subgraphs=True, durability=durability
    ):
        if event["type"] == "checkpoint":
            found[ns].append(event["payload"])
    return found


def _history(app: Any, ns: tuple[str, ...]) -> list[Any]:
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": "|".join(ns)}}
    return list(app.get_state_history(config))[::-1]


def test_subgraph_tasks_name_their_history_in_debug_records() -> None:
    app = _nested()
    records = _records(app, "sync")
    assert len(records) == 3
    for ns, payloads in records.items():
        history = _history(app, ns)
        assert len(payloads) == len(history)
        for payload, snapshot in zip(payloads, history, strict=True):
            assert payload["config"] == snapshot.config
            assert payload["parent_config"] == snapshot.parent_config
            assert [t["state"] for t in payload["tasks"]] == [t.state for t in snapshot.tasks]


def test_a_subgraph_task_s_state_points_one_level_down() -> None:
    app = _nested()
    records = _records(app, "sync")
    outer_ns = next(ns for ns in records if len(ns) == 1)
    states = [t["state"] for p in records[outer_ns] for t in p["tasks"] if t["state"]]
    assert states
    inner_ns = states[0]["configurable"]["checkpoint_ns"]
    assert inner_ns.startswith(f"{outer_ns[0]}|inner:")
    assert app.get_state(states[0]).values == {"log": ["r", "p", "c"]}


def test_nested_configs_carry_the_checkpoint_map() -> None:
    app = _nested()
    records = _records(app, "sync")
    inner = next(ns for ns in records if len(ns) == 2)
    config = records[inner][-1]["config"]["configurable"]
    assert set(config["checkpoint_map"]) == {"", inner[0], "|".join(inner)}


def test_exit_durability_keeps_no_subgraph_checkpoints() -> None:
    app = _nested()
    records = _records(app, "exit")
    assert len(records) == 3
    for ns in records:
        history = _history(app, ns)
        assert len(history) == (1 if ns == () else 0)
