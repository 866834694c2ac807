"""Spec: flowcore's ``InProcExecutor`` passes the executor-port conformance kit,
and the kit fails executors that break the port's promises.

The kit's tests (``flowcore.testing.ExecutorConformance``) run here against
the in-process executor on flowcore's compiled kit graphs. Then each check
is shown to bite: an ``InProcExecutor`` wrapped to break one promise
(buffer events, send two ``done``, lose a correlation id, ...) fails the
kit test that guards that promise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from flowcore.checkpoint import InMemoryCheckpointer
from flowcore.port import (
    AiEvent,
    InProcExecutor,
    RunHandle,
    RunOutcome,
    RunRequest,
    TextDeltaAiEvent,
    UsageReportAiEvent,
)
from flowcore.testing import ExecutorConformance, default_targets


class TestInProcExecutor(ExecutorConformance):
    @pytest.fixture
    async def executor(self) -> AsyncIterator[InProcExecutor]:
        async with InProcExecutor() as executor:
            yield executor


# ------------------------------------------------- the kit catches breakage

Rewrite = Callable[[AsyncIterator[AiEvent]], AsyncIterator[AiEvent]]


async def _unchanged(events: AsyncIterator[AiEvent]) -> AsyncIterator[AiEvent]:
    async for event in events:
        yield event


async def _buffered(events: AsyncIterator[AiEvent]) -> AsyncIterator[AiEvent]:
    everything = [event async for event in events]
    for event in everything:
        yield event


async def _done_twice(events: AsyncIterator[AiEvent]) -> AsyncIterator[AiEvent]:
    async for event in events:
        yield event
        if event.type == "done":
            yield event


async def _foreign_trace(events: AsyncIterator[AiEvent]) -> AsyncIterator[AiEvent]:
    async for event in events:
        yield dataclasses.replace(event, trace_id="someone-else") if event.seq == 3 else event


async def _one_invocation(events: AsyncIterator[AiEvent]) -> AsyncIterator[AiEvent]:
    async for event in events:
        if isinstance(event, TextDeltaAiEvent | UsageReportAiEvent):
            yield dataclasses.replace(event, invocation_id="always-the-same")
        else:
            yield event


class _Tampered:
    """A handle that breaks one promise of the port on top of a correct one."""

    def __init__(
        self,
        inner: RunHandle,
        rewrite: Rewrite,
        outcome: Callable[[RunOutcome], RunOutcome] | None,
        cancels: bool,
    ) -> None:
        self.run_id = inner.run_id
        self._inner = inner
        self._rewrite = rewrite
        self._outcome = outcome
        self._cancels = cancels

    def __aiter__(self) -> AsyncIterator[AiEvent]:
        return self._rewrite(aiter(self._inner))

    @property
    def final(self) -> Awaitable[RunOutcome]:
        return self._final()

    async def _final(self) -> RunOutcome:
        outcome = await self._inner.final
        return self._outcome(outcome) if self._outcome else outcome

    def cancel(self) -> None:
        if self._cancels:
            self._inner.cancel()


@dataclasses.dataclass
class _TamperingExecutor:
    inner: InProcExecutor
    rewrite: Rewrite = _unchanged
    outcome: Callable[[RunOutcome], RunOutcome] | None = None
    cancels: bool = True

    def run(self, request: RunRequest) -> _Tampered:
        return _Tampered(self.inner.run(request), self.rewrite, self.outcome, self.cancels)


class _QuickKit(ExecutorConformance):
    """The kit with short waits, so the broken executors fail fast."""

    run_timeout = 1.0
    first_event_timeout = 0.5


def _always_completed(outcome: RunOutcome) -> RunOutcome:
    return dataclasses.replace(outcome, status="completed")


BROKEN: dict[str, tuple[dict[str, Any], str]] = {
    "buffers events until the run ends": (
        {"rewrite": _buffered},
        "test_events_arrive_while_the_run_is_still_running",
    ),
    "sends done twice": (
        {"rewrite": _done_twice},
        "test_a_completed_run_streams_its_events_in_order",
    ),
    "yields an event after done": (
        {"rewrite": _done_twice},
        "test_iteration_stops_after_the_one_done",
    ),
    "loses the trace id of an event": (
        {"rewrite": _foreign_trace},
        "test_concurrent_runs_keep_their_correlation_ids_apart",
    ),
    "gives every LLM call one invocation id": (
        {"rewrite": _one_invocation},
        "test_llm_calls_and_tool_calls_carry_their_own_ids",
    ),
    "resolves final to a status done does not say": (
        {"outcome": _always_completed},
        "test_a_failing_run_reports_an_error_then_done_failed",
    ),
    "ignores cancel()": (
        {"cancels": False},
        "test_cancel_mid_run_ends_with_one_cancelled_done",
    ),
}


@pytest.mark.parametrize("broken", list(BROKEN))
async def test_the_kit_fails_an_executor_that(broken: str, tmp_path: Path) -> None:
    how, check = BROKEN[broken]
    kit = _QuickKit()
    targets = default_targets(InMemoryCheckpointer())
    test: Callable[..., Awaitable[None]] = getattr(kit, check)
    needs_tmp = "tmp_path" in test.__code__.co_varnames
    async with InProcExecutor() as inner:
        args: list[Any] = [_TamperingExecutor(inner, **how), targets]
        if needs_tmp:
            args.append(tmp_path)
        with pytest.raises((AssertionError, pytest.fail.Exception)):
            await test(*args)


async def test_the_same_wrapper_unbroken_passes_those_checks(tmp_path: Path) -> None:
    # The kit's own waits: an honest run must not have to finish within the quick
    # kit's 1 s (its first event within 0.5 s), which a busy machine can miss.
    kit = ExecutorConformance()
    targets = default_targets(InMemoryCheckpointer())
    async with InProcExecutor() as inner:
        honest = _TamperingExecutor(inner)
        for _, check in BROKEN.values():
            test: Callable[..., Awaitable[None]] = getattr(kit, check)
            args: list[Any] = [honest, targets]
            if "tmp_path" in test.__code__.co_varnames:
                args.append(tmp_path)
            await test(*args)
