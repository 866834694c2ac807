"""Spec: a traced run is a tree of OpenTelemetry spans built from its events.

run (``invoke_workflow``) > node > model call (``chat``) / tool call
(``execute_tool``), with the GenAI semantic-convention attributes, flowcore's
run, graph and thread ids, and error status where something failed. Checked
with the OpenTelemetry SDK's in-memory exporter.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import flowcore.tracing
from flowcore import START, Graph, interrupt
from flowcore.checkpoint import InMemoryCheckpointer
from flowcore.errors import InvalidInputError
from flowcore.secrets import SecretRedactor

from .graphs import S, answers, asks, tool_loop_graph


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracing(exporter: InMemorySpanExporter) -> flowcore.tracing.Tracing:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return flowcore.tracing.enable(provider)


def by_name(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def parent_of(span: ReadableSpan, spans: Sequence[ReadableSpan]) -> ReadableSpan:
    assert span.parent is not None, f"{span.name} has no parent"
    (parent,) = [s for s in spans if s.context.span_id == span.parent.span_id]
    return parent


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def assert_has(span: ReadableSpan, expected: dict[str, Any]) -> None:
    got = attrs(span)
    wrong = {k: got.get(k, "<missing>") for k, v in expected.items() if got.get(k) != v}
    assert not wrong, f"{span.name}: {wrong}"


# ----------------------------------------------------------------- the tree


async def test_a_tool_loop_run_is_run_over_nodes_over_model_and_tool_calls(
    exporter: InMemorySpanExporter, tracing: flowcore.tracing.Tracing
) -> None:
    graph = tool_loop_graph(
        {
            "alpha": [
                asks(("a1", "x"), ("a2", "y")),
                asks(("a3", "z")),
                answers('{"answer": "A"}'),
            ],
            "beta": [asks(("b1", "w")), answers('{"answer": "B"}')],
        },
        checkpointer=InMemoryCheckpointer(),
    )

    result = await graph.run(
        {"question": "q"}, config={"tracing": tracing}, run_id="r-1", thread_id="t-1"
    )

    assert result.status == "completed"
    spans = exporter.get_finished_spans()
    (run,) = by_name(spans, "invoke_workflow traced")
    assert run.parent is None
    assert_has(
        run,
        {
            "gen_ai.operation.name": "invoke_workflow",
            "flowcore.run.id": "r-1",
            "flowcore.graph.name": "traced",
            "flowcore.thread.id": "t-1",
            "gen_ai.conversation.id": "t-1",
            "flowcore.run.status": "completed",
            "gen_ai.usage.input_tokens": 30 + 30 + 50 + 30 + 50,
            "gen_ai.usage.output_tokens": 7 + 7 + 5 + 7 + 5,
        },
    )
    nodes = {s.name: s for s in spans if s.name.startswith("node ")}
    assert set(nodes) == {"node alpha", "node beta", "node join"}
    for node in nodes.values():
        assert parent_of(node, spans) is run
        assert attrs(node)["flowcore.run.id"] == "r-1"
        assert attrs(node)["flowcore.thread.id"] == "t-1"
    # Parallel nodes: every call sits under the node that made it.
    chats = by_name(spans, "chat m")
    tools = by_name(spans, "execute_tool lookup")
    assert len(chats) == 5
    assert len(tools) == 4
    under = {s.name: [] for s in nodes.values()}  # type: dict[str, list[str]]
    for span in [*chats, *tools]:
        under[parent_of(span, spans).name].append(attrs(span).get("gen_ai.tool.call.id", "chat"))
    assert sorted(under["node alpha"]) == ["a1", "a2", "a3", "chat", "chat", "chat"]
    assert sorted(under["node beta"]) == ["b1", "chat", "chat"]
    assert under["node join"] == []
    # Children lie within their parents in time, and each node's calls are in order.
    for span in [*chats, *tools]:
        parent = parent_of(span, spans)
        assert parent.start_time <= span.start_time <= span.end_time <= parent.end_time
    alpha_calls = sorted(
        (s for s in [*chats, *tools] if parent_of(s, spans).name == "node alpha"),
        key=lambda s: s.start_time or 0,
    )
    order = [attrs(s).get("gen_ai.tool.call.id", "chat") for s in alpha_calls]
    assert (order[0], order[-1]) == ("chat", "chat")


@pytest.mark.parametrize("mode", ["supersteps", "dataflow"])
async def test_model_call_spans_carry_the_gen_ai_attributes(
    exporter: InMemorySpanExporter, tracing: flowcore.tracing.Tracing, mode: str
) -> None:
    graph = tool_loop_graph({"alpha": [asks(("a1", "x")), answers('{"answer": "A"}')]})

    await graph.run({"question": "q"}, config={"tracing": tracing}, run_id="r-2", mode=mode)

    spans = exporter.get_finished_spans()
    first, last = sorted(by_name(spans, "chat m"), key=lambda s: s.start_time or 0)
    assert first.kind is SpanKind.CLIENT
    assert_has(
        first,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "scripted",
            "gen_ai.system": "scripted",
            "gen_ai.request.model": "m",
            "gen_ai.response.model": "m-2024",
            "gen_ai.usage.input_tokens": 30,
            "gen_ai.usage.output_tokens": 7,
            "gen_ai.response.finish_reasons": ("tool_calls",),
            "flowcore.run.id": "r-2",
            "flowcore.graph.name": "traced",
            "flowcore.node": "alpha",
            "flowcore.block.id": "alpha",
        },
    )
    assert attrs(last)["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs(first)["flowcore.invocation.id"] != attrs(last)["flowcore.invocation.id"]
    (tool,) = by_name(spans, "execute_tool lookup")
    assert_has(
        tool,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.id": "a1",
            "flowcore.node": "alpha",
        },
    )
    # No prompt, argument or result text is recorded.
    for span in spans:
        assert "q" not in [v for v in attrs(span).values() if isinstance(v, str)]
    assert tracing.open_runs == 0


# -------------------------------------------------------------------- errors


async def test_a_failed_tool_call_and_a_failed_node_set_error_status(
    exporter: InMemorySpanExporter, tracing: flowcore.tracing.Tracing
) -> None:
    # The model asks for a broken look-up, then answers with something that is not JSON twice.
    graph = tool_loop_graph({"alpha": [asks(("a1", "broken")), answers("nope"), answers("no")]})

    result = await graph.run(
        {"question": "q"}, config={"tracing": tracing}, on_error="skip_dependents"
    )

    assert result.status == "failed"
    spans = exporter.get_finished_spans()
    (tool,) = by_name(spans, "execute_tool lookup")
    assert tool.status.status_code is StatusCode.ERROR
    assert attrs(tool)["error.type"] == "execution"
    (node,) = by_name(spans, "node alpha")
    assert node.status.status_code is StatusCode.ERROR
    assert attrs(node)["error.type"] == "BlockOutputError"
    assert any(e.name == "exception" for e in node.events)
    (run,) = by_name(spans, "invoke_workflow traced")
    assert run.status.status_code is StatusCode.ERROR
    assert attrs(run)["flowcore.run.status"] == "failed"
    assert by_name(spans, "node join") == []
    assert [e.attributes["flowcore.node"] for e in run.events if e.name == "node_skipped"] == [
        "join"
    ]


async def test_span_errors_hold_no_secret_the_run_redacts(
    exporter: InMemorySpanExporter, tracing: flowcore.tracing.Tracing
) -> None:
    secret = "sk-live-0123456789abcdef"

    def leaky(state: Any) -> dict[str, Any]:
        raise RuntimeError(f"auth failed for key {secret}")

    graph = Graph(S, name="leaky").add_node("leaky", leaky).add_edge(START, "leaky").compile()
    redactor = SecretRedactor([secret])

    await graph.run({"question": "q"}, config={"tracing": tracing}, redactor=redactor)

    for span in exporter.get_finished_spans():
        shown = [span.status.description or "", *map(str, attrs(span).values())]
        shown += [str(e.attributes) for e in span.events]
        assert not any(secret in text for text in shown), span.name
    (node,) = by_name(exporter.get_finished_spans(), "node leaky")
    assert node.status.status_code is StatusCode.ERROR


# ----------------------------------------------------------- other run shapes


async def test_a_streamed_run_that_pauses_closes_the_paused_node(
    exporter: InMemorySpanExporter, tracing: flowcore.tracing.Tracing
) -> None:
    def ask(state: Any) -> dict[str, Any]:
        return {"question": interrupt("which city?")}

    graph = (
        Graph(S, name="pausing")
        .add_node("ask", ask)
        .add_edge(START, "ask")
        .compile(checkpointer=InMemoryCheckpointer())
    )

    async with graph.stream({}, config={"tracing": tracing}, thread_id="t-9") as events:
        kinds = [event.type async for event in events]

    assert "interrupt" in kinds
    spans = exporter.get_finished_spans()
    (node,) = by_name(spans, "node ask")
    assert attrs(node)["flowcore.node.interrupted"] is True
    assert node.status.status_code is StatusCode.UNSET
    (run,) = by_name(spans, "invoke_workflow pausing")
    assert attrs(run)["flowcore.run.status"] == "interrupted"
    assert attrs(run)["flowcore.thread.id"] == "t-9"
    assert tracing.open_runs == 0


async def test_the_run_span_is_a_child_of_the_callers_current_span(
    exporter: InMemorySpanExporter, tracing: flowcore.tracing.Tracing
) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    graph = Graph(S, name="child").add_node("n", lambda s: {}).add_edge(START, "n").compile()

    with provider.get_tracer("app").start_as_current_span("request") as outer:
        await graph.run({}, config={"tracing": tracing})

    (run,) = by_name(exporter.get_finished_spans(), "invoke_workflow child")
    assert run.parent is not None
    assert run.parent.span_id == outer.get_span_context().span_id


async def test_something_else_under_the_tracing_key_is_refused_before_the_run() -> None:
    graph = Graph(S, name="g").add_node("n", lambda s: {}).add_edge(START, "n").compile()

    with pytest.raises(InvalidInputError, match=r"config\['tracing'\].*flowcore.tracing.enable"):
        await graph.run({}, config={"tracing": "yes please"})


async def test_an_observer_that_fails_never_changes_how_the_run_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken:
        def observe(self, event: Any) -> None:
            raise RuntimeError("exporter down")

    graph = Graph(S, name="g").add_node("n", lambda s: {"done": True}).add_edge(START, "n")

    result = await graph.compile().run({}, config={"tracing": Broken()})

    assert result.status == "completed"
    assert result.state["done"] is True
    assert "exporter down" in caplog.text


# ------------------------------------------------------------------ disabled


def test_a_run_without_tracing_imports_nothing_of_opentelemetry() -> None:
    # In a fresh interpreter: a tool-loop run, streamed and not, and a compat run, with
    # tracing off.
    script = textwrap.dedent(
        """
        import asyncio, sys
        from tests.tracing.graphs import answers, asks, tool_loop_graph

        async def main():
            graph = tool_loop_graph({"alpha": [asks(("a1", "x")), answers('{"answer": "A"}')]})
            result = await graph.run({"question": "q"})
            assert result.status == "completed", result.errors
            graph = tool_loop_graph({"alpha": [asks(("a1", "x")), answers('{"answer": "A"}')]})
            async with graph.stream({"question": "q"}) as events:
                async for _ in events:
                    pass
            # A LangGraph-style run too (an agent with a tool), through its front doors.
            from tests.tracing.compat_graphs import weather_agent
            trip = {"messages": [("user", "hi")]}
            await weather_agent().ainvoke(trip)
            async for _ in weather_agent().astream(trip, stream_mode=["updates", "debug"]):
                pass
            async with weather_agent().run_stream(trip) as events:
                async for _ in events:
                    pass
            import flowcore.tracing  # the module itself imports nothing of OpenTelemetry either

        asyncio.run(main())
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
        print(loaded)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
