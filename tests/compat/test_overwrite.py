"""Spec: Overwrite replaces a reducer key's value instead of going through the reducer.

``Overwrite(value)``, ``{"__overwrite__": value}`` and the JSON form of
``Overwrite`` all replace; what the same superstep wrote after it is dropped;
two in one superstep are an error; and the write survives a saver (it is
stored as plain data).
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
    Overwrite,
    SqliteSaver,
    StateGraph,
)


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _chain(replacement: Any, checkpointer: Any = None) -> Any:
    def a(state: State) -> dict[str, Any]:
        return {"log": ["a"]}

    def b(state: State) -> dict[str, Any]:
        return {"log": replacement}

    graph = StateGraph(State).add_node("a", a).add_node("b", b)
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    return graph.compile(checkpointer=checkpointer)


@pytest.mark.parametrize(
    "replacement",
    [Overwrite(["b"]), {"__overwrite__": ["b"]}, {"value": ["b"], "type": "__overwrite__"}],
)
def test_each_form_replaces_the_value(replacement: Any) -> None:
    assert _chain(replacement).invoke({"log": ["start"]}) == {"log": ["b"]}


def test_the_write_survives_a_saver(tmp_path: Any) -> None:
    config = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(str(tmp_path / "s.db")) as saver:
        app = _chain(Overwrite(["b"]), saver)
        assert app.invoke({"log": ["start"]}, config) == {"log": ["b"]}
        assert app.get_state(config).values == {"log": ["b"]}
    assert _chain(Overwrite(["b"]), InMemorySaver()).invoke({"log": []}, config) == {"log": ["b"]}


def _fan_out(b_writes: Any, c_writes: Any) -> Any:
    graph = StateGraph(State)
    graph.add_node("a", lambda s: {"log": ["a"]})
    graph.add_node("b", lambda s: {"log": b_writes})
    graph.add_node("c", lambda s: {"log": c_writes})
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("a", "c")
    return graph.compile()


def test_writes_after_it_in_the_same_superstep_are_dropped() -> None:
    # b's write comes before c's (node order): c's plain write after the Overwrite is dropped.
    assert _fan_out(Overwrite(["b"]), ["c"]).invoke({"log": []}) == {"log": ["b"]}
    # c's Overwrite comes after b's plain write, which it replaces.
    assert _fan_out(["b"], Overwrite(["c"])).invoke({"log": []}) == {"log": ["c"]}


def test_two_in_one_superstep_are_refused() -> None:
    with pytest.raises(InvalidUpdateError, match="only one Overwrite value per super-step"):
        _fan_out(Overwrite(["b"]), Overwrite(["c"])).invoke({"log": []})
