"""Spec: add_messages merges LangChain's own message objects in LangChain's family.

When either side holds a ``langchain_core`` message, every item of the merge
(strings, role pairs, role dicts, flowcore messages, chunks) comes out as a
LangChain message made by LangChain's converters; a merge holding flowcore
messages and no LangChain one keeps flowcore's classes, and one holding no
message object at all makes LangChain's (the module is loaded). A small
stand-in module under LangChain's name plays the part here (the real one is
used by test_langchain_message_family.py and LangGraph's own suite).
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from flowcore.compat.langgraph import (
    END,
    START,
    AIMessage,
    HumanMessage,
    MessagesState,
    StateGraph,
    add_messages,
)


class _LcMessage:
    """The few traits of a LangChain message the merge relies on."""

    def __init__(self, content: Any, *, type: str, id: str | None = None) -> None:
        self.content, self.type, self.id = content, type, id

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.content!r}, id={self.id!r})"


class _LcChunk(_LcMessage):
    pass


def _stand_in() -> types.ModuleType:
    module = types.ModuleType("langchain_core.messages")
    roles = {"user": "human", "human": "human", "assistant": "ai", "ai": "ai"}

    def convert_to_messages(items: list[Any]) -> list[_LcMessage]:
        out = []
        for item in items:
            if isinstance(item, tuple):
                out.append(_LcMessage(item[1], type=roles[item[0]]))
            else:
                out.append(_LcMessage(item["content"], type=roles[item["role"]], id=item.get("id")))
        return out

    def messages_from_dict(items: list[dict[str, Any]]) -> list[_LcMessage]:
        return [_LcMessage(d["data"]["content"], type=d["type"], id=d["data"]["id"]) for d in items]

    def message_chunk_to_message(chunk: _LcChunk) -> _LcMessage:
        return _LcMessage(chunk.content, type=chunk.type, id=chunk.id)

    module.BaseMessage = _LcMessage  # type: ignore[attr-defined]
    module.BaseMessageChunk = _LcChunk  # type: ignore[attr-defined]
    module.convert_to_messages = convert_to_messages  # type: ignore[attr-defined]
    module.messages_from_dict = messages_from_dict  # type: ignore[attr-defined]
    module.message_chunk_to_message = message_chunk_to_message  # type: ignore[attr-defined]
    return module


@pytest.fixture
def langchain(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = _stand_in()
    monkeypatch.setitem(sys.modules, "langchain_core.messages", module)
    return module


def test_langchain_messages_are_merged_as_they_are(langchain: types.ModuleType) -> None:
    hello = _LcMessage("hello", type="human", id="1")
    merged = add_messages([hello], _LcMessage("hi", type="ai", id="2"))
    assert merged == [hello, _LcMessage("hi", type="ai", id="2")]
    assert merged[0] is hello


def test_every_item_joins_the_langchain_family(langchain: types.ModuleType) -> None:
    left = [
        _LcMessage("hello", type="human", id="1"),
        {"role": "assistant", "content": "hi", "id": "2"},
    ]
    right = [_LcChunk("chunk", type="ai", id="3"), ("user", "thanks"), HumanMessage("ours", id="4")]
    merged = add_messages(left, right)
    assert [type(m) for m in merged] == [_LcMessage] * 5
    assert [(m.type, m.content) for m in merged] == [
        ("human", "hello"),
        ("ai", "hi"),
        ("ai", "chunk"),
        ("human", "thanks"),
        ("human", "ours"),
    ]
    assert merged[3].id is not None


def test_a_langchain_removal_deletes_by_id(langchain: types.ModuleType) -> None:
    left = [_LcMessage("a", type="human", id="1"), _LcMessage("b", type="ai", id="2")]
    assert add_messages(left, [_LcMessage("", type="remove", id="1")]) == [left[1]]
    with pytest.raises(ValueError, match="doesn't exist"):
        add_messages(left, [_LcMessage("", type="remove", id="9")])


def test_without_langchain_messages_flowcore_classes_are_kept(langchain: types.ModuleType) -> None:
    merged = add_messages([("user", "hi")], [AIMessage("yo", id="2")])
    assert [type(m) for m in merged] == [HumanMessage, AIMessage]


def test_without_any_message_object_the_loaded_langchain_family_is_used(
    langchain: types.ModuleType,
) -> None:
    merged = add_messages([], [("user", "hi"), {"role": "assistant", "content": "yo"}])
    assert [(type(m), m.type, m.content) for m in merged] == [
        (_LcMessage, "human", "hi"),
        (_LcMessage, "ai", "yo"),
    ]


def test_a_graph_state_takes_langchain_messages_from_a_node(langchain: types.ModuleType) -> None:
    def reply(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [_LcMessage("foo", type="human")]}

    graph = StateGraph(MessagesState).add_node("reply", reply)
    app = graph.add_edge(START, "reply").add_edge("reply", END).compile()
    out = app.invoke({"messages": [("user", "meow")]})
    assert [(type(m), m.content) for m in out["messages"]] == [
        (_LcMessage, "meow"),
        (_LcMessage, "foo"),
    ]


def test_real_langchain_messages_and_chunks_merge_as_langgraph_merges_them() -> None:
    messages = pytest.importorskip("langchain_core.messages")
    left = [
        messages.HumanMessage("hello", id="1"),
        {"role": "assistant", "content": "hi", "id": "2"},
    ]
    right = [messages.AIMessageChunk(content="chunk", id="3"), ("user", "thanks")]
    merged = add_messages(left, right)
    assert [type(m) for m in merged] == [
        messages.HumanMessage,
        messages.AIMessage,
        messages.AIMessage,
        messages.HumanMessage,
    ]
    assert merged[:3] == [
        messages.HumanMessage("hello", id="1"),
        messages.AIMessage("hi", id="2"),
        messages.AIMessage("chunk", id="3"),
    ]
    assert add_messages(merged, [messages.RemoveMessage(id="1")])[0].id == "2"
