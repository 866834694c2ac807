"""A graph streamed from a node's code also streams to the node's run."""

from __future__ import annotations

from typing import Any

import pytest

from flowcore.compat.langgraph import START, MessagesState, StateGraph


def _child() -> Any:
    return (
        StateGraph(MessagesState)
        .add_node("chat", lambda state: {"messages": [("ai", "inner")]})
        .add_edge(START, "chat")
        .compile()
    )


@pytest.mark.parametrize("subgraphs", [False, True])
def test_a_caller_streaming_subgraphs_sees_the_chunks_under_the_nodes_namespace(
    subgraphs: bool,
) -> None:
    child = _child()
    received: list[Any] = []

    def node(state: MessagesState) -> dict[str, Any]:
        received.extend(child.stream({"messages": []}, stream_mode="updates"))
        return {}

    parent = StateGraph(MessagesState).add_node("outer", node).add_edge(START, "outer").compile()
    parts = list(parent.stream({"messages": []}, stream_mode="updates", subgraphs=subgraphs))

    assert [list(update) for update in received] == [["chat"]]
    if subgraphs:
        shown = [(tuple(n.split(":")[0] for n in ns), list(update)) for ns, update in parts]
        assert shown == [(("outer",), ["chat"]), ((), ["outer"])]
    else:
        assert parts == [{"outer": None}]


def test_a_graph_streamed_on_a_thread_of_its_own_streams_only_to_its_consumer() -> None:
    child = _child()

    def node(state: MessagesState) -> dict[str, Any]:
        config = {"configurable": {"thread_id": "own"}}
        list(child.stream({"messages": []}, config, stream_mode="updates"))
        return {}

    parent = StateGraph(MessagesState).add_node("outer", node).add_edge(START, "outer").compile()
    parts = list(parent.stream({"messages": []}, stream_mode="updates", subgraphs=True))

    assert [ns for ns, _ in parts] == [()]
