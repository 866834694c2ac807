"""``StateGraph.managed`` names the state keys the run computes itself."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from flowcore.compat.langgraph import IsLastStep, RemainingSteps, StateGraph


class State(TypedDict):
    n: int
    remaining_steps: NotRequired[RemainingSteps]


class Other(TypedDict):
    last: IsLastStep


def test_managed_keys_of_the_state_and_node_schemas_are_listed() -> None:
    builder = StateGraph(State)
    assert set(builder.managed) == {"remaining_steps"}

    builder.add_node("a", lambda s: {}, input_schema=Other)

    assert set(builder.managed) == {"remaining_steps", "last"}


def test_a_state_without_managed_keys_lists_none() -> None:
    class Plain(TypedDict):
        n: int

    assert StateGraph(Plain).managed == {}
