"""Spec: tool call ids over the real OpenAI SDK: the model's id is kept, an empty one replaced.

An OpenAI-compatible server that streams a tool call with ``"id": ""``
(some local servers do) gets the tool's answer under a fresh UUID, the same
id on ``tool_call_start``, ``tool_call_result`` and the tool message the
next request carries.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pydantic import BaseModel

from flowcore import START, Graph
from flowcore.blocks import BlockDefinition, BlockExecutor, BlockState, add_block
from flowcore.llm import ProviderRegistry
from flowcore.llm.openai_provider import OpenAIProvider
from flowcore.tools import Tool, ToolRunner

from .loopback import LoopbackServer, Reply, openai_stream


class Q(BaseModel):
    q: str


class Hits(BaseModel):
    count: int


async def search(args: Q) -> Hits:
    return Hits(count=3)


def asking_search(call_id: str) -> Reply:
    reply = openai_stream([], tool_args=['{"q": ', '"ducks"}'], usage=(9, 3))
    assert reply.events is not None
    for _, data in reply.events:
        if isinstance(data, dict):
            for choice in data.get("choices", []):
                for call in choice["delta"].get("tool_calls", []):
                    if "id" in call:
                        call["id"] = call_id
    return reply


@pytest.mark.parametrize("model_id", ["", "call_from_model"])
async def test_the_models_tool_call_id_is_kept_or_an_empty_one_replaced(model_id: str) -> None:
    block = BlockDefinition(
        id="count_hits",
        name="Count hits",
        description="Count search hits",
        kind="llm",
        input_keys=["topic"],
        output_keys=["hits"],
        prompt_template="How many hits for {{ topic }}?",
        metadata={"tools": ["search"]},
    )
    async with LoopbackServer() as server:
        server.replies += [asking_search(model_id), openai_stream(['{"hits": 3}'])]
        provider = OpenAIProvider(api_key="sk-test", model="gpt-test", base_url=f"{server.url}/v1")
        tools = ToolRunner([Tool("search", "Search", Q, Hits, search, allowlist={"count"})])
        graph = Graph(BlockState, name="ids")
        executor = BlockExecutor(providers=ProviderRegistry.single(provider), tools=tools)
        add_block(graph, "count", block, executor, inputs={"topic": "ducks"})
        graph.add_edge(START, "count")
        events: list[Any] = []
        try:
            async with graph.compile().stream({}) as stream:
                events = [e async for e in stream]
        finally:
            await provider.aclose()

    (start,) = [e for e in events if e.type == "tool_call_start"]
    (result,) = [e for e in events if e.type == "tool_call_result"]
    assert start.tool_call_id == result.tool_call_id
    if model_id:
        assert start.tool_call_id == model_id
    else:
        assert str(uuid.UUID(start.tool_call_id)) == start.tool_call_id
    second = server.requests[1].body["messages"]
    (assistant,) = [m for m in second if m["role"] == "assistant"]
    (answer,) = [m for m in second if m["role"] == "tool"]
    assert assistant["tool_calls"][0]["id"] == answer["tool_call_id"] == start.tool_call_id
