"""Spec: bulk_update_state applies supersteps of updates, and update_state is its one-update case.

Each superstep becomes one ``update`` checkpoint whose updates are applied
together; ``as_node="__input__"`` writes a run's input (an ``input``
checkpoint); an update taking the place of a task the checkpoint had
scheduled is stored as that task's writes, so the history shows its result.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    END,
    START,
    InMemorySaver,
    InvalidUpdateError,
    StateGraph,
    StateUpdate,
)


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _app() -> Any:
    def a(state: State) -> dict[str, Any]:
        return {"log": ["a"]}

    def b(state: State) -> dict[str, Any]:
        return {"log": ["b"]}

    graph = StateGraph(State).add_node("a", a).add_node("b", b)
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    return graph.compile(checkpointer=InMemorySaver())


def _history(app: Any, config: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (
            s.metadata["source"],
            s.metadata["step"],
            s.values,
            s.next,
            [(t.name, t.result) for t in s.tasks],
        )
        for s in app.get_state_history(config)
    ]


def test_supersteps_replay_a_run_checkpoint_by_checkpoint() -> None:
    app = _app()
    ran = {"configurable": {"thread_id": "ran"}}
    app.invoke({"log": ["in"]}, ran)
    built = {"configurable": {"thread_id": "built"}}
    app.bulk_update_state(
        built,
        [
            [StateUpdate({"log": ["in"]}, "__input__")],
            [StateUpdate({"log": ["in"]}, START)],
            [StateUpdate({"log": ["a"]}, "a")],
            [StateUpdate({"log": ["b"]}, "b")],
        ],
    )
    built_history = _history(app, built)
    assert [entry[0] for entry in built_history] == ["update", "update", "update", "input"]
    # Everything but the source matches the run's own checkpoints.
    assert [entry[1:] for entry in built_history] == [entry[1:] for entry in _history(app, ran)]


def test_updates_of_one_superstep_share_a_checkpoint() -> None:
    app = _app()
    config = {"configurable": {"thread_id": "t"}}
    app.bulk_update_state(
        config, [[StateUpdate({"log": ["x"]}, "a"), StateUpdate({"log": ["y"]}, "b")]]
    )
    history = list(app.get_state_history(config))
    assert len(history) == 1
    assert history[0].values == {"log": ["x", "y"]}


def test_bad_bulk_updates_are_refused() -> None:
    app = _app()
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ValueError, match="No supersteps provided"):
        app.bulk_update_state(config, [])
    with pytest.raises(ValueError, match="No updates provided"):
        app.bulk_update_state(config, [[]])
    with pytest.raises(InvalidUpdateError, match="as_node is required"):
        app.bulk_update_state(
            config, [[StateUpdate({"log": ["x"]}), StateUpdate({"log": ["y"]}, "a")]]
        )
    with pytest.raises(InvalidUpdateError, match="multiple updates when updating as input"):
        app.bulk_update_state(
            config, [[StateUpdate({"log": []}, "__input__"), StateUpdate({"log": []}, "a")]]
        )
    with pytest.raises(InvalidUpdateError, match="Node nope does not exist"):
        app.bulk_update_state(config, [[StateUpdate({"log": ["x"]}, "nope")]])


async def test_the_async_form_makes_the_same_checkpoints() -> None:
    app = _app()
    config = {"configurable": {"thread_id": "t"}}
    made = await app.abulk_update_state(
        config, [[StateUpdate({"log": ["in"]}, "__input__")], [StateUpdate({"log": ["in"]}, START)]]
    )
    snapshot = await app.aget_state(config)
    assert snapshot.config["configurable"]["checkpoint_id"] == made["configurable"]["checkpoint_id"]
    assert (snapshot.values, snapshot.next) == ({"log": ["in"]}, ("a",))
