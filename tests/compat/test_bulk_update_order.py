"""Spec: updates applied together fold in the order given, whatever nodes they stand for."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import START, InMemorySaver, StateGraph, StateUpdate


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def test_bulk_updates_as_different_nodes_fold_in_the_given_order() -> None:
    builder = StateGraph(State)
    builder.add_node("zeta", lambda state: {})
    builder.add_node("alpha", lambda state: {})
    builder.add_edge(START, "zeta")
    builder.add_edge("zeta", "alpha")
    graph: Any = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["in"]}, config)
    given = ["u1", "u2", "u3", "u4"]
    graph.bulk_update_state(
        config,
        [
            [
                StateUpdate({"log": [u]}, "zeta" if i % 2 == 0 else "alpha")
                for i, u in enumerate(given)
            ]
        ],
    )
    assert graph.get_state(config).values["log"] == ["in", *given]
