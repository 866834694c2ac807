"""Spec: a run's input is stored in its input checkpoint even when it holds a Command or Overwrite.

A ``Command`` on a new thread is the run's input (its update applied as the
input), and an ``Overwrite`` in the input replaces the key's value; both are
kept in plain form so a replay from the input checkpoint sees the same input.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import START, Command, InMemorySaver, Overwrite, StateGraph
from flowcore.compat.langgraph._input_channel import InputValue, plain_input, restored_input


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _graph() -> Any:
    builder = StateGraph(State)
    builder.add_node("node", lambda state: {"log": ["node"]})
    builder.add_edge(START, "node")
    return builder.compile(checkpointer=InMemorySaver())


def test_a_command_on_a_new_thread_is_the_run_s_input() -> None:
    graph = _graph()
    config = {"configurable": {"thread_id": "t"}}
    out = graph.invoke(Command(update={"log": ["cmd"]}), config)
    assert out["log"][-1] == "node"
    assert "cmd" in out["log"]
    first = list(graph.get_state_history(config))[-1]
    replayed = graph.invoke(None, first.config)
    assert replayed["log"] == out["log"]


def test_an_overwrite_in_the_input_is_stored_and_replayed() -> None:
    graph = _graph()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["a"]}, config)
    out = graph.invoke({"log": Overwrite(["b"])}, config)
    assert out["log"] == ["b", "node"]


def test_the_plain_forms_read_back() -> None:
    command = Command(update={"log": Overwrite(["x"])}, goto="node")
    stored = plain_input(command)
    assert stored == {
        "__command__": {
            "graph": None,
            "update": {"log": {"__overwrite__": ["x"]}},
            "resume": None,
            "goto": "node",
        }
    }
    back = restored_input(stored)
    assert isinstance(back, Command)
    assert back.goto == "node"
    assert back.update == {"log": {"__overwrite__": ["x"]}}
    channel = InputValue("__start__")
    channel.restore(stored)
    assert isinstance(channel.get(), Command)
