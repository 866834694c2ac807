"""Spec: AnthropicProvider drives the real ``anthropic`` SDK over HTTP to a loopback server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from flowcore.llm import (
    LLMRequest,
    Message,
    ProviderError,
    ThrottleError,
    ToolCall,
    ToolSpec,
    Usage,
    call_with_retries,
)
from flowcore.llm.anthropic_provider import AnthropicProvider

from .loopback import LoopbackServer, anthropic_error, anthropic_message, anthropic_stream

ASK = LLMRequest(messages=(Message("user", "Capital of France?"),), system="Be brief.")


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with LoopbackServer() as running:
        yield running


@pytest.fixture
async def model(server: LoopbackServer) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider(api_key="sk-ant-test", model="claude-test", base_url=server.url)
    yield provider
    await provider.aclose()


async def test_a_message_returns_text_and_usage_and_sends_the_request(
    server: LoopbackServer, model: AnthropicProvider
) -> None:
    server.replies.append(anthropic_message("Paris", usage=(14, 1)))

    response = await model.complete(ASK)

    assert (response.text, response.usage, response.finish_reason) == (
        "Paris",
        Usage(14, 1),
        "end_turn",
    )
    (sent,) = server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    # The key travels as x-api-key or as a bearer token, depending on the SDK release.
    credentials = {sent.headers.get("x-api-key"), sent.headers.get("authorization")}
    assert credentials & {"sk-ant-test", "Bearer sk-ant-test"}
    assert "anthropic-version" in sent.headers
    assert sent.body["system"] == "Be brief."
    assert sent.body["messages"] == [{"role": "user", "content": "Capital of France?"}]
    assert sent.body["max_tokens"] == 1024


async def test_tool_use_and_tool_results_round_trip(
    server: LoopbackServer, model: AnthropicProvider
) -> None:
    server.replies.append(
        anthropic_message("", tool={"id": "toolu_9", "name": "search", "input": {"q": "paris"}})
    )
    tool = ToolSpec("search", "Search", {"type": "object", "properties": {"q": {"type": "string"}}})
    call = ToolCall("toolu_0", "search", {"q": "x"})
    history = (
        Message("user", "Find it"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "no hits", tool_call_id="toolu_0"),
    )

    response = await model.complete(LLMRequest(messages=history, tools=(tool,)))

    assert response.tool_calls == (ToolCall("toolu_9", "search", {"q": "paris"}),)
    body = server.requests[0].body
    assert body["tools"][0]["input_schema"]["properties"]["q"] == {"type": "string"}
    assert body["messages"][1]["content"][0]["type"] == "tool_use"
    assert body["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_0", "content": "no hits"}],
    }


async def test_structured_output_is_asked_for_in_the_system_prompt(
    server: LoopbackServer, model: AnthropicProvider
) -> None:
    server.replies.append(anthropic_message('{"city": "Paris"}'))

    await model.complete(
        LLMRequest(messages=ASK.messages, response_schema={"type": "object", "required": ["city"]})
    )

    assert '"required": ["city"]' in server.requests[0].body["system"]


async def test_streaming_yields_deltas_then_tool_calls_usage_and_done(
    server: LoopbackServer, model: AnthropicProvider
) -> None:
    server.replies.append(
        anthropic_stream(["Pa", "ris"], tool_json=['{"q":', '"paris"}'], usage=(8, 6))
    )

    events = [e async for e in model.stream(ASK)]

    assert [e.text for e in events if e.kind == "text"] == ["Pa", "ris"]
    assert [e.tool_call for e in events if e.kind == "tool_call"] == [
        ToolCall("toolu_1", "search", {"q": "paris"})
    ]
    assert [e.usage for e in events if e.kind == "usage"] == [Usage(8, 6)]
    done = events[-1].response
    assert done is not None
    assert (done.text, done.finish_reason) == ("Paris", "tool_use")
    assert server.requests[0].body["stream"] is True


async def test_a_429_then_success_waits_the_servers_retry_after(
    server: LoopbackServer, model: AnthropicProvider
) -> None:
    server.replies += [
        anthropic_error(429, "rate_limit_error", retry_after="0.1"),
        anthropic_message("Paris"),
    ]
    # 0.1 s from the server, not the 30 s backoff, which would run into this guard (far
    # from anything a busy machine adds to two loopback calls).
    async with asyncio.timeout(20):
        response = await call_with_retries(lambda: model.complete(ASK), base_delay=30.0)

    assert response.text == "Paris"
    assert len(server.requests) == 2
    assert server.requests[1].at - server.requests[0].at >= 0.1


@pytest.mark.parametrize(
    ("status", "error_type", "kind", "throttle"),
    [
        (429, "rate_limit_error", "rate_limit", True),
        (529, "overloaded_error", "overloaded", True),
        (401, "authentication_error", "auth", False),
        (400, "invalid_request_error", "bad_request", False),
        (500, "api_error", "server", False),
    ],
)
async def test_http_errors_become_typed_provider_errors(
    server: LoopbackServer,
    model: AnthropicProvider,
    status: int,
    error_type: str,
    kind: str,
    throttle: bool,
) -> None:
    server.replies.append(anthropic_error(status, error_type))

    with pytest.raises(ProviderError) as info:
        await model.complete(ASK)

    assert (info.value.kind, info.value.status) == (kind, status)
    assert isinstance(info.value, ThrottleError) is throttle
