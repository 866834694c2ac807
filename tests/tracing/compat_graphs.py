"""LangGraph-style graphs for the tracing specs, importing nothing of OpenTelemetry.

``trip_graph()``: ``plan`` asks a LangChain chat model; then ``notes`` (a sync
node) and ``weather`` (a ``create_react_agent`` on a flowcore provider, run
as a subgraph: its agent asks for two tool calls, its ``ToolNode`` runs them,
its agent answers) run in parallel; ``join`` ends the run.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import (
    END,
    START,
    AnyMessage,
    CompiledStateGraph,
    InMemorySaver,
    RetryPolicy,
    StateGraph,
    add_messages,
    create_react_agent,
    interrupt,
)
from flowcore.llm import LLMResponse, ScriptedProvider, ToolCall, Usage

PLAN_TOKENS = (15, 6)
AGENT_USAGE = (Usage(30, 7), Usage(40, 5))


class Trip(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    log: Annotated[list[str], operator.add]


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def agent_script() -> list[LLMResponse | str]:
    asks, answers = AGENT_USAGE
    return [
        LLMResponse(
            tool_calls=(
                ToolCall("call-paris", "get_weather", {"city": "Paris"}),
                ToolCall("call-rome", "get_weather", {"city": "Rome"}),
            ),
            usage=asks,
            model="m-1",
            finish_reason="tool_calls",
        ),
        LLMResponse(text="Sunny in both.", usage=answers, model="m-1", finish_reason="stop"),
    ]


def weather_agent() -> CompiledStateGraph:
    """The trip's ``weather`` agent on its own (no LangChain: loading LangChain loads
    LangSmith, which imports OpenTelemetry by itself)."""
    agent: CompiledStateGraph = create_react_agent(
        ScriptedProvider(agent_script()), [get_weather], version="v1", name="weather"
    )
    return agent


def trip_graph(*, checkpointer: Any = None) -> CompiledStateGraph:
    """A fresh trip graph (its scripted models answer one run)."""
    from tests.compat.fake_chat import ScriptedChat

    chat = ScriptedChat(replies=["Plan: check the weather."], tokens=PLAN_TOKENS)

    async def plan(state: Trip) -> dict[str, Any]:
        return {"messages": [await chat.ainvoke("plan a trip")], "log": ["plan"]}

    def notes(state: Trip) -> dict[str, Any]:
        return {"log": ["notes"]}

    def join(state: Trip) -> dict[str, Any]:
        return {"log": ["join"]}

    agent = weather_agent()
    graph = StateGraph(Trip)
    graph.add_node("plan", plan)
    graph.add_node("notes", notes)
    graph.add_node("weather", agent)
    graph.add_node("join", join)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "notes")
    graph.add_edge("plan", "weather")
    graph.add_edge(["notes", "weather"], "join")
    graph.add_edge("join", END)
    compiled: CompiledStateGraph = graph.compile(name="trip", checkpointer=checkpointer)
    return compiled


def failing_graph() -> CompiledStateGraph:
    """``ask`` makes one good chat call and one that fails, then fails itself, twice (a retry)."""
    from tests.compat.fake_chat import ScriptedChat

    chat = ScriptedChat(
        replies=["first", ConnectionError("model down"), "again", ConnectionError("model down")],
        tokens=(10, 12),
    )

    async def ask(state: Trip) -> dict[str, Any]:
        await chat.ainvoke("one")
        await chat.ainvoke("two")  # raises
        return {"log": ["never"]}

    graph = StateGraph(Trip)
    graph.add_node("ask", ask, retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.0))
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    compiled: CompiledStateGraph = graph.compile(name="failing")
    return compiled


def pausing_graph() -> CompiledStateGraph:
    """``draft`` asks a chat model, then ``approve`` pauses on ``interrupt()``."""
    from tests.compat.fake_chat import ScriptedChat

    chat = ScriptedChat(replies=["a draft"], tokens=(8, 4))

    async def draft(state: Trip) -> dict[str, Any]:
        return {"messages": [await chat.ainvoke("draft")]}

    def approve(state: Trip) -> dict[str, Any]:
        return {"log": [str(interrupt("ok?"))]}

    graph = StateGraph(Trip)
    graph.add_node("draft", draft)
    graph.add_node("approve", approve)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "approve")
    graph.add_edge("approve", END)
    compiled: CompiledStateGraph = graph.compile(name="pausing", checkpointer=InMemorySaver())
    return compiled
