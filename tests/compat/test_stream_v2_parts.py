"""Spec: version="v2" streams typed-dict parts and invoke returns a GraphOutput.

A part is ``{"type": mode, "ns": namespace, "data": chunk}``; a ``values``
part carries the pending interrupts beside its data instead of inside it, and
a dataclass or pydantic state is given as its own class.
"""

from __future__ import annotations

import asyncio
import dataclasses
import operator
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel

from flowcore.compat.langgraph import (
    END,
    START,
    GraphOutput,
    InMemorySaver,
    LangGraphDeprecatedSinceV11,
    StateGraph,
    interrupt,
)


class State(TypedDict):
    value: str
    items: Annotated[list[str], operator.add]


def _app(schema: Any = State, *, checkpointer: Any = None) -> Any:
    def a(state: Any) -> dict[str, Any]:
        value = state["value"] if isinstance(state, dict) else state.value
        return {"value": value + "_a", "items": ["a"]}

    graph = StateGraph(schema)
    graph.add_node("a", a)
    graph.add_edge(START, "a").add_edge("a", END)
    return graph.compile(checkpointer=checkpointer)


def test_parts_name_their_mode_and_namespace() -> None:
    parts = list(
        _app().stream({"value": "x", "items": []}, stream_mode=["values", "updates"], version="v2")
    )
    assert [p["type"] for p in parts] == ["values", "updates", "values"]
    assert all(p["ns"] == () for p in parts)
    assert parts[1]["data"] == {"a": {"value": "x_a", "items": ["a"]}}
    assert parts[-1] == {
        "type": "values",
        "ns": (),
        "data": {"value": "x_a", "items": ["a"]},
        "interrupts": (),
    }


def test_subgraph_parts_carry_the_subgraph_namespace() -> None:
    outer = StateGraph(State)
    outer.add_node("inner", _app())
    outer.add_edge(START, "inner").add_edge("inner", END)
    parts = list(
        outer.compile().stream(
            {"value": "x", "items": []}, stream_mode="updates", subgraphs=True, version="v2"
        )
    )
    spaces = [p["ns"] for p in parts]
    assert spaces[-1] == ()
    assert any(ns and ns[0].startswith("inner:") for ns in spaces)


def test_a_values_part_moves_interrupts_out_of_its_data() -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"value": interrupt("name?")}

    graph = StateGraph(State)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    app = graph.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    parts = list(
        app.stream({"value": "x", "items": []}, config, stream_mode="values", version="v2")
    )
    assert all("__interrupt__" not in p["data"] for p in parts)
    assert [i.value for i in parts[-1]["interrupts"]] == ["name?"]
    out = app.invoke(
        {"value": "x", "items": []}, {"configurable": {"thread_id": "t2"}}, version="v2"
    )
    assert isinstance(out, GraphOutput)
    assert out.value == {"value": "x", "items": []}
    assert [i.value for i in out.interrupts] == ["name?"]


def test_invoke_v2_returns_the_value_and_the_interrupts() -> None:
    out = _app().invoke({"value": "x", "items": []}, version="v2")
    assert out == GraphOutput(value={"value": "x_a", "items": ["a"]}, interrupts=())
    # Reading it as the dict it replaced still works, with LangGraph's deprecation warning.
    with pytest.warns(LangGraphDeprecatedSinceV11, match=r"result\[key\]"):
        assert out["value"] == "x_a"
    with pytest.warns(LangGraphDeprecatedSinceV11, match="key in result"):
        assert "__interrupt__" not in out
    async_out = asyncio.run(_app().ainvoke({"value": "x", "items": []}, version="v2"))
    assert async_out.value == out.value


class Model(BaseModel):
    value: str
    items: Annotated[list[str], operator.add]


@dataclasses.dataclass
class Data:
    value: str
    items: Annotated[list[str], operator.add] = dataclasses.field(default_factory=list)


def test_a_pydantic_or_dataclass_state_comes_as_its_class() -> None:
    for schema in (Model, Data):
        app = _app(schema)
        out = app.invoke({"value": "x", "items": []}, version="v2")
        assert isinstance(out.value, schema)
        assert out.value.value == "x_a"
        parts = list(app.stream({"value": "x", "items": []}, stream_mode="values", version="v2"))
        assert all(isinstance(p["data"], schema) for p in parts)


def test_checkpoint_parts_give_the_state_class_once_every_key_is_set() -> None:
    app = _app(Model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "c"}}
    parts = list(
        app.stream({"value": "x", "items": []}, config, stream_mode="checkpoints", version="v2")
    )
    assert isinstance(parts[-1]["data"]["values"], Model)


def test_v1_is_unchanged() -> None:
    chunks = list(_app().stream({"value": "x", "items": []}, stream_mode="values"))
    assert chunks[-1] == {"value": "x_a", "items": ["a"]}
    assert _app().invoke({"value": "x", "items": []}) == {"value": "x_a", "items": ["a"]}
