"""Spec: the scripted provider replays its script; retries wait out throttles only."""

from __future__ import annotations

import time

import pytest

from flowcore.llm import (
    LLMProvider,
    LLMRequest,
    LLMResponse,
    Message,
    ProviderError,
    ScriptedProvider,
    ScriptExhaustedError,
    ThrottleError,
    ToolCall,
    Usage,
    call_with_retries,
)

ASK = LLMRequest(messages=(Message("user", "What is the capital of France?"),))


async def test_replies_come_in_script_order_and_requests_are_recorded() -> None:
    model = ScriptedProvider(["Paris", LLMResponse(text="Lyon", usage=Usage(3, 1))])

    first = await model.complete(ASK)
    second = await model.complete(ASK)

    assert isinstance(model, LLMProvider)
    assert (first.text, second.text) == ("Paris", "Lyon")
    assert first.usage == Usage(input_tokens=6, output_tokens=1)
    assert second.usage == Usage(3, 1)
    assert model.requests == [ASK, ASK]
    assert model.remaining == 0


async def test_running_out_of_script_fails_loudly() -> None:
    model = ScriptedProvider(["only one"])
    await model.complete(ASK)

    with pytest.raises(ScriptExhaustedError, match="no reply left for call 2"):
        await model.complete(ASK)


async def test_a_scripted_exception_is_raised() -> None:
    model = ScriptedProvider([ThrottleError("slow", provider="x", kind="rate_limit")])

    with pytest.raises(ThrottleError):
        await model.complete(ASK)


async def test_streaming_gives_text_pieces_tool_calls_usage_then_done() -> None:
    call = ToolCall("c1", "search", {"q": "paris"})
    model = ScriptedProvider(
        [LLMResponse(text="The capital", tool_calls=(call,), usage=Usage(4, 2))]
    )

    events = [e async for e in model.stream(ASK)]

    assert [e.kind for e in events] == ["text", "text", "tool_call", "usage", "done"]
    assert "".join(e.text for e in events) == "The capital"
    assert events[2].tool_call == call
    assert events[3].usage == Usage(4, 2)
    assert events[-1].response is not None
    assert events[-1].response.text == "The capital"


async def test_throttles_are_retried_honouring_retry_after() -> None:
    model = ScriptedProvider(
        [
            ThrottleError("429", provider="x", kind="rate_limit", retry_after=0.2),
            ThrottleError("529", provider="x", kind="overloaded"),
            "ok",
        ]
    )
    started = time.monotonic()

    response = await call_with_retries(lambda: model.complete(ASK), base_delay=0.01)

    assert response.text == "ok"
    assert len(model.requests) == 3
    assert time.monotonic() - started >= 0.2  # the provider's Retry-After was waited out


@pytest.mark.parametrize("kind", ["auth", "bad_request"])
async def test_auth_and_bad_request_errors_are_never_retried(kind: str) -> None:
    model = ScriptedProvider([ProviderError("no", provider="x", kind=kind), "never reached"])

    with pytest.raises(ProviderError) as info:
        await call_with_retries(lambda: model.complete(ASK), base_delay=0.01)

    assert info.value.kind == kind
    assert len(model.requests) == 1


async def test_retries_stop_after_the_last_attempt() -> None:
    model = ScriptedProvider([ProviderError("500", provider="x", kind="server")] * 3)

    with pytest.raises(ProviderError, match="500"):
        await call_with_retries(lambda: model.complete(ASK), attempts=3, base_delay=0.001)

    assert len(model.requests) == 3
