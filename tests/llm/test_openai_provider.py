"""Spec: OpenAIProvider drives the real ``openai`` SDK over HTTP to a loopback server.

Nothing in the SDK is patched: the server speaks the chat-completions wire
format, including server-sent events for streaming, tool calls, usage, and
errors with Retry-After.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
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
from flowcore.llm.openai_provider import OpenAIProvider

from .loopback import LoopbackServer, openai_completion, openai_error, openai_stream

ASK = LLMRequest(messages=(Message("user", "Capital of France?"),), system="Be brief.")


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with LoopbackServer() as running:
        yield running


@pytest.fixture
async def model(server: LoopbackServer) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(api_key="sk-test", model="gpt-test", base_url=f"{server.url}/v1")
    yield provider
    await provider.aclose()


async def test_a_completion_returns_text_and_usage_and_sends_the_request(
    server: LoopbackServer, model: OpenAIProvider
) -> None:
    server.replies.append(openai_completion("Paris", usage=(12, 1)))

    response = await model.complete(
        LLMRequest(messages=ASK.messages, system=ASK.system, temperature=0.2, max_tokens=5)
    )

    assert (response.text, response.usage, response.finish_reason) == (
        "Paris",
        Usage(12, 1),
        "stop",
    )
    (sent,) = server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.body["model"] == "gpt-test"
    assert sent.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of France?"},
    ]
    assert (sent.body["temperature"], sent.body["max_tokens"]) == (0.2, 5)


async def test_tool_calls_are_parsed_and_tools_are_declared(
    server: LoopbackServer, model: OpenAIProvider
) -> None:
    call = {
        "id": "call_7",
        "type": "function",
        "function": {"name": "search", "arguments": '{"q": "paris"}'},
    }
    server.replies.append(openai_completion(None, tool_calls=[call]))
    tool = ToolSpec(
        "search", "Search the web", {"type": "object", "properties": {"q": {"type": "string"}}}
    )

    response = await model.complete(LLMRequest(messages=ASK.messages, tools=(tool,)))

    assert response.tool_calls == (ToolCall("call_7", "search", {"q": "paris"}),)
    assert response.text == ""
    assert server.requests[0].body["tools"][0]["function"]["name"] == "search"


async def test_structured_output_asks_for_a_json_schema(
    server: LoopbackServer, model: OpenAIProvider
) -> None:
    server.replies.append(openai_completion('{"city": "Paris"}'))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}

    response = await model.complete(LLMRequest(messages=ASK.messages, response_schema=schema))

    assert response.text == '{"city": "Paris"}'
    fmt = server.requests[0].body["response_format"]
    assert fmt == {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}


async def test_streaming_yields_deltas_then_tool_calls_usage_and_done(
    server: LoopbackServer, model: OpenAIProvider
) -> None:
    server.replies.append(
        openai_stream(["Pa", "ris"], tool_args=['{"q":', ' "paris"}'], usage=(7, 2))
    )

    events = [e async for e in model.stream(ASK)]

    assert [e.text for e in events if e.kind == "text"] == ["Pa", "ris"]
    assert [e.tool_call for e in events if e.kind == "tool_call"] == [
        ToolCall("call_1", "search", {"q": "paris"})
    ]
    assert [e.usage for e in events if e.kind == "usage"] == [Usage(7, 2)]
    done = events[-1]
    assert done.kind == "done"
    assert done.response is not None
    assert (done.response.text, done.response.finish_reason) == ("Paris", "tool_calls")
    assert server.requests[0].body["stream"] is True


async def test_a_429_then_success_is_retried_after_the_servers_retry_after(
    server: LoopbackServer, model: OpenAIProvider
) -> None:
    server.replies += [
        openai_error(429, "rate_limit_exceeded", retry_after="0.1"),
        openai_completion("Paris"),
    ]

    # The server's 0.1 s must be used, not the 30 s backoff, which would run into this
    # guard; the guard is far from anything a busy machine adds to two loopback calls.
    async with asyncio.timeout(20):
        response = await call_with_retries(lambda: model.complete(ASK), base_delay=30.0)

    assert response.text == "Paris"
    assert len(server.requests) == 2  # the SDK itself did not retry
    assert server.requests[1].at - server.requests[0].at >= 0.1


@pytest.mark.parametrize(
    ("status", "code", "kind", "throttle"),
    [
        (429, "rate_limit_exceeded", "rate_limit", True),
        (429, "insufficient_quota", "quota_exhausted", True),
        (529, "overloaded_error", "overloaded", True),
        (401, "invalid_api_key", "auth", False),
        (400, "invalid_request_error", "bad_request", False),
        (500, "server_error", "server", False),
    ],
)
async def test_http_errors_become_typed_provider_errors(
    server: LoopbackServer,
    model: OpenAIProvider,
    status: int,
    code: str,
    kind: str,
    throttle: bool,
) -> None:
    server.replies.append(openai_error(status, code, retry_after="3"))

    with pytest.raises(ProviderError) as info:
        await model.complete(ASK)

    assert info.value.kind == kind
    assert info.value.status == status
    assert isinstance(info.value, ThrottleError) is throttle
    if throttle and kind != "overloaded":
        assert info.value.retry_after == 3.0  # type: ignore[attr-defined]


async def test_auth_errors_are_not_retried(server: LoopbackServer, model: OpenAIProvider) -> None:
    server.replies += [openai_error(401, "invalid_api_key"), openai_completion("never")]

    with pytest.raises(ProviderError, match="API key"):
        await call_with_retries(lambda: model.complete(ASK), base_delay=0.01)

    assert len(server.requests) == 1


def test_importing_flowcore_llm_does_not_import_the_sdk() -> None:
    code = "import sys, flowcore, flowcore.llm; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
