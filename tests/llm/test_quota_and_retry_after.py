"""Spec: a used-up quota is not retried, and no retry comes before the server's Retry-After.

The real ``openai`` and ``anthropic`` SDKs talk HTTP to a loopback server
that answers with each vendor's quota and rate-limit errors. The server
counts the requests it saw and when it saw them: a used-up quota without
``Retry-After`` reaches it exactly once (through ``call_with_retries`` and
through a block with retries left), one with a short ``Retry-After`` is
retried once the wait is over, and a ``Retry-After`` longer than the caller
accepts is not waited out at all.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from flowcore import START, Graph
from flowcore.blocks import BlockExecutor, BlockState, SqliteBlockStore, add_block
from flowcore.llm import (
    LLMProvider,
    LLMRequest,
    Message,
    ProviderError,
    ProviderRegistry,
    ThrottleError,
    call_with_retries,
    provider_retry_delay,
)
from flowcore.llm.anthropic_provider import AnthropicProvider
from flowcore.llm.openai_provider import OpenAIProvider
from flowcore.llm.sdk_errors import retry_after_seconds

from .loopback import (
    LoopbackServer,
    Reply,
    anthropic_message,
    anthropic_stream,
    openai_completion,
    openai_stream,
)

ASK = LLMRequest(messages=(Message("user", "Capital of France?"),))
# Seconds a call that must not wait may take: far below the 30 s waits a wrong caller
# would make, far above what a busy machine adds to one loopback call.
GUARD = 20.0


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with LoopbackServer() as running:
        yield running


@pytest.fixture(params=["openai", "anthropic"])
async def vendor(request: pytest.FixtureRequest, server: LoopbackServer) -> AsyncIterator[Vendor]:
    name = request.param
    provider: OpenAIProvider | AnthropicProvider
    if name == "openai":
        provider = OpenAIProvider(api_key="sk-test", model="gpt-test", base_url=f"{server.url}/v1")
    else:
        provider = AnthropicProvider(
            api_key="sk-ant-test", model="claude-test", base_url=server.url
        )
    yield Vendor(name, provider, server)
    await provider.aclose()


class Vendor:
    """One SDK in front of the loopback server, with that vendor's error shapes."""

    def __init__(self, name: str, provider: LLMProvider, server: LoopbackServer) -> None:
        self.name = name
        self.provider = provider
        self.server = server

    def quota_error(self, **headers: str) -> Reply:
        """The vendor's "out of quota/credit" answer, as its API sends it."""
        if self.name == "openai":
            error = {
                "message": "You exceeded your current quota, please check your plan.",
                "type": "insufficient_quota",
                "code": "insufficient_quota",
            }
            return Reply(429, {"error": error}, headers=_dashed(headers))
        error = {"type": "billing_error", "message": "Your account has a billing issue."}
        return Reply(402, {"type": "error", "error": error}, headers=_dashed(headers))

    def rate_limit_error(self, **headers: str) -> Reply:
        if self.name == "openai":
            error = {"message": "Slow down", "type": "requests", "code": "rate_limit_exceeded"}
            return Reply(429, {"error": error}, headers=_dashed(headers))
        error = {"type": "rate_limit_error", "message": "Slow down"}
        return Reply(429, {"type": "error", "error": error}, headers=_dashed(headers))

    def answer(self, text: str) -> Reply:
        return openai_completion(text) if self.name == "openai" else anthropic_message(text)

    def gaps(self) -> list[float]:
        """Seconds between consecutive requests the server received."""
        times = [r.at for r in self.server.requests]
        return [later - earlier for earlier, later in itertools.pairwise(times)]


def _dashed(headers: dict[str, str]) -> dict[str, str]:
    return {name.replace("_", "-"): value for name, value in headers.items()}


# -------------------------------------------------------------- quota used up
async def test_a_used_up_quota_without_retry_after_is_sent_exactly_once(vendor: Vendor) -> None:
    vendor.server.replies += [vendor.quota_error(), vendor.answer("never sent")]

    # Raised at once: waiting out the 30 s backoff first would run into the guard.
    with pytest.raises(ThrottleError) as info:
        async with asyncio.timeout(GUARD):
            await call_with_retries(lambda: vendor.provider.complete(ASK), base_delay=30.0)

    assert len(vendor.server.requests) == 1
    error = info.value
    assert (error.kind, error.retry_after, error.retryable) == ("quota_exhausted", None, False)
    assert error.code == "throttled"
    assert "quota exhausted" in str(error)
    assert "add credit" in str(error)  # says how to fix it
    assert "not retried" in str(error)


