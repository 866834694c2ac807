"""``add_node`` warns about a ``config`` parameter typed other than ``RunnableConfig``."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Optional, TypedDict

import pytest

from flowcore.compat.langgraph import START, StateGraph

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


class State(TypedDict):
    n: int


def test_a_config_typed_as_dict_or_any_warns_and_still_reaches_the_node() -> None:
    def node(state: State, config: dict[str, Any]) -> State:
        return {"n": len(config["configurable"])}

    builder = StateGraph(State)
    with pytest.warns(UserWarning, match="should be typed as 'RunnableConfig'.*not 'dict"):
        builder.add_node("a", node)

    async def other(state: State, config: Any) -> State:
        return state

    with pytest.warns(UserWarning, match="not 'Any'"):
        builder.add_node("b", other)

    app = builder.add_edge(START, "a").compile()
    assert app.invoke({"n": 0}, {"configurable": {"x": 1}})["n"] >= 1


def test_runnable_config_optional_or_untyped_do_not_warn() -> None:
    def typed(state: State, config: RunnableConfig) -> State:
        return state

    def optional(state: State, config: Optional[RunnableConfig]) -> State:  # noqa: UP045
        return state

    def union(state: State, config: RunnableConfig | None) -> State:
        return state

    def untyped(state: State, config) -> State:  # type: ignore[no-untyped-def]
        return state

    builder = StateGraph(State)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for fn in (typed, optional, union, untyped):
            builder.add_node(fn)
