"""Spec: a node's RetryPolicy respects what a model provider said about its error.

Errors are real SDK exceptions (``openai`` / ``anthropic``) turned into
flowcore errors by ``map_sdk_error``, exactly as the providers do. Even under
the default ``retry_on=Exception`` a used-up quota without ``Retry-After``,
or a bad API key, fails the node on its first attempt; a ``Retry-After``
within ``max_interval`` is waited out before the next attempt; one longer
than ``max_interval`` is not waited for at all. The verdict is found on the
exception a node raises or along its ``__cause__`` chain.
"""

from __future__ import annotations

import itertools
import time
from typing import Annotated, Any, TypedDict

import anthropic
import httpx
import openai
import pytest

from flowcore import START, Graph, NodeContext, NodeError, RetryPolicy, append
from flowcore.llm import ProviderError, ThrottleError
from flowcore.llm.sdk_errors import map_sdk_error


class State(TypedDict):
    log: Annotated[list[str], append]


def openai_error(status: int, code: str, **headers: str) -> ProviderError:
    """The flowcore error OpenAIProvider raises for this HTTP answer."""
    body = {"message": f"{code} happened", "type": code, "code": code}
    request = httpx.Request("POST", "https://api.openai.com/v1/chat/completions")
    response = httpx.Response(status, headers=headers, request=request, json={"error": body})
    sdk_type = {401: openai.AuthenticationError, 429: openai.RateLimitError}[status]
    mapped = map_sdk_error(sdk_type(body["message"], response=response, body=body), "openai")
    assert mapped is not None
    return mapped


def anthropic_billing_error(**headers: str) -> ProviderError:
    """The flowcore error AnthropicProvider raises for a 402 billing_error."""
    body = {"type": "error", "error": {"type": "billing_error", "message": "Billing issue."}}
    request = httpx.Request("POST", "https://api.anthropic.com/v1/messages")
    response = httpx.Response(402, headers=headers, request=request, json=body)
    sdk = anthropic.APIStatusError("Billing issue.", response=response, body=body)
    mapped = map_sdk_error(sdk, "anthropic")
    assert mapped is not None
    return mapped


class Failing:
    """A node that raises ``make()`` on its first ``failures`` calls, noting when it ran."""

    def __init__(self, failures: int, make: Any) -> None:
        self.failures = failures
        self.make = make
        self.started: list[float] = []

    async def __call__(self, state: Any, ctx: NodeContext) -> dict[str, Any]:
        self.started.append(time.monotonic())
        if len(self.started) <= self.failures:
            raise self.make()
        return {"log": [f"ok on attempt {ctx.attempt}"]}

    @property
    def gaps(self) -> list[float]:
        return [later - earlier for earlier, later in itertools.pairwise(self.started)]


async def run(node: Failing, policy: RetryPolicy) -> Any:
    graph = Graph(State).add_node("ask", node, retry=policy).add_edge(START, "ask")
    return await graph.compile().run({})


QUICK = RetryPolicy(max_attempts=4, initial_interval=0.001)


@pytest.mark.parametrize(
    "make",
    [
        lambda: openai_error(429, "insufficient_quota"),
        anthropic_billing_error,
        lambda: openai_error(401, "invalid_api_key"),
    ],
    ids=["openai-quota", "anthropic-billing", "openai-bad-key"],
)
async def test_an_error_the_provider_calls_final_fails_the_node_on_the_first_attempt(
    make: Any,
) -> None:
    node = Failing(failures=10, make=make)

    result = await run(node, QUICK)

    assert result.status == "failed"
    assert len(node.started) == 1
    (error,) = result.errors
    assert isinstance(error, NodeError)
    assert error.attempts == 1
    assert isinstance(error.cause, ProviderError)
    assert not error.cause.retryable


async def test_the_verdict_is_found_along_the_cause_chain() -> None:
    def wrapped() -> Exception:
        try:
            raise openai_error(429, "insufficient_quota")
        except ThrottleError as exc:
            try:
                raise LookupError("the summary step could not reach its model") from exc
            except LookupError as outer:
                return outer

    node = Failing(failures=10, make=wrapped)

    result = await run(node, QUICK)

    assert len(node.started) == 1
    assert isinstance(result.errors[0].__cause__, LookupError)


async def test_an_error_raised_while_handling_a_quota_error_is_still_retried() -> None:
    def fallback_failed() -> Exception:
        try:
            raise openai_error(429, "insufficient_quota")
        except ThrottleError:
            # Not "from": the node's own fallback failed, a separate problem.
            try:
                raise ConnectionError("fallback model unreachable")
            except ConnectionError as exc:
                return exc

    node = Failing(failures=1, make=fallback_failed)

    result = await run(node, QUICK)

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["ok on attempt 2"]


async def test_a_predicate_retry_on_does_not_override_a_used_up_quota() -> None:
    node = Failing(failures=10, make=lambda: openai_error(429, "insufficient_quota"))

    await run(node, RetryPolicy(max_attempts=4, initial_interval=0.001, retry_on=lambda e: True))

    assert len(node.started) == 1


@pytest.mark.parametrize(
    "make",
    [
        lambda: openai_error(429, "insufficient_quota", **{"retry-after-ms": "300"}),
        lambda: openai_error(429, "rate_limit_exceeded", **{"retry-after": "0.3"}),
        lambda: anthropic_billing_error(**{"retry-after": "0.3"}),
    ],
    ids=["openai-quota", "openai-rate-limit", "anthropic-billing"],
)
async def test_a_retry_after_within_max_interval_is_waited_out_before_the_next_attempt(
    make: Any,
) -> None:
    node = Failing(failures=1, make=make)

    result = await run(node, QUICK)

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["ok on attempt 2"]
    (gap,) = node.gaps
    # The policy alone would wait 1 ms; the server asked for 300 ms. Only a
    # lower bound: asyncio never wakes a sleeper early, a busy machine late.
    assert gap >= 0.25


async def test_a_retry_after_longer_than_max_interval_fails_the_node_without_waiting() -> None:
    node = Failing(
        failures=10, make=lambda: openai_error(429, "rate_limit", **{"retry-after": "3600"})
    )

    result = await run(node, RetryPolicy(max_attempts=4, initial_interval=0.001, max_interval=5))

    assert len(node.started) == 1
    (error,) = result.errors
    assert isinstance(error.cause, ThrottleError)
    assert error.cause.retry_after == 3600


async def test_a_throttle_without_retry_after_is_retried_on_the_policys_backoff() -> None:
    node = Failing(failures=2, make=lambda: openai_error(429, "rate_limit_exceeded"))

    result = await run(node, QUICK)

    assert result.status == "completed", result.errors
    assert len(node.started) == 3