async def test_anthropics_credit_balance_too_low_answer_is_a_used_up_quota(
    server: LoopbackServer,
) -> None:
    error = {
        "type": "invalid_request_error",
        "message": "Your credit balance is too low to access the Anthropic API.",
    }
    server.replies += [Reply(400, {"type": "error", "error": error}), anthropic_message("never")]
    model = AnthropicProvider(api_key="sk-ant-test", model="claude-test", base_url=server.url)
    try:
        with pytest.raises(ThrottleError) as info:
            await call_with_retries(lambda: model.complete(ASK), base_delay=0.01)
    finally:
        await model.aclose()

    assert (info.value.kind, info.value.status) == ("quota_exhausted", 400)
    assert len(server.requests) == 1


async def test_a_used_up_quota_is_retried_only_after_the_servers_retry_after(
    vendor: Vendor,
) -> None:
    vendor.server.replies += [vendor.quota_error(retry_after="0.4"), vendor.answer("Paris")]

    response = await call_with_retries(lambda: vendor.provider.complete(ASK), base_delay=0.0)

    assert response.text == "Paris"
    assert len(vendor.server.requests) == 2
    (gap,) = vendor.gaps()
    assert gap >= 0.4  # not a moment before the server said


async def test_retry_after_ms_is_read_and_waited_out(vendor: Vendor) -> None:
    vendor.server.replies += [vendor.quota_error(retry_after_ms="300"), vendor.answer("Paris")]

    response = await call_with_retries(lambda: vendor.provider.complete(ASK), base_delay=0.0)

    assert response.text == "Paris"
    (gap,) = vendor.gaps()
    assert gap >= 0.3


async def test_a_retry_after_longer_than_max_delay_is_not_waited_out(vendor: Vendor) -> None:
    vendor.server.replies += [vendor.quota_error(retry_after="3600"), vendor.answer("never")]

    # Not waited out, not even up to max_delay: either wait would run into the guard.
    with pytest.raises(ThrottleError) as info:
        async with asyncio.timeout(GUARD):
            await call_with_retries(lambda: vendor.provider.complete(ASK), max_delay=30.0)

    assert len(vendor.server.requests) == 1
    assert (info.value.kind, info.value.retry_after) == ("quota_exhausted", 3600.0)
    assert "retry after 3600 s" in str(info.value)


# ----------------------------------------------------------------- rate limits
async def test_a_rate_limit_waits_at_least_its_retry_after_then_succeeds(vendor: Vendor) -> None:
    vendor.server.replies += [
        vendor.rate_limit_error(retry_after="0.3"),
        vendor.rate_limit_error(retry_after_ms="200"),
        vendor.answer("Paris"),
    ]

    response = await call_with_retries(lambda: vendor.provider.complete(ASK), base_delay=0.0)

    assert response.text == "Paris"
    assert len(vendor.server.requests) == 3
    first, second = vendor.gaps()
    assert first >= 0.3
    assert second >= 0.2


async def test_a_rate_limit_asking_for_longer_than_max_delay_is_raised_at_once(
    vendor: Vendor,
) -> None:
    vendor.server.replies += [vendor.rate_limit_error(retry_after="120"), vendor.answer("never")]

    with pytest.raises(ThrottleError) as info:
        await call_with_retries(lambda: vendor.provider.complete(ASK), max_delay=10.0)

    assert (info.value.kind, info.value.retry_after) == ("rate_limit", 120.0)
    assert len(vendor.server.requests) == 1


async def test_a_rate_limit_without_retry_after_is_still_retried(vendor: Vendor) -> None:
    vendor.server.replies += [vendor.rate_limit_error(), vendor.answer("Paris")]

    response = await call_with_retries(lambda: vendor.provider.complete(ASK), base_delay=0.01)

    assert response.text == "Paris"
    assert len(vendor.server.requests) == 2


# -------------------------------------------------------- through a block run
class Doc(BlockState, total=False):
    text: str


