"""Spec: graphs that mix LangChain objects in: runnables as nodes, LangChain-typed message keys.

* a runnable (anything with ``invoke``/``ainvoke`` that is not callable, such as a
  LangChain tool or ``RunnableLambda``) is a node: it runs with ``ainvoke(state, config)``
  and ``add_node(runnable)`` takes the runnable's ``name``;
* a key declared ``Annotated[list[<LangChain message class>], add_messages]`` holds
  LangChain messages even when only role pairs or strings were written to it;
* any ``add_messages`` key turns strings, role pairs and dicts into LangChain messages
  once ``langchain_core.messages`` is loaded (and no flowcore message is in the merge),
  into flowcore's own otherwise;
* a flowcore message equals the LangChain message of the same class and fields.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import START, HumanMessage, StateGraph, add_messages


class Counter(TypedDict):
    n: int


class _Doubler:
    """A minimal runnable: not callable, answers invoke/ainvoke."""

    name = "doubler"

    def __init__(self) -> None:
        self.configs: list[Any] = []

    def invoke(self, value: Any, config: Any = None) -> Any:
        raise AssertionError("the graph runs nodes with ainvoke")

    async def ainvoke(self, value: Any, config: Any = None) -> Any:
        self.configs.append(config)
        return {"n": value["n"] * 2}


def test_a_runnable_is_a_node_named_after_itself() -> None:
    runnable = _Doubler()
    graph = StateGraph(Counter).add_node(runnable).add_edge(START, "doubler").compile()
    assert graph.invoke({"n": 21}) == {"n": 42}
    assert runnable.configs
    assert "configurable" in runnable.configs[0]


def test_a_langchain_runnable_lambda_is_a_node() -> None:
    runnables = pytest.importorskip("langchain_core.runnables")
    node = runnables.RunnableLambda(lambda state: {"n": state["n"] + 1})
    graph = StateGraph(Counter).add_node("inc", node).add_edge(START, "inc").compile()
    assert graph.invoke({"n": 1}) == {"n": 2}


def test_a_langchain_typed_key_holds_langchain_messages() -> None:
    messages = pytest.importorskip("langchain_core.messages")

    # Built by call: the local LangChain class stays resolvable under postponed annotations.
    key = Annotated[list[messages.BaseMessage], add_messages]
    chat = TypedDict("chat", {"messages": key})  # type: ignore[misc]  # noqa: UP013

    def echo(state: Any) -> dict[str, Any]:
        return {"messages": [("ai", state["messages"][-1].content)]}

    graph = StateGraph(chat).add_node("echo", echo).add_edge(START, "echo").compile()
    out = graph.invoke({"messages": [("user", "hi")]})["messages"]
    assert [type(m) for m in out] == [messages.HumanMessage, messages.AIMessage]
    assert [m.content for m in out] == ["hi", "hi"]


class _Chat(TypedDict):
    messages: Annotated[list[str], add_messages]


def test_an_untyped_key_makes_langchain_messages_once_langchain_is_loaded() -> None:
    messages = pytest.importorskip("langchain_core.messages")
    graph = StateGraph(_Chat).add_node("noop", lambda s: None).add_edge(START, "noop").compile()
    (message,) = graph.invoke({"messages": "hi"})["messages"]
    assert type(message) is messages.HumanMessage


def test_an_untyped_key_makes_flowcore_messages_without_langchain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "langchain_core.messages", raising=False)
    graph = StateGraph(_Chat).add_node("noop", lambda s: None).add_edge(START, "noop").compile()
    (message,) = graph.invoke({"messages": "hi"})["messages"]
    assert type(message) is HumanMessage


def test_flowcore_and_langchain_messages_compare_by_fields() -> None:
    messages = pytest.importorskip("langchain_core.messages")
    assert HumanMessage("hi", id="1") == messages.HumanMessage("hi", id="1")
    assert HumanMessage("hi", id="1") != messages.HumanMessage("hi", id="2")
    assert HumanMessage("hi", id="1") != messages.AIMessage("hi", id="1")


def test_tool_node_runs_a_langchain_tool_for_a_langchain_ai_message() -> None:
    tools = pytest.importorskip("langchain_core.tools")
    messages = pytest.importorskip("langchain_core.messages")
    from flowcore.compat.langgraph import ToolNode

    @tools.tool
    def shout(text: str) -> str:
        """Shout the text."""
        return text.upper()

    call = {"id": "c1", "name": "shout", "args": {"text": "hey"}}
    out = ToolNode([shout]).invoke({"messages": [messages.AIMessage("", tool_calls=[call])]})
    (reply,) = out["messages"]
    assert (reply.content, reply.tool_call_id, reply.name) == ("HEY", "c1", "shout")
