"""Spec: ``compiled.channels`` shows a graph's channels as the public channel classes."""

from __future__ import annotations

import operator
from typing import Annotated, NotRequired, Required

from typing_extensions import TypedDict

from flowcore.compat.langgraph import (
    BinaryOperatorAggregate,
    LastValue,
    NodeBuilder,
    Pregel,
    StateGraph,
)


class State(TypedDict, total=False):
    items: Required[Annotated[list[str], operator.add]]
    name: NotRequired[str]


def _app() -> object:
    return StateGraph(State).add_node("n", lambda s: s).set_entry_point("n").compile()


def test_state_keys_show_as_public_channels() -> None:
    channels = _app().channels  # type: ignore[attr-defined]
    items, name = channels["items"], channels["name"]
    assert isinstance(items, BinaryOperatorAggregate)
    assert items.operator is operator.add
    assert items.typ == list[str]
    assert isinstance(name, LastValue)
    assert name.typ is str


def test_channels_are_fresh_and_do_not_touch_runs() -> None:
    app = _app()
    first = app.channels["items"]  # type: ignore[attr-defined]
    first.update([["x"]])
    assert app.channels["items"].get() == []  # type: ignore[attr-defined]
    assert app.invoke({"items": ["a"]}) == {"items": ["a", "a"]}  # type: ignore[attr-defined]


def test_a_pregel_graph_shows_the_channels_it_was_given() -> None:
    given = {"input": LastValue(int), "output": LastValue(int)}
    node = NodeBuilder().subscribe_only("input").do(lambda x: x).write_to("output")
    app = Pregel(
        nodes={"one": node}, channels=given, input_channels="input", output_channels="output"
    )
    assert app.channels == given
