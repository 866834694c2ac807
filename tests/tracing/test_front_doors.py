"""Spec: the front doors that build a run's config themselves carry its tracer too.

``PipelineRunner(tracing=...)`` and ``InProcExecutor(tracing=...)`` trace
every run they start, the same tree as ``graph.run(config={"tracing": ...})``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import flowcore.tracing
from flowcore.blocks import BlockExecutor, SqliteBlockStore
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.pipeline import Pipeline, PipelineRunner
from flowcore.port import Caller, InProcExecutor, RunOptions, RunRequest

from .graphs import TOOLS, agent_block, answers, asks, tool_loop_graph


def traced() -> tuple[InMemorySpanExporter, flowcore.tracing.Tracing]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, flowcore.tracing.enable(provider)


def tree(spans: tuple[ReadableSpan, ...]) -> str:
    return flowcore.tracing.span_tree(spans, attributes=["gen_ai.tool.call.id"])


async def test_the_port_traces_the_runs_it_starts() -> None:
    exporter, tracing = traced()
    graph = tool_loop_graph({"alpha": [asks(("a1", "x")), answers('{"answer": "A"}')]})

    async with InProcExecutor(graphs={"agent": graph}, tracing=tracing) as executor:
        handle = executor.run(
            RunRequest("agent", {"question": "q"}, Caller("req-1", "trace-1"), RunOptions())
        )
        async with asyncio.timeout(30):
            async for _ in handle:
                pass
            outcome = await handle.final

    assert outcome.status == "completed"
    assert tree(exporter.get_finished_spans()) == "\n".join(
        [
            "invoke_workflow traced",
            "  node alpha",
            "    chat m",
            "    execute_tool lookup  [tool.call.id=a1]",
            "    chat m",
            "  node join",
        ]
    )
    (run,) = [s for s in exporter.get_finished_spans() if s.parent is None]
    assert dict(run.attributes or {})["flowcore.run.id"] == handle.run_id


async def test_a_pipeline_runner_traces_its_runs(tmp_path: Path) -> None:
    exporter, tracing = traced()
    pipeline = Pipeline.from_data(
        {
            "id": "ask",
            "name": "Ask",
            "nodes": [{"id": "agent", "block_id": "agent", "inputs": {"question": "<<input.q>>"}}],
            "edges": [],
        }
    )

    model = ScriptedProvider([asks(("p1", "x")), answers('{"answer": "A"}')])
    async with SqliteBlockStore(tmp_path / "b.db") as blocks:
        await blocks.save(agent_block("agent"))
        runner = PipelineRunner(
            blocks=blocks,
            executor=BlockExecutor(providers=ProviderRegistry.single(model), tools=TOOLS),
            tracing=tracing,
        )
        result = await runner.run(pipeline, {"q": "hello"})

    assert result.status == "completed", result.errors
    shown = tree(exporter.get_finished_spans())
    assert shown == "\n".join(
        [
            "invoke_workflow ask",
            "  node load_memory",
            "  node agent",
            "    chat m",
            "    execute_tool lookup  [tool.call.id=p1]",
            "    chat m",
            "  node save_memory",
        ]
    )
