"""Spec: a stored LLM block runs on the real OpenAI and Anthropic SDKs end to end.

Block store (SQLite file) -> engine -> generic executor -> provider -> real
SDK -> HTTP -> loopback server speaking the vendor's wire format, streamed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from flowcore import START, Graph
from flowcore.blocks import BlockExecutor, BlockState, SqliteBlockStore, add_block
from flowcore.llm import ProviderRegistry
from flowcore.llm.anthropic_provider import AnthropicProvider
from flowcore.llm.openai_provider import OpenAIProvider

from .loopback import LoopbackServer, anthropic_stream, openai_error, openai_stream


class Doc(BlockState, total=False):
    text: str


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with LoopbackServer() as running:
        yield running


async def summarize_over(block_store: SqliteBlockStore, registry: ProviderRegistry) -> tuple:
    graph = Graph(Doc, name="summarize-over-http")
    add_block(
        graph,
        "sum",
        await block_store.get("summarize"),
        BlockExecutor(providers=registry, retry_wait=0),
        inputs={"text": "<<state.text>>"},
    )
    graph.add_edge(START, "sum")
    events = []
    async with graph.compile().stream({"text": "Ducks fly south."}) as stream:
        async for event in stream:
            events.append(event)
        result = await stream.result()
    return result, events


async def test_an_llm_block_streams_over_the_openai_sdk_through_a_429(
    server: LoopbackServer, block_store: SqliteBlockStore
) -> None:
    server.replies.append(openai_error(429, "rate_limit_exceeded", retry_after="0"))
    server.replies.append(openai_stream(['{"summary": ', '"Ducks ', 'migrate."}'], usage=(21, 6)))
    provider = OpenAIProvider(api_key="sk-test", model="gpt-test", base_url=f"{server.url}/v1")
    try:
        result, events = await summarize_over(block_store, ProviderRegistry.single(provider))
    finally:
        await provider.aclose()

    assert result.status == "completed"
    assert result.state["results"]["sum"] == {"summary": "Ducks migrate."}
    assert [e.text for e in events if e.type == "text_delta"] == [
        '{"summary": ',
        '"Ducks ',
        'migrate."}',
    ]
    (usage,) = [e for e in events if e.type == "usage"]
    assert (usage.provider, usage.input_tokens, usage.output_tokens) == ("openai", 21, 6)
    assert len(server.requests) == 2  # the 429, then the retry
    body = server.requests[1].body
    assert body["stream"] is True
    assert body["model"] == "gpt-test"
    assert body["messages"][0]["role"] == "system"
    assert "Ducks fly south." in body["messages"][1]["content"]


async def test_an_llm_block_streams_over_the_anthropic_sdk(
    server: LoopbackServer, block_store: SqliteBlockStore
) -> None:
    server.replies.append(anthropic_stream(['{"summary": "Birds', ' leave."}'], usage=(17, 4)))
    provider = AnthropicProvider(api_key="sk-ant-test", model="claude-test", base_url=server.url)
    try:
        result, events = await summarize_over(block_store, ProviderRegistry.single(provider))
    finally:
        await provider.aclose()

    assert result.state["results"]["sum"] == {"summary": "Birds leave."}
    assert "".join(e.text for e in events if e.type == "text_delta") == (
        '{"summary": "Birds leave."}'
    )
    (usage,) = [e for e in events if e.type == "usage"]
    assert (usage.provider, usage.input_tokens, usage.output_tokens) == ("anthropic", 17, 4)
    body = server.requests[0].body
    assert "summary" in body["system"]
    assert body["messages"][0]["role"] == "user"
