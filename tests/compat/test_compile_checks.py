"""Spec: mistakes in a graph's declaration fail where they are made.

* a reducer that does not take two arguments fails when the schema is given
  to ``StateGraph``;
* ``compile(checkpointer=...)`` takes ``None``, ``True``, ``False`` or a saver,
  and refuses anything else with LangGraph's ``TypeError``.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import START, InMemorySaver, StateGraph


def _one_arg(a: Any) -> Any:
    return a


class BadReducer(TypedDict):
    hello: Annotated[str, _one_arg]


class State(TypedDict):
    foo: str


def test_a_reducer_with_the_wrong_arity_fails_at_the_schema() -> None:
    with pytest.raises(ValueError, match="Invalid reducer"):
        StateGraph(BadReducer)


def _builder() -> Any:
    return StateGraph(State).add_node("n", lambda s: s).add_edge(START, "n")


@pytest.mark.parametrize("saver", [None, True, False, InMemorySaver()])
def test_a_saver_or_a_flag_is_accepted(saver: Any) -> None:
    assert _builder().compile(checkpointer=saver) is not None


def test_anything_else_is_refused() -> None:
    class NotASaver:
        pass

    with pytest.raises(TypeError, match="Invalid checkpointer provided"):
        _builder().compile(checkpointer=NotASaver())


def test_a_callable_object_added_without_a_name_is_named_after_its_class() -> None:
    class Shout:
        def __call__(self, state: State) -> dict[str, Any]:
            return {"foo": state["foo"].upper()}

    builder = StateGraph(State).add_node(Shout()).add_edge(START, "Shout")
    assert "Shout" in builder.nodes
    assert builder.compile().invoke({"foo": "hi"}) == {"foo": "HI"}
