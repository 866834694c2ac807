"""LangChain chat models and tools a node calls, streamed in the messages and tools modes."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.tools import tool

from flowcore.compat.langgraph import START, MessagesState, StateGraph


@tool
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


def _chat(state: MessagesState) -> dict[str, Any]:
    shout.invoke({"text": "hey"})
    return {"messages": [GenericFakeChatModel(messages=iter(["one two"])).invoke("hi")]}


def _graph(node: Any) -> Any:
    return StateGraph(MessagesState).add_node("chat", node).add_edge(START, "chat").compile()


def test_a_chat_models_tokens_stream_once_each_and_its_message_not_again() -> None:
    parts = list(_graph(_chat).stream({"messages": []}, stream_mode="messages"))

    assert [chunk.content for chunk, _ in parts] == ["one", " ", "two"]
    assert {meta["langgraph_node"] for _, meta in parts} == {"chat"}


def test_a_tools_start_and_end_stream_in_the_tools_mode() -> None:
    parts = list(_graph(_chat).stream({"messages": []}, stream_mode=["tools"]))

    assert [(mode, data["event"]) for mode, data in parts] == [
        ("tools", "tool-started"),
        ("tools", "tool-finished"),
    ]
    assert parts[1][1]["output"] == "HEY"


def test_a_graph_a_node_streams_on_its_own_streams_only_to_that_node() -> None:
    child = _graph(_chat)
    received: list[Any] = []

    def node(state: MessagesState) -> dict[str, Any]:
        received.extend(child.stream({"messages": []}, stream_mode=["messages", "tools"]))
        return {}

    parent = StateGraph(MessagesState).add_node("outer", node).add_edge(START, "outer").compile()

    assert list(parent.stream({"messages": []}, stream_mode=["messages", "tools"])) == []
    assert [mode for mode, _ in received] == ["tools", "tools", "messages", "messages", "messages"]
