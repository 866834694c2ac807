"""Spec: LangGraph's annotation aliases (StreamWriter, Durability, StreamMode) import and fit."""

from __future__ import annotations

from typing import Any, TypedDict, get_args

from flowcore.compat.langgraph import START, Durability, StateGraph, StreamMode, StreamWriter


class State(TypedDict):
    n: int


def test_a_node_annotated_with_stream_writer_gets_the_writer() -> None:
    def node(state: State, writer: StreamWriter) -> dict[str, Any]:
        writer({"seen": state["n"]})
        return {"n": state["n"] + 1}

    graph = StateGraph(State).add_node("node", node).add_edge(START, "node").compile()
    assert list(graph.stream({"n": 1}, stream_mode="custom")) == [{"seen": 1}]


def test_the_literal_aliases_list_the_accepted_strings() -> None:
    assert set(get_args(Durability)) == {"sync", "async", "exit"}
    assert {"values", "updates", "custom", "messages"} <= set(get_args(StreamMode))
