"""Spec: a builder's declared channels, and copies of compiled graphs and their nodes.

* ``StateGraph.channels`` maps each declared state key (of every schema the
  builder knows, managed values aside) to its channel, a reducer winning over a
  plain value.
* ``CompiledStateGraph.copy(update)`` is a graph that runs as the original, with
  the attributes ``update`` names replaced; a node's ``copy(update)`` likewise.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import START, BinaryOperatorAggregate, LastValue, StateGraph


class Base(TypedDict):
    question: str


class State(Base, total=False):
    notes: Annotated[list[str], operator.add]


def test_builder_channels() -> None:
    builder = StateGraph(State)
    channels = builder.channels
    assert channels.keys() == {"question", "notes"}
    assert isinstance(channels["question"], LastValue)
    assert isinstance(channels["notes"], BinaryOperatorAggregate)


def test_compiled_copy_runs_and_takes_updates() -> None:
    def note(state: State) -> dict[str, Any]:
        return {"notes": [state["question"]]}

    app = StateGraph(State).add_node("note", note).add_edge(START, "note").compile()
    other = app.copy({"name": "other"})
    assert other is not app
    assert other.name == "other"
    assert app.name != "other"
    assert other.invoke({"question": "q"}) == {"question": "q", "notes": ["q"]}
    node = app.nodes["note"]
    assert node.copy({}) == node
    assert node.copy({"metadata": {"k": 1}}).metadata == {"k": 1}
