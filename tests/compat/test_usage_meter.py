"""Spec: a compat run's token counts come from the usage meter, charged when each call is made.

Every chat-model call a node of a LangGraph-style graph makes is charged to
that node's meter (and so to its run, and to the node that ran a subgraph)
the moment it ends, whatever becomes of it or of the node: LangChain chat
models from LangChain's own callback (their ``usage_metadata``), flowcore
providers reached through ``create_react_agent`` / ``ask_provider`` /
``"provider:model"`` strings for every request sent, failed and retried ones
included. A run that fails shows the tokens in its result, its events, the
port's outcome and ``usage_report`` events, the run history and
``flowcore runs``; the messages a node returns are never counted again.
"""

from __future__ import annotations

import asyncio
import io
import json
import operator
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.cli import main
from flowcore.compat.langgraph import (
    END,
    START,
    AnyMessage,
    StateGraph,
    add_messages,
    create_react_agent,
)
from flowcore.events import Event
from flowcore.history import SqliteRunHistory
from flowcore.port import Caller, InProcExecutor, RunRequest, UsageTotals
from flowcore.result import RunResult
from tests.llm.loopback import LoopbackServer, Reply, openai_completion

from .fake_chat import ScriptedChat

GUARD = 10.0


class Chat(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    log: Annotated[list[str], operator.add]


async def collect(stream: Any) -> tuple[list[Event], RunResult]:
    async with asyncio.timeout(GUARD), stream as events:
        got = [event async for event in events]
        return got, await events.result()


def _cli(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    return out.getvalue()


def call_then_fail_graph(chat: ScriptedChat) -> Any:
    """``ask``: one good call, then the node raises (its call must still be billed)."""

    async def ask(state: Chat) -> dict[str, Any]:
        await chat.ainvoke("first")
        raise RuntimeError("the node broke after its call")

    graph = StateGraph(Chat)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile(name="call-then-fail")


async def test_a_node_that_called_then_failed_still_bills_the_call() -> None:
    chat = ScriptedChat(replies=["fine"], tokens=(10, 12))

    events, result = await collect(call_then_fail_graph(chat).run_stream({"messages": []}))

    assert result.status == "failed"
    assert (result.usage.input_tokens, result.usage.output_tokens, result.model_calls) == (
        10,
        12,
        1,
    )
    (run,) = result.node_runs
    assert (run.status, run.usage.input_tokens, run.usage.output_tokens) == ("failed", 10, 12)
    shown = [(e.type, getattr(e, "input_tokens", None)) for e in events]
    assert shown == [
        ("run_start", None),
        ("node_start", None),
        ("usage", 10),
        ("node_error", None),
        ("done", None),
    ]


async def test_a_failed_langchain_call_counts_as_a_call_without_tokens() -> None:
    chat = ScriptedChat(replies=["fine", ConnectionError("model down")], tokens=(10, 12))

    async def ask(state: Chat) -> dict[str, Any]:
        await chat.ainvoke("first")
        await chat.ainvoke("second")
        return {}

    graph = StateGraph(Chat)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    events, result = await collect(graph.compile().run_stream({"messages": []}))

    assert result.status == "failed"
    assert (result.usage.input_tokens, result.model_calls) == (10, 2)
    # A refused call reported no figure: no usage event for it.
    assert [e.type for e in events].count("usage") == 1


async def test_a_failed_run_shows_its_tokens_through_the_port_the_history_and_the_cli(
    tmp_path: Path,
) -> None:
    db = tmp_path / "flowcore.db"
    graph = call_then_fail_graph(ScriptedChat(replies=["fine"], tokens=(10, 12)))
    caller = Caller(request_id="req-1", trace_id="tr-1", user_id="ada")

    async with SqliteRunHistory(db) as history, InProcExecutor(history=history) as executor:
        handle = executor.run(RunRequest(graph, {"messages": []}, caller))
        async with asyncio.timeout(GUARD):
            got = [event async for event in handle]
            outcome = await handle.final
        record = await history.get(handle.run_id)

    assert outcome.status == "failed"
    assert outcome.usage == UsageTotals(input_tokens=10, output_tokens=12, cost_usd=None)
    (report,) = [e for e in got if e.type == "usage_report"]
    assert (report.node, report.input_tokens, report.output_tokens) == ("ask", 10, 12)  # type: ignore[attr-defined]
    assert (record.input_tokens, record.output_tokens) == (10, 12)
    assert (record.nodes_by_name["ask"].input_tokens, record.nodes_by_name["ask"].status) == (
        10,
        "failed",
    )
    (listed,) = json.loads(await asyncio.to_thread(_cli, "runs", "list", "--db", str(db), "--json"))
    assert (listed["status"], listed["input_tokens"], listed["output_tokens"]) == (
        "failed",
        10,
        12,
    )


async def test_a_subgraphs_calls_count_for_the_node_that_ran_it_and_once_for_the_run() -> None:
    chat = ScriptedChat(replies=["inner answer"], tokens=(11, 4))

    def answer(state: Chat) -> dict[str, Any]:  # sync: the call is made in a worker thread
        return {"messages": [chat.invoke("hello")], "log": ["answer"]}

    inner = StateGraph(Chat)
    inner.add_node("answer", answer)
    inner.add_edge(START, "answer")
    outer = StateGraph(Chat)
    outer.add_node("agent", inner.compile())
    outer.add_node("after", lambda s: {"log": ["after"]})
    outer.add_edge(START, "agent")
    outer.add_edge("agent", "after")

    events, result = await collect(outer.compile().run_stream({"messages": []}))

    assert result.status == "completed"
    assert [(r.node, r.usage.input_tokens, r.model_calls) for r in result.node_runs] == [
        ("agent", 11, 1),
        ("after", 0, 0),
    ]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (11, 4)
    usages = [(e.node, len(e.namespace)) for e in events if e.type == "usage"]  # type: ignore[attr-defined]
    assert usages == [("answer", 1)]


async def test_a_paused_runs_calls_are_in_its_result() -> None:
    from flowcore.compat.langgraph import InMemorySaver, interrupt

    chat = ScriptedChat(replies=["draft"], tokens=(8, 4))

    async def draft(state: Chat) -> dict[str, Any]:
        await chat.ainvoke("draft")
        return {"log": [str(interrupt("ok?"))]}

    graph = StateGraph(Chat)
    graph.add_node("draft", draft)
    graph.add_edge(START, "draft")
    app = graph.compile(checkpointer=InMemorySaver())

    _, result = await collect(app.run_stream({"messages": []}, thread_id="t-1"))

    assert result.status == "interrupted"
    assert (result.usage.input_tokens, result.usage.output_tokens, result.model_calls) == (8, 4, 1)


# ------------------------------------------- "provider:model" over the real OpenAI SDK


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with LoopbackServer() as running:
        yield running


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def test_a_provider_model_agent_bills_every_request_over_http(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    throttled = {"message": "Slow down", "type": "requests", "code": "rate_limit_exceeded"}
    server.replies = [
        Reply(429, {"error": throttled}, headers={"retry-after": "0"}),
        openai_completion(
            None,
            tool_calls=[
                {
                    "id": "call_w1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
            usage=(30, 7),
        ),
        openai_completion("Sunny in Paris.", usage=(40, 5)),
    ]
    agent = create_react_agent("openai:gpt-test", [get_weather])

    events, result = await collect(agent.run_stream({"messages": [("user", "Paris?")]}))

    assert result.status == "completed", result.errors
    assert result.state["messages"][-1].content == "Sunny in Paris."
    assert len(server.requests) == 3
    assert server.requests[0].body["model"] == "gpt-test"
    # Three requests billed (the throttled one without tokens), two answered with figures.
    assert (result.usage.input_tokens, result.usage.output_tokens, result.model_calls) == (
        70,
        12,
        3,
    )
    usage = [(e.node, e.model, e.input_tokens) for e in events if e.type == "usage"]  # type: ignore[attr-defined]
    assert usage == [("agent", "gpt-test", 30), ("agent", "gpt-test", 40)]
    tools = [(e.type, e.tool_call_id) for e in events if e.type.startswith("tool_call")]  # type: ignore[attr-defined]
    assert tools == [("tool_call_start", "call_w1"), ("tool_call_result", "call_w1")]