async def run_summarize(block_store: SqliteBlockStore, provider: LLMProvider) -> Any:
    block = await block_store.get("summarize")
    assert block.max_retries > 0  # the block would retry a retryable error
    graph = Graph(Doc, name="quota-over-http")
    executor = BlockExecutor(providers=ProviderRegistry.single(provider), retry_wait=0)
    add_block(graph, "sum", block, executor, inputs={"text": "<<state.text>>"})
    graph.add_edge(START, "sum")
    return await graph.compile().run({"text": "Ducks fly south."})


async def test_a_block_with_retries_left_sends_a_used_up_quota_once(
    vendor: Vendor, block_store: SqliteBlockStore
) -> None:
    vendor.server.replies += [vendor.quota_error() for _ in range(12)]

    result = await run_summarize(block_store, vendor.provider)

    assert result.status == "failed"
    assert any("quota exhausted" in str(e) for e in result.errors), result.errors
    assert len(vendor.server.requests) == 1


async def test_a_block_waits_out_a_short_retry_after_before_its_next_call(
    vendor: Vendor, block_store: SqliteBlockStore
) -> None:
    stream = (
        openai_stream(['{"summary": "Ducks migrate."}'])
        if vendor.name == "openai"
        else anthropic_stream(['{"summary": "Ducks migrate."}'])
    )
    vendor.server.replies += [vendor.quota_error(retry_after="0.3"), stream]

    result = await run_summarize(block_store, vendor.provider)

    assert result.status == "completed", result.errors
    assert result.state["results"]["sum"] == {"summary": "Ducks migrate."}
    (gap,) = vendor.gaps()
    assert gap >= 0.3


# ------------------------------------------------------- the retry decision
def _http_date(seconds_from_now: float) -> str:
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


@pytest.mark.parametrize(
    ("headers", "low", "high"),
    [
        ({"retry-after": "2"}, 2.0, 2.0),
        ({"retry-after": "1.5"}, 1.5, 1.5),
        ({"retry-after-ms": "250"}, 0.25, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25, 0.25),
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0, 9.0),
        ({"retry-after": "-5"}, 0.0, 0.0),
    ],
)
def test_retry_after_headers_are_read_as_seconds(
    headers: dict[str, str], low: float, high: float
) -> None:
    wait = retry_after_seconds(headers)

    assert wait is not None
    assert low <= wait <= high


def test_a_retry_after_date_is_the_time_left_until_then() -> None:
    later = retry_after_seconds({"retry-after": _http_date(120)})
    past = retry_after_seconds({"retry-after": _http_date(-60)})

    assert later is not None
    assert 115.0 <= later <= 121.0  # the header has whole seconds
    assert past == 0.0


@pytest.mark.parametrize(
    "headers", [{}, {"retry-after": "soon"}, {"retry-after": "nan"}, {"retry-after": "inf"}]
)
def test_a_retry_after_that_is_not_a_wait_counts_as_not_given(headers: dict[str, str]) -> None:
    assert retry_after_seconds(headers) is None


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ThrottleError("q", provider="p", kind="quota_exhausted"), None),
        (ThrottleError("q", provider="p", kind="quota_exhausted", retry_after=2.0), 2.0),
        (ThrottleError("q", provider="p", kind="quota_exhausted", retry_after=31.0), None),
        (ThrottleError("r", provider="p", kind="rate_limit", retry_after=0.0), 0.0),
        (ThrottleError("r", provider="p", kind="rate_limit"), 0.5),
        (ThrottleError("o", provider="p", kind="overloaded", retry_after=45.0), None),
        (ProviderError("s", provider="p", kind="server"), 0.5),
        (ProviderError("a", provider="p", kind="auth"), None),
        (ProviderError("b", provider="p", kind="bad_request"), None),
        (ValueError("not a provider error"), None),
    ],
    ids=lambda value: getattr(value, "kind", str(value)),
)
def test_the_retry_decision_for_each_error(error: Exception, expected: float | None) -> None:
    assert provider_retry_delay(error, 0.5, max_delay=30.0) == expected


def test_the_quota_kind_of_earlier_releases_reads_as_quota_exhausted() -> None:
    error = ThrottleError("q", provider="p", kind="quota")  # type: ignore[arg-type]

    assert (error.kind, error.retryable) == ("quota_exhausted", False)
