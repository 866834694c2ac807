"""Spec: a router whose first parameter is typed with a schema reads the state as that schema.

It sees this superstep's state with its node's writes applied, limited to the
keys of its own schema (not its node's input schema), and those keys are
state channels even when no node declares them.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import START, StateGraph


class Overall(TypedDict):
    foo: Annotated[int, operator.add]
    bar: str


class Private(TypedDict):
    baz: str


def test_a_router_typed_with_the_state_sees_the_whole_state() -> None:
    seen: list[Any] = []

    def node_1(state: Overall) -> dict[str, Any]:
        return {"foo": 1, "baz": "bar"}

    def node_2(state: Private) -> dict[str, Any]:
        return {"foo": 1, "bar": state["baz"]}

    def router(state: Overall) -> str:
        seen.append(dict(state))
        return "__end__"

    builder = StateGraph(Overall).add_node("node_1", node_1).add_node("node_2", node_2)
    builder.add_edge(START, "node_1").add_edge("node_1", "node_2")
    builder.add_conditional_edges("node_2", router)
    assert builder.compile().invoke({"foo": 0}) == {"foo": 2, "bar": "bar"}
    assert seen == [{"foo": 2, "bar": "bar"}]


def test_a_router_with_a_private_schema_reads_only_its_keys() -> None:
    seen: list[Any] = []

    def node_1(state: Overall) -> dict[str, Any]:
        return {"foo": 1, "baz": "meow"}

    def router(state: Private) -> str:
        seen.append(dict(state))
        return "__end__"

    builder = StateGraph(Overall).add_node("node_1", node_1).add_edge(START, "node_1")
    builder.add_conditional_edges("node_1", router)
    builder.compile().invoke({"foo": 0})
    assert seen == [{"baz": "meow"}]
