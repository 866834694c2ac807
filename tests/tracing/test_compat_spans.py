"""Spec: LangGraph-style (compat) runs are traced by ``flowcore.tracing`` like native runs.

Whichever way a compat graph is run (``invoke``, ``ainvoke``, ``stream``,
``astream``, ``run_stream``, the executor port), a config carrying
``flowcore.tracing.enable(provider)`` gives one tree: ``invoke_workflow
<graph>`` over one ``node <name>`` span per task (parallel tasks side by
side, a subgraph's nodes under the node that ran it), a ``chat <model>``
span for each chat-model call a node made (a LangChain chat model, or a
flowcore provider) and an ``execute_tool <tool>`` span per ``ToolNode``
call, with the model's tool call id. A failed node sets ERROR status on its
span and the run's; a paused node is closed as interrupted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
pytest.importorskip("langchain_core")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import flowcore.tracing
from flowcore.compat.langgraph import Command, CompiledStateGraph
from flowcore.errors import InvalidInputError
from flowcore.port import Caller, InProcExecutor, RunRequest

from .compat_graphs import AGENT_USAGE, PLAN_TOKENS, failing_graph, pausing_graph, trip_graph

GUARD = 30.0
TRIP_INPUT: dict[str, Any] = {"messages": [("user", "Plan a trip")]}

TRIP_TREE = "\n".join(
    [
        "invoke_workflow trip  [input_tokens=85 output_tokens=18 flowcore.run.status=completed]",
        "  node plan",
        "    chat scripted-chat  [input_tokens=15 output_tokens=6 response.finish_reasons=stop]",
        "  node notes",
        "  node weather",
        "    node agent",
        "      chat m-1  [input_tokens=30 output_tokens=7 response.finish_reasons=tool_calls]",
        "    node tools",
        "      execute_tool get_weather  [tool.call.id=call-paris]",
        "      execute_tool get_weather  [tool.call.id=call-rome]",
        "    node agent",
        "      chat m-1  [input_tokens=40 output_tokens=5 response.finish_reasons=stop]",
        "  node join",
    ]
)
SHOWN = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.response.finish_reasons",
    "gen_ai.tool.call.id",
    "flowcore.run.status",
    "flowcore.node.interrupted",
    "error.type",
)


def traced() -> tuple[InMemorySpanExporter, flowcore.tracing.Tracing]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, flowcore.tracing.enable(provider)


def tree(spans: tuple[ReadableSpan, ...]) -> str:
    return flowcore.tracing.span_tree(spans, attributes=SHOWN)


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


# -------------------------------------------------------- every front door


async def _invoke(app: CompiledStateGraph, config: dict[str, Any]) -> None:
    await asyncio.to_thread(app.invoke, TRIP_INPUT, config)


async def _ainvoke(app: CompiledStateGraph, config: dict[str, Any]) -> None:
    await app.ainvoke(TRIP_INPUT, config)


async def _stream(app: CompiledStateGraph, config: dict[str, Any]) -> None:
    await asyncio.to_thread(lambda: list(app.stream(TRIP_INPUT, config, stream_mode="updates")))


async def _astream(app: CompiledStateGraph, config: dict[str, Any]) -> None:
    async for _ in app.astream(TRIP_INPUT, config, stream_mode=["values", "debug"]):
        pass


async def _run_stream(app: CompiledStateGraph, config: dict[str, Any]) -> None:
    async with app.run_stream(TRIP_INPUT, config) as events:
        async for _ in events:
            pass
        assert (await events.result()).status == "completed"


async def _port(app: CompiledStateGraph, config: dict[str, Any]) -> None:
    async with InProcExecutor(tracing=config["tracing"]) as executor:
        handle = executor.run(RunRequest(app, TRIP_INPUT, Caller("req-1", "trace-1")))
        async for _ in handle:
            pass
        assert (await handle.final).status == "completed"


FRONT_DOORS: dict[str, Callable[[CompiledStateGraph, dict[str, Any]], Awaitable[None]]] = {
    "invoke": _invoke,
    "ainvoke": _ainvoke,
    "stream": _stream,
    "astream": _astream,
    "run_stream": _run_stream,
    "port": _port,
}


@pytest.mark.parametrize("door", list(FRONT_DOORS))
async def test_every_front_door_gives_the_same_tree_of_nodes_model_and_tool_calls(
    door: str,
) -> None:
    exporter, tracing = traced()

    async with asyncio.timeout(GUARD):
        await FRONT_DOORS[door](trip_graph(), {"tracing": tracing})

    assert tree(exporter.get_finished_spans()) == TRIP_TREE
    assert tracing.open_runs == 0


async def test_spans_carry_the_gen_ai_attributes_and_the_run_ids() -> None:
    exporter, tracing = traced()

    await trip_graph().ainvoke(TRIP_INPUT, {"tracing": tracing, "run_id": "run-42"})

    spans = exporter.get_finished_spans()
    (run,) = by_name(spans, "invoke_workflow trip")
    assert run.attributes is not None
    assert run.attributes["flowcore.run.id"] == "run-42"
    assert run.attributes["flowcore.graph.name"] == "trip"
    (plan_call,) = by_name(spans, "chat scripted-chat")
    assert plan_call.kind is SpanKind.CLIENT
    attrs = dict(plan_call.attributes or {})
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.response.model"] == "scripted-chat"
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == PLAN_TOKENS
    agent_calls = by_name(spans, "chat m-1")
    assert [dict(c.attributes or {})["gen_ai.provider.name"] for c in agent_calls] == [
        "scripted",
        "scripted",
    ]
    assert [dict(c.attributes or {})["gen_ai.usage.input_tokens"] for c in agent_calls] == [
        u.input_tokens for u in AGENT_USAGE
    ]
    # The parallel nodes overlap in time; each call lies inside its node.
    (plan,) = by_name(spans, "node plan")
    assert plan.start_time is not None
    assert plan_call.start_time is not None
    assert plan.start_time <= plan_call.start_time
    assert plan_call.end_time is not None
    assert plan.end_time is not None
    assert plan_call.end_time <= plan.end_time


async def test_a_failed_node_and_its_run_have_error_status_and_its_calls_are_still_spans() -> None:
    exporter, tracing = traced()

    with pytest.raises(ConnectionError, match="model down"):
        await failing_graph().ainvoke({"log": []}, {"tracing": tracing})

    spans = exporter.get_finished_spans()
    # Two attempts, each with one answered call (a span) and one refused call (no tokens).
    assert tree(spans) == "\n".join(
        [
            "invoke_workflow failing  [input_tokens=20 output_tokens=24 "
            "flowcore.run.status=failed error.type=ConnectionError status=ERROR]",
            "  node ask  [error.type=ConnectionError status=ERROR]",
            "    chat scripted-chat  [input_tokens=10 output_tokens=12 "
            "response.finish_reasons=stop]",
            "    chat scripted-chat  [input_tokens=10 output_tokens=12 "
            "response.finish_reasons=stop]",
        ]
    )
    (node,) = by_name(spans, "node ask")
    assert node.status.status_code is StatusCode.ERROR
    assert dict(node.attributes or {})["flowcore.node.attempts"] == 2
    assert [e.name for e in node.events] == ["exception"]


async def test_a_paused_run_closes_the_paused_node_and_the_resume_is_a_run_of_its_own() -> None:
    exporter, tracing = traced()
    app = pausing_graph()
    config = {"tracing": tracing, "configurable": {"thread_id": "t-1"}}

    paused = await app.ainvoke({"log": []}, config)
    first = tree(exporter.get_finished_spans())
    exporter.clear()
    done = await app.ainvoke(Command(resume="yes"), config)

    assert "__interrupt__" in paused
    assert first == "\n".join(
        [
            "invoke_workflow pausing  [input_tokens=8 output_tokens=4 "
            "flowcore.run.status=interrupted]",
            "  node draft",
            "    chat scripted-chat  [input_tokens=8 output_tokens=4 response.finish_reasons=stop]",
            "  node approve  [flowcore.node.interrupted=True]",
        ]
    )
    assert done["log"] == ["yes"]
    assert tree(exporter.get_finished_spans()) == "\n".join(
        [
            "invoke_workflow pausing  [input_tokens=0 output_tokens=0 "
            "flowcore.run.status=completed]",
            "  node approve",
        ]
    )
    (run,) = by_name(exporter.get_finished_spans(), "invoke_workflow pausing")
    assert dict(run.attributes or {})["flowcore.thread.id"] == "t-1"


async def test_something_else_under_the_tracing_key_is_refused_before_the_compat_run() -> None:
    with pytest.raises(InvalidInputError, match="run observer"):
        await trip_graph().ainvoke(TRIP_INPUT, {"tracing": "yes please"})


async def test_an_untraced_compat_run_makes_no_span() -> None:
    exporter, tracing = traced()

    await trip_graph().ainvoke(TRIP_INPUT)

    assert exporter.get_finished_spans() == ()
    assert tracing.open_runs == 0


# ----------------------------------------- "provider:model" over the real OpenAI SDK


async def test_a_provider_model_agent_over_http_gives_chat_spans_of_the_real_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flowcore.compat.langgraph import create_react_agent
    from tests.llm.loopback import LoopbackServer, openai_completion

    from .compat_graphs import get_weather

    exporter, tracing = traced()
    async with LoopbackServer() as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        call = {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
        server.replies = [
            openai_completion(
                None, tool_calls=[{"id": "call_o1", "type": "function", "function": call}]
            ),
            openai_completion("Clear.", usage=(20, 2)),
        ]
        agent = create_react_agent("openai:gpt-test", [get_weather], name="oslo")
        async with asyncio.timeout(GUARD):
            await agent.ainvoke({"messages": [("user", "Oslo?")]}, {"tracing": tracing})

    assert tree(exporter.get_finished_spans()) == "\n".join(
        [
            "invoke_workflow oslo  [input_tokens=29 output_tokens=5 flowcore.run.status=completed]",
            "  node agent",
            "    chat gpt-test  [input_tokens=9 output_tokens=3 "
            "response.finish_reasons=tool_calls]",
            "  node tools",
            "    execute_tool get_weather  [tool.call.id=call_o1]",
            "  node agent",
            "    chat gpt-test  [input_tokens=20 output_tokens=2 response.finish_reasons=stop]",
        ]
    )
    (first, _) = by_name(exporter.get_finished_spans(), "chat gpt-test")
    assert dict(first.attributes or {})["gen_ai.provider.name"] == "openai"
