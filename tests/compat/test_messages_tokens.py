"""Spec: stream_mode="messages" shows a LangChain chat model's output chunk by chunk.

A chat model called in a node reports through the run's callbacks: each
streamed chunk is one ``(chunk, metadata)`` item (metadata naming the node),
the node's returned copy of the same message is not shown again, and a model
tagged ``nostream`` is not shown while it runs (only the node's output is).
"""

from __future__ import annotations

from typing import Any

import pytest

from flowcore.compat.langgraph import START, MessagesState, StateGraph

fake = pytest.importorskip("langchain_core.language_models.fake_chat_models")
lc_messages = pytest.importorskip("langchain_core.messages")


def _graph(model: Any) -> Any:
    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke([lc_messages.HumanMessage("hi")])]}

    return StateGraph(MessagesState).add_node("call", call_model).add_edge(START, "call").compile()


def test_chunks_stream_and_the_returned_message_is_not_repeated() -> None:
    model = fake.GenericFakeChatModel(messages=iter(["sunny today"]))
    items = list(
        _graph(model).stream({"messages": [lc_messages.HumanMessage("q")]}, stream_mode="messages")
    )
    assert "".join(str(m.content) for m, _ in items) == "sunny today"
    assert len(items) > 1
    assert all(isinstance(m, lc_messages.AIMessageChunk) for m, _ in items)
    assert {meta["langgraph_node"] for _, meta in items} == {"call"}


async def test_a_nostream_model_shows_only_the_node_output() -> None:
    model = fake.GenericFakeChatModel(messages=iter(["quiet"])).with_config(tags=["nostream"])
    items = [
        item
        async for item in _graph(model).astream(
            {"messages": [lc_messages.HumanMessage("q")]}, stream_mode="messages"
        )
    ]
    assert [(type(m).__name__, m.content) for m, _ in items] == [("AIMessage", "quiet")]
