"""Spec: a deferred node behind a join stays due across a pause.

When the join of a ``defer=True`` node opens in the step a run pauses after
(``interrupt_after``), the saved state lists the deferred node as next and
resuming runs it.
"""

from __future__ import annotations

import contextlib
import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import InMemorySaver, SqliteSaver, StateGraph


class State(TypedDict, total=False):
    docs: Annotated[list[str], operator.add]
    answer: str


def _graph(saver: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("start", lambda s: {})
    builder.add_node("one", lambda s: {"docs": ["one"]})
    builder.add_node("two", lambda s: {"docs": ["two"]})
    builder.add_node("mid", lambda s: {})
    builder.add_node("qa", lambda s: {"answer": "+".join(sorted(s["docs"]))}, defer=True)
    builder.set_entry_point("start")
    builder.add_edge("start", "two").add_edge("start", "mid").add_edge("mid", "one")
    builder.add_edge(["one", "two"], "qa").set_finish_point("qa")
    return builder.compile(checkpointer=saver, interrupt_after=["one"])


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_deferred_node_runs_after_resuming(kind: str) -> None:
    with contextlib.ExitStack() as stack:
        saver = (
            InMemorySaver()
            if kind == "memory"
            else stack.enter_context(SqliteSaver.from_conn_string(":memory:"))
        )
        graph = _graph(saver)
        config = {"configurable": {"thread_id": "t"}}
        graph.invoke({"docs": []}, config)
        assert graph.get_state(config).next == ("qa",)
        assert graph.invoke(None, config)["answer"] == "one+two"
