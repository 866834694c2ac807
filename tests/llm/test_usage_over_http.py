"""Spec: the tokens of failed calls count, with the real OpenAI and Anthropic SDKs over HTTP.

Issue 19's reproduction: a block whose six streamed answers (10 in / 12 out
each) never fit its schema ends a failed run; the run's usage events, its
result, its history record and the port's outcome all say 60 in / 72 out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from flowcore import START, Graph
from flowcore.blocks import BlockDefinition, BlockExecutor, BlockState, add_block
from flowcore.history import SqliteRunHistory
from flowcore.llm import ProviderRegistry
from flowcore.llm.anthropic_provider import AnthropicProvider
from flowcore.llm.openai_provider import OpenAIProvider
from flowcore.port import Caller, InProcExecutor, RunRequest

from .loopback import LoopbackServer, Reply, anthropic_stream, openai_stream


class Doc(BlockState, total=False):
    text: str


BLOCK = BlockDefinition(
    id="summarize",
    name="Summarize",
    description="Summarize a text",
    kind="llm",
    input_keys=["text"],
    output_keys=["summary"],
    prompt_template="Summarize: {{ text }}",
    max_retries=2,
)


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with LoopbackServer() as running:
        yield running


def graph_on(provider: Any) -> Any:
    graph = Graph(Doc, name="summarize-over-http")
    executor = BlockExecutor(providers=ProviderRegistry.single(provider), retry_wait=0)
    add_block(graph, "sum", BLOCK, executor, inputs={"text": "<<state.text>>"})
    graph.add_edge(START, "sum")
    return graph.compile()


def openai(server: LoopbackServer) -> OpenAIProvider:
    return OpenAIProvider(api_key="sk-test", model="gpt-test", base_url=f"{server.url}/v1")


def anthropic(server: LoopbackServer) -> AnthropicProvider:
    return AnthropicProvider(api_key="sk-ant-test", model="claude-test", base_url=server.url)


VENDORS: list[tuple[Callable[[LoopbackServer], Any], Callable[[], Reply]]] = [
    (openai, lambda: openai_stream(["not ", "json"], usage=(10, 12))),
    (anthropic, lambda: anthropic_stream(["not ", "json"], usage=(10, 12))),
]


@pytest.mark.parametrize(("make", "reply"), VENDORS, ids=["openai", "anthropic"])
async def test_six_failed_streamed_calls_count_in_events_result_and_history(
    server: LoopbackServer,
    tmp_path: Path,
    make: Callable[[LoopbackServer], Any],
    reply: Callable[[], Reply],
) -> None:
    server.replies.extend(reply() for _ in range(6))
    provider = make(server)
    try:
        async with SqliteRunHistory(tmp_path / "runs.db") as history:
            executor = InProcExecutor(graphs={"sum": graph_on(provider)}, history=history)
            async with executor:
                handle = executor.run(RunRequest("sum", {"text": "ducks"}, Caller("r", "t")))
                events = [e async for e in handle]
                outcome = await handle.final
            (record,) = await history.list()
    finally:
        await provider.aclose()

    assert len(server.requests) == 6
    assert all(r.body["stream"] is True for r in server.requests)
    reports = [e for e in events if e.type == "usage_report"]
    assert [(e.input_tokens, e.output_tokens) for e in reports] == [(10, 12)] * 6  # type: ignore[union-attr]
    assert outcome.status == "failed"
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (60, 72)
    assert (record.status, record.input_tokens, record.output_tokens) == ("failed", 60, 72)
    (node,) = record.nodes
    assert (node.input_tokens, node.output_tokens) == (60, 72)
    assert "3 block attempts, 6 model calls" in (node.error or "")
