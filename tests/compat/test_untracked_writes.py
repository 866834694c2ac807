"""Spec: an ``UntrackedValue`` key's value never reaches a saver.

Neither the writes to it nor its value inside a ``Send`` of the state are
stored, so a key may hold what cannot be stored (a lock); the run itself
still passes it along.
"""

from __future__ import annotations

import operator
import threading
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import START, InMemorySaver, Send, StateGraph
from flowcore.compat.langgraph._channel_api import UntrackedValue


class Resource:
    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()


class State(TypedDict):
    log: Annotated[list[str], operator.add]
    resource: Annotated[Resource, UntrackedValue]


def test_an_untracked_value_travels_in_a_send_but_is_never_stored() -> None:
    def setup(state: State) -> dict[str, Any]:
        return {"log": ["setup"], "resource": Resource("first")}

    def tool(state: State) -> dict[str, Any]:
        return {"log": [f"used {state['resource'].name}"], "resource": Resource("second")}

    builder = StateGraph(State)
    builder.add_node("setup", setup)
    builder.add_node("tool", tool)
    builder.add_edge(START, "setup")
    builder.add_conditional_edges("setup", lambda state: [Send("tool", state)])
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}

    out = graph.invoke({"log": []}, config)

    assert out["log"] == ["setup", "used first"]
    assert out["resource"].name == "second"
    assert "resource" not in graph.get_state(config).values
    for saved in saver.list(config):
        assert all(chan != "resource" for _, chan, _ in saved.pending_writes or ())
