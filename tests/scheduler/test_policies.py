"""Spec: per-node retry and timeout policies.

``RetryPolicy`` retries a failing node (only for the exceptions its
``retry_on`` accepts) up to ``max_attempts``; when it gives up the node fails
with a :class:`NodeError` carrying the node, the attempt count and the last
exception. ``timeout`` bounds each attempt; running out of time is a
:class:`NodeTimeoutError`, and timed-out attempts are retried like failures.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any, TypedDict

import pytest

from flowcore import (
    START,
    FlowcoreError,
    Graph,
    NodeContext,
    NodeEndEvent,
    NodeError,
    NodeErrorEvent,
    NodeTimeoutError,
    RetryPolicy,
    append,
)

from .helpers import collect, runs_of


class State(TypedDict):
    log: Annotated[list[str], append]


class Flaky:
    """A node that raises ``exc`` on its first ``failures`` calls, then succeeds."""

    def __init__(self, failures: int, exc: Exception | None = None) -> None:
        self.failures = failures
        self.exc = exc or ConnectionError("transient outage")
        self.calls = 0
        self.attempts_seen: list[int] = []

    async def __call__(self, state: Any, ctx: NodeContext) -> dict[str, Any]:
        self.calls += 1
        self.attempts_seen.append(ctx.attempt)
        if self.calls <= self.failures:
            raise self.exc
        return {"log": [f"ok after {self.calls}"]}


def single(node: Any, **kwargs: Any) -> Graph:
    graph = Graph(State).add_node("flaky", node, **kwargs)
    return graph.add_edge(START, "flaky")


async def test_node_failing_twice_then_succeeding_completes_within_three_attempts() -> None:
    node = Flaky(failures=2)
    compiled = single(node, retry=RetryPolicy(max_attempts=3, initial_interval=0)).compile()

    events = await collect(compiled.stream({}))

    (end,) = [e for e in events if isinstance(e, NodeEndEvent)]
    assert end.attempts == 3
    assert events[-1].status == "completed"  # type: ignore[union-attr]
    assert node.calls == 3

    node.calls = 0
    result = await compiled.run({})
    assert result.status == "completed", result.errors
    assert result.state["log"] == ["ok after 3"]
    (record,) = runs_of(result, "flaky")
    assert record.status == "completed"
    assert record.attempts == 3


async def test_exhausting_retries_fails_with_node_error() -> None:
    cause = ConnectionError("still down")
    node = Flaky(failures=10, exc=cause)
    compiled = single(node, retry=RetryPolicy(max_attempts=3, initial_interval=0)).compile()

    result = await compiled.run({})

    assert result.status == "failed"
    assert node.calls == 3
    (error,) = result.errors
    assert isinstance(error, NodeError)
    assert isinstance(error, FlowcoreError)
    assert error.node == "flaky"
    assert error.attempts == 3
    assert error.cause is cause
    assert error.__cause__ is cause
    assert "'flaky'" in str(error)
    assert "3 attempts" in str(error)
    (record,) = runs_of(result, "flaky")
    assert (record.status, record.attempts, record.error) == ("failed", 3, error)


async def test_node_error_event_reports_the_attempts() -> None:
    compiled = single(
        Flaky(failures=10), retry=RetryPolicy(max_attempts=2, initial_interval=0)
    ).compile()

    events = await collect(compiled.stream({}))

    (err,) = [e for e in events if isinstance(e, NodeErrorEvent)]
    assert err.attempts == 2
    assert isinstance(err.error, NodeError)


async def test_without_a_retry_policy_a_node_runs_once() -> None:
    node = Flaky(failures=1)

    result = await single(node).compile().run({})

    assert result.status == "failed"
    assert node.calls == 1
    assert result.errors[0].attempts == 1  # type: ignore[attr-defined]


async def test_exception_not_matching_retry_on_fails_after_one_attempt() -> None:
    node = Flaky(failures=5, exc=ValueError("bad input, retrying won't help"))
    policy = RetryPolicy(
        max_attempts=5, retry_on=(ConnectionError, TimeoutError), initial_interval=0
    )

    result = await single(node, retry=policy).compile().run({})

    assert result.status == "failed"
    assert node.calls == 1
    (error,) = result.errors
    assert isinstance(error, NodeError)
    assert error.attempts == 1
    assert isinstance(error.cause, ValueError)


async def test_exception_matching_retry_on_type_is_retried() -> None:
    node = Flaky(failures=2, exc=ConnectionResetError("reset"))
    policy = RetryPolicy(max_attempts=3, retry_on=ConnectionError, initial_interval=0)

    result = await single(node, retry=policy).compile().run({})

    assert result.status == "completed", result.errors
    assert node.calls == 3


@pytest.mark.parametrize(("message", "calls"), [("transient glitch", 3), ("fatal", 1)])
async def test_predicate_retry_on(message: str, calls: int) -> None:
    node = Flaky(failures=2, exc=RuntimeError(message))
    policy = RetryPolicy(
        max_attempts=3, retry_on=lambda e: "transient" in str(e), initial_interval=0
    )

    result = await single(node, retry=policy).compile().run({})

    assert node.calls == calls
    assert result.status == ("completed" if calls == 3 else "failed")


async def test_ctx_attempt_counts_up_across_retries() -> None:
    node = Flaky(failures=3)

    result = (
        await single(node, retry=RetryPolicy(max_attempts=4, initial_interval=0)).compile().run({})
    )

    assert result.status == "completed", result.errors
    assert node.attempts_seen == [1, 2, 3, 4]


async def test_sync_node_is_retried_too() -> None:
    calls: list[int] = []

    def sync_flaky(state: Any, ctx: NodeContext) -> dict[str, Any]:
        calls.append(ctx.attempt)
        if ctx.attempt < 2:
            raise OSError("disk busy")
        return {"log": ["sync ok"]}

    result = (
        await single(sync_flaky, retry=RetryPolicy(max_attempts=2, initial_interval=0))
        .compile()
        .run({})
    )

    assert result.status == "completed", result.errors
    assert calls == [1, 2]


async def test_node_exceeding_its_timeout_fails_with_node_timeout_error() -> None:
    cancelled: list[bool] = []

    async def slow(state: Any) -> dict[str, Any]:
        try:
            await asyncio.Event().wait()  # never set
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return {"log": ["never"]}

    result = await single(slow, timeout=0.05).compile().run({})

    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, NodeTimeoutError)
    assert isinstance(error, TimeoutError)
    assert isinstance(error, NodeError)
    assert error.node == "flaky"
    assert error.attempts == 1
    assert error.timeout == 0.05
    assert "'flaky'" in str(error)
    assert "timeout" in str(error)
    assert cancelled == [True]  # the attempt was stopped, not abandoned
    assert result.state["log"] == []


@pytest.mark.parametrize("timeout", [None, 5.0], ids=["no-timeout", "generous-timeout"])
async def test_node_raising_its_own_timeout_error_is_not_a_node_timeout(
    timeout: float | None,
) -> None:
    own = TimeoutError("upstream API timed out")

    async def node(state: Any) -> dict[str, Any]:
        raise own

    result = await single(node, timeout=timeout).compile().run({})

    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, NodeError)
    assert not isinstance(error, NodeTimeoutError)
    assert error.cause is own


async def test_timed_out_attempts_are_retried() -> None:
    attempts: list[int] = []

    async def sometimes_slow(state: Any, ctx: NodeContext) -> dict[str, Any]:
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            await asyncio.Event().wait()  # hangs until the timeout cancels it
        return {"log": [f"attempt {ctx.attempt}"]}

    graph = single(
        sometimes_slow, timeout=0.05, retry=RetryPolicy(max_attempts=3, initial_interval=0)
    )

    result = await graph.compile().run({})

    assert result.status == "completed", result.errors
    assert attempts == [1, 2, 3]
    assert result.state["log"] == ["attempt 3"]
    assert runs_of(result, "flaky")[0].attempts == 3


async def test_timeout_on_every_attempt_fails_with_node_timeout_error() -> None:
    calls: list[int] = []

    async def always_slow(state: Any, ctx: NodeContext) -> None:
        calls.append(ctx.attempt)
        await asyncio.Event().wait()

    graph = single(always_slow, timeout=0.02, retry=RetryPolicy(max_attempts=2, initial_interval=0))

    result = await graph.compile().run({})

    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, NodeTimeoutError)
    assert error.attempts == 2
    assert calls == [1, 2]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"max_attempts": -1},
        {"initial_interval": -0.1},
        {"max_interval": -1},
        {"jitter": -1},
        {"backoff_factor": 0.5},
    ],
)
def test_retry_policy_rejects_invalid_values(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        RetryPolicy(**kwargs)


def test_retry_policy_is_frozen_data() -> None:
    policy = RetryPolicy(max_attempts=2)

    with pytest.raises(AttributeError):
        policy.max_attempts = 5  # type: ignore[misc]
    assert policy == RetryPolicy(max_attempts=2)


async def test_timeout_bounds_a_blocked_sync_node_too() -> None:
    # A thread cannot be interrupted: the run stops waiting for it instead.
    release = threading.Event()
    finished = threading.Event()

    def blocked(state: Any) -> dict[str, Any]:
        release.wait(60.0)  # far past the 0.05 s timeout, even on a busy machine
        finished.set()
        return {"log": ["late"]}

    try:
        result = await single(blocked, timeout=0.05).compile().run({})

        assert result.status == "failed"
        assert isinstance(result.errors[0], NodeTimeoutError)
        assert not finished.is_set()
        assert result.state["log"] == []
    finally:
        release.set()
        assert await asyncio.to_thread(finished.wait, 2.0)
