"""A v3 run streams a chat model called in a node as LangChain protocol events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("langchain_core.language_models.chat_model_stream")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessageChunk

from flowcore.compat.langgraph import START, MessagesState, StateGraph

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


def _model_graph(text: str) -> Any:
    model = GenericFakeChatModel(messages=iter([text]))

    def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": model.invoke(state["messages"])}

    return StateGraph(MessagesState).add_node("chat", chat).add_edge(START, "chat").compile()


def test_a_model_invoked_in_a_node_gives_one_live_message_stream() -> None:
    run = _model_graph("red green").stream_events({"messages": "hi"}, version="v3")

    streams = list(run.messages)

    assert len(streams) == 1
    assert streams[0].node == "chat"
    assert "".join(streams[0].text) == "red green"


async def test_the_async_lane_gives_the_same_stream() -> None:
    model = GenericFakeChatModel(messages=iter(["blue"]))

    async def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": await model.ainvoke(state["messages"])}

    graph = StateGraph(MessagesState).add_node("chat", chat).add_edge(START, "chat").compile()
    run = await graph.astream_events({"messages": "hi"}, version="v3")

    streams = [s async for s in run.messages]

    assert len(streams) == 1
    assert (await streams[0].output).text == "blue"


def test_the_events_are_protocol_dicts_naming_the_model_run() -> None:
    parts = list(
        _model_graph("x y").stream(
            {"messages": "hi"},
            {"configurable": {"__pregel_stream_messages_v2": True}},
            stream_mode="messages",
            version="v2",
        )
    )

    events = [part["data"][0] for part in parts]
    assert events[0]["event"] == "message-start"
    assert events[-1]["event"] == "message-finish"
    assert all(part["data"][1]["run_id"] for part in parts)


def test_a_plain_messages_stream_inside_a_v3_run_still_gets_chunks() -> None:
    inner = _model_graph("deep")

    class Outer(MessagesState):
        kinds: list[str]

    def node(state: Outer, config: RunnableConfig) -> dict[str, Any]:
        parts = list(inner.stream({"messages": "hi"}, config, stream_mode="messages"))
        return {"kinds": [type(chunk).__name__ for chunk, _ in parts]}

    outer = StateGraph(Outer).add_node("node", node).add_edge(START, "node").compile()

    kinds = outer.stream_events({"messages": []}, version="v3").output["kinds"]

    assert kinds
    assert set(kinds) == {AIMessageChunk.__name__}
