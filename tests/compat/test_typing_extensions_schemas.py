"""Spec: a node's input schema may be a ``typing_extensions.TypedDict``.

On Python 3.11 ``typing_extensions.TypedDict`` makes classes that
``typing.is_typeddict`` does not recognise; the node still reads only the
keys of its own schema.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from flowcore.compat.langgraph import START, StateGraph


class State(TypedDict):
    hello: str
    bye: str


class HelloOnly(TypedDict):
    hello: str


def test_a_typing_extensions_input_schema_filters_the_state() -> None:
    seen: list[Any] = []

    def node(state: HelloOnly) -> dict[str, Any]:
        seen.append(dict(state))
        return {}

    graph = StateGraph(State).add_node("node", node).add_edge(START, "node").compile()
    graph.invoke({"hello": "there", "bye": "world"})
    assert seen == [{"hello": "there"}]
