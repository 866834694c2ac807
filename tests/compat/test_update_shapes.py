"""Spec: how node results become writes and ``updates`` chunks, in LangGraph's shapes.

* a pydantic model or dataclass result writes its fields, except those left at
  ``None`` whose default is ``None`` too (unless set explicitly on a model);
* a node that writes one key several times (a list of Commands) streams one
  single-key dict per write; a root-state graph's node, each value.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from pydantic import BaseModel

from flowcore.compat.langgraph import START, Command, StateGraph


class State(TypedDict, total=False):
    query: str
    answer: str


class Update(BaseModel):
    query: str | None = None
    answer: str | None = None


@dataclass
class DataUpdate:
    query: str | None = None
    answer: str | None = None


def _one_node(result: Any) -> Any:
    graph = StateGraph(State).add_node("n", lambda s: result).add_edge(START, "n")
    return graph.compile()


def test_unset_none_fields_of_a_model_are_no_update() -> None:
    start = {"query": "q", "answer": "a"}
    assert _one_node(Update(query="new")).invoke(start) == {"query": "new", "answer": "a"}
    assert _one_node(DataUpdate(answer="b")).invoke(start) == {"query": "q", "answer": "b"}


def test_a_field_set_to_none_explicitly_is_written() -> None:
    class Nullable(TypedDict, total=False):
        query: str | None

    graph = StateGraph(Nullable).add_node("n", lambda s: Update(query=None)).add_edge(START, "n")
    assert graph.compile().invoke({"query": "q"}) == {"query": None}


def test_a_key_written_twice_streams_one_dict_per_write() -> None:
    class Log(TypedDict):
        foo: Annotated[str, operator.add]

    def twice(state: Log) -> list[Command[Any]]:
        return [Command(update={"foo": "a1"}), Command(update={"foo": "a2"})]

    graph = StateGraph(Log).add_node("twice", twice).add_edge(START, "twice").compile()
    assert list(graph.stream({"foo": ""}, stream_mode="updates")) == [
        {"twice": [{"foo": "a1"}, {"foo": "a2"}]}
    ]


def test_a_root_state_node_writing_twice_streams_each_value() -> None:
    def twice(state: str) -> list[Command[Any]]:
        return [Command(update="a1"), Command(update="a2")]

    graph = StateGraph(Annotated[str, operator.add]).add_node("twice", twice)
    app = graph.add_edge(START, "twice").compile()
    assert list(app.stream("", stream_mode="updates")) == [{"twice": ["a1", "a2"]}]
    assert app.invoke("") == "a1a2"
