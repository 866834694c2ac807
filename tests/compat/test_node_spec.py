"""Spec: a declared node shows its callable as LangGraph's builder does (``.runnable.func``)."""

from __future__ import annotations

from typing import Any, TypedDict

from flowcore.compat.langgraph import START, StateGraph


class State(TypedDict):
    n: int


def test_the_runnable_of_a_node_is_what_was_added() -> None:
    def bump(state: State) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    graph = StateGraph(State).add_node("bump", bump).add_edge(START, "bump")
    assert graph.nodes["bump"].runnable.func is bump
    assert graph.nodes["bump"].runnable.name == "bump"
    assert graph.compile().invoke({"n": 1}) == {"n": 2}
