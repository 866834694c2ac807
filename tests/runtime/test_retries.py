"""Spec: attempts of one task run under a timeout each and a retry rule between them."""

from __future__ import annotations

import asyncio

import pytest

from flowcore.runtime import AttemptTimeout, attempt_with_retries
from flowcore.runtime.retries import heartbeat


class Rule:
    """Retries ValueError up to ``limit`` attempts, recording what it was asked."""

    def __init__(self, limit: int, pause: float = 0.0) -> None:
        self.limit = limit
        self.pause = pause
        self.asked: list[tuple[str, int]] = []

    def pause_before_retry(self, error: Exception, failures: int) -> float | None:
        self.asked.append((type(error).__name__, failures))
        if isinstance(error, ValueError) and failures < self.limit:
            return self.pause
        return None


class Stop(Exception):
    """Stands for control flow (an interrupt): never retried."""


def flaky(failures: int, error: type[Exception] = ValueError):  # type: ignore[no-untyped-def]
    seen: list[int] = []

    async def call(attempt: int) -> str:
        seen.append(attempt)
        if len(seen) <= failures:
            raise error(f"attempt {attempt}")
        return f"ok on {attempt}"

    return call, seen


async def test_without_a_rule_there_is_one_attempt() -> None:
    call, seen = flaky(0)
    assert await attempt_with_retries(call, None) == ("ok on 1", 1)
    assert seen == [1]


async def test_a_retried_error_is_tried_again_until_it_succeeds() -> None:
    call, seen = flaky(2)
    rule = Rule(limit=3)

    assert await attempt_with_retries(call, rule) == ("ok on 3", 3)
    assert seen == [1, 2, 3]
    assert rule.asked == [("ValueError", 1), ("ValueError", 2)]


async def test_the_last_error_is_raised_when_the_rule_gives_up() -> None:
    call, seen = flaky(5)

    with pytest.raises(ValueError, match="attempt 2"):
        await attempt_with_retries(call, Rule(limit=2))
    assert seen == [1, 2]


async def test_gave_up_replaces_the_error_and_is_told_the_attempts() -> None:
    call, _ = flaky(5)

    def gave_up(exc: Exception, attempts: int) -> BaseException:
        return RuntimeError(f"{type(exc).__name__} after {attempts}")

    with pytest.raises(RuntimeError, match="ValueError after 3") as info:
        await attempt_with_retries(call, Rule(limit=3), gave_up=gave_up)
    assert isinstance(info.value.__cause__, ValueError)


async def test_passthrough_errors_are_neither_retried_nor_replaced() -> None:
    call, seen = flaky(5, Stop)
    rule = Rule(limit=5)

    with pytest.raises(Stop):
        await attempt_with_retries(
            call, rule, passthrough=(Stop,), gave_up=lambda e, n: RuntimeError()
        )
    assert seen == [1]
    assert rule.asked == []


async def test_an_attempt_past_its_timeout_raises_attempt_timeout() -> None:
    async def slow(attempt: int) -> None:
        await asyncio.Event().wait()  # never set: only the timeout ends it

    with pytest.raises(AttemptTimeout) as info:
        await attempt_with_retries(slow, None, timeout=0.01)
    assert info.value.timeout == 0.01


async def test_the_rules_pause_is_waited_between_attempts() -> None:
    call, _ = flaky(1)
    loop = asyncio.get_running_loop()
    started = loop.time()

    await attempt_with_retries(call, Rule(limit=2, pause=0.05))

    # a lower bound only: a busy machine may take longer, never shorter
    assert loop.time() - started >= 0.05


async def test_idle_timeout_fires_when_the_attempt_goes_quiet() -> None:
    async def quiet(_attempt: int) -> str:
        await asyncio.sleep(10)
        return "late"

    with pytest.raises(AttemptTimeout) as caught:
        await attempt_with_retries(quiet, None, idle_timeout=0.05)
    assert caught.value.kind == "idle"
    assert caught.value.timeout == 0.05


async def test_heartbeat_restarts_the_idle_timeout() -> None:
    async def busy(_attempt: int) -> str:
        # Longer in all than the idle timeout, but never quiet for that long.
        for _ in range(15):
            await asyncio.sleep(0.1)
            heartbeat()
        return "done"

    assert await attempt_with_retries(busy, None, idle_timeout=1.0) == ("done", 1)


async def test_heartbeat_never_extends_the_run_timeout() -> None:
    async def busy(_attempt: int) -> str:
        while True:
            await asyncio.sleep(0.01)
            heartbeat()

    with pytest.raises(AttemptTimeout) as caught:
        await attempt_with_retries(busy, None, timeout=0.1, idle_timeout=5.0)
    assert caught.value.kind == "run"
    assert caught.value.timeout == 0.1


def test_heartbeat_outside_an_attempt_does_nothing() -> None:
    heartbeat()
