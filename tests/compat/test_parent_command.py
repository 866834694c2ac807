"""Spec: a node's ``Command(graph=Command.PARENT)`` goes to the graph above it.

Inside a subgraph the parent applies the command as the subgraph node's result;
in a root graph there is no graph above, so the run ends with ``ParentCommand``
carrying the command (what LangGraph's callers catch).
"""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    START,
    Command,
    InMemorySaver,
    ParentCommand,
    StateGraph,
)


class State(TypedDict, total=False):
    value: str
    key: str


def _to_parent(state: State) -> Any:
    return Command(graph=Command.PARENT, goto="elsewhere", update={"key": "value"})


def test_a_root_graph_raises_the_command_it_cannot_send_up() -> None:
    graph = StateGraph(State).add_node("up", _to_parent).add_edge(START, "up").compile()
    with pytest.raises(ParentCommand) as caught:
        graph.invoke({"value": "start"})
    assert caught.value.command.goto == "elsewhere"
    assert caught.value.command.update == {"key": "value"}


async def test_the_async_path_and_a_checkpointer_raise_it_too() -> None:
    graph = (
        StateGraph(State)
        .add_node("up", _to_parent)
        .add_edge(START, "up")
        .compile(checkpointer=InMemorySaver())
    )
    with pytest.raises(ParentCommand) as caught:
        await graph.ainvoke({"value": "start"}, {"configurable": {"thread_id": "t"}})
    assert caught.value.args[0].goto == "elsewhere"


def test_a_subgraph_command_updates_the_parent() -> None:
    child = StateGraph(State).add_node("up", _to_parent).add_edge(START, "up").compile()

    def elsewhere(state: State) -> State:
        return {"value": f"{state.get('value')}+{state.get('key')}"}

    parent = (
        StateGraph(State)
        .add_node("child", child)
        .add_node("elsewhere", elsewhere)
        .add_edge(START, "child")
        .compile()
    )
    assert parent.invoke({"value": "start"}) == {"value": "start+value", "key": "value"}
