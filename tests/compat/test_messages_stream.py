"""The messages stream mode gives a chat model's tokens as the node calls it."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

from flowcore.compat.langgraph import START, MessagesState, StateGraph, entrypoint, task
from flowcore.compat.langgraph._graph_ns import graph_namespace


def _chat(state: MessagesState) -> dict[str, Any]:
    return {"messages": [GenericFakeChatModel(messages=iter(["one two"])).invoke("hi")]}


def _graph(node: Any) -> Any:
    return StateGraph(MessagesState).add_node("chat", node).add_edge(START, "chat").compile()


def test_each_token_streams_and_the_returned_message_not_again() -> None:
    parts = list(_graph(_chat).stream({"messages": []}, stream_mode="messages"))

    assert [chunk.content for chunk, _ in parts] == ["one", " ", "two"]
    assert {meta["langgraph_node"] for _, meta in parts} == {"chat"}


def test_a_subgraphs_tokens_stream_under_its_namespace_only_with_subgraphs() -> None:
    parent = StateGraph(MessagesState).add_node("sub", _graph(_chat)).add_edge(START, "sub")

    # Without subgraphs, the subgraph node's returned message shows whole instead.
    whole = list(parent.compile().stream({"messages": []}, stream_mode="messages"))
    assert [(chunk.content, meta["langgraph_node"]) for chunk, meta in whole] == [
        ("one two", "sub")
    ]
    parts = list(parent.compile().stream({"messages": []}, stream_mode="messages", subgraphs=True))
    assert [(ns[0].split(":")[0], chunk.content) for ns, (chunk, _) in parts] == [
        ("sub", "one"),
        ("sub", " "),
        ("sub", "two"),
    ]


def test_a_task_calls_tokens_stream_in_its_callers_graph() -> None:
    @task
    def ask() -> None:
        GenericFakeChatModel(messages=iter(["a b"])).invoke("hi")

    @entrypoint()
    def workflow(inputs: dict[str, Any]) -> None:
        ask().result()

    parts = list(workflow.stream({}, stream_mode="messages", subgraphs=True))

    assert [(ns, chunk.content) for ns, (chunk, _) in parts] == [((), "a"), ((), " "), ((), "b")]


def test_graph_namespace_drops_the_tasks_segment_and_its_callers() -> None:
    assert graph_namespace({"langgraph_checkpoint_ns": "a:1|b:2"}) == ("a:1",)
    call = ("__pregel_push", ("__pregel_pull", "wf"), 0, True)
    assert graph_namespace({"langgraph_checkpoint_ns": "wf:1|t:2", "langgraph_path": call}) == ()


def test_a_pushed_message_streams_at_once_and_is_written_to_its_key() -> None:
    from flowcore.compat.langgraph import AIMessage, push_message

    def node(state: MessagesState) -> dict[str, Any]:
        push_message(AIMessage(id="only-streamed", content="a"), state_key=None)
        push_message(AIMessage(id="kept", content="b"))
        return {}

    graph = _graph(node)
    parts = list(graph.stream({"messages": []}, stream_mode=["messages", "values"]))

    assert [data[0].id for mode, data in parts if mode == "messages"] == ["only-streamed", "kept"]
    assert [m.id for m in graph.invoke({"messages": []})["messages"]] == ["kept"]


def test_push_message_needs_a_node_and_an_id() -> None:
    from flowcore.compat.langgraph import AIMessage, push_message

    with pytest.raises(RuntimeError):
        push_message(AIMessage(id="x", content="a"))

    def node(state: MessagesState) -> dict[str, Any]:
        push_message(AIMessage(content="no id"))
        return {}

    with pytest.raises(ValueError, match="Message ID is required"):
        _graph(node).invoke({"messages": []})
