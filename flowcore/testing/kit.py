"""``ExecutorConformance``: pytest tests that any ``GraphExecutorPort`` must pass.

Subclass it in a test module (the class name must start with ``Test`` so
pytest collects it) and provide an ``executor`` fixture::

    import pytest
    from flowcore.testing import ExecutorConformance

    class TestMyExecutor(ExecutorConformance):
        @pytest.fixture
        def executor(self):
            return MyExecutor()

Every ``test_*`` method then runs against your executor. What they check:

- **order**: ``seq`` counts 0, 1, 2, ...; ``run_start`` comes first and
  ``done`` last; each node's ``node_start`` comes before its ``node_end``;
  a completed run closes every node it started.
- **one done, one final**: exactly one ``done``, then iteration stops;
  ``final`` resolves to one outcome (equal however often and by however
  many awaiters it is awaited) whose ``status`` and ``run_id`` agree with
  ``done`` and the handle.
- **no buffering**: the ``slow`` target cannot finish before a gate file
  exists, and the kit creates that file only after it received the run's
  first ``node_start``; an executor that holds events back until the run
  ends never delivers it and fails (after ``first_event_timeout``).
- **cancellation**: ``cancel()`` mid-run gives one ``done`` with status
  ``cancelled``, ``final`` resolves cancelled and iteration ends.
- **interrupt and resume**: ``pausing`` ends ``interrupted`` with an
  ``interrupt`` event and ``final.interrupts``; resumed on the same thread
  with ``RunOptions(thread_id=..., resume=...)`` it completes and its
  output holds the resume value.
- **errors**: ``failing`` gives an ``error`` event, then ``done`` failed,
  and ``final.error``.
- **correlation**: every event carries the request's ``request_id`` and
  ``trace_id``, the handle's ``run_id`` and the target's ``graph_name`` and
  ``graph_version``, also when two runs stream at once; the text deltas and
  the usage report of one LLM call share an ``invocation_id`` and different
  calls have different ones; tool call start and result share an id.
- **app data**: ``simple`` sends ``SIMPLE_DATA`` once from inside a node;
  it arrives as one ``data`` event between that node's start and end.
- **fan-out**: two subscribers of one ``RunEventRelay`` each get every
  event, in order.

Targets come from the ``kit_targets`` fixture: by default the compiled
graphs of :mod:`flowcore.testing.graphs` (the pausing one on a
``SqliteCheckpointer`` in ``tmp_path``). An executor that cannot run a
``CompiledGraph`` overrides it and returns a :class:`KitTargets` naming
targets it can run, with the same behaviour (see ``KitTargets``), for
example ``named_targets()`` when it resolves the kit's registered names.
Class attributes ``run_timeout`` and ``first_event_timeout`` bound every
wait, so a broken executor fails instead of hanging the suite.

The kit needs no pytest configuration of yours: its tests are marked for
pytest-asyncio, and an ``async def`` fixture your subclass declares with a
plain ``@pytest.fixture`` (an ``executor`` that enters ``async with``) is
handed to pytest-asyncio as well, so it runs under pytest-asyncio's default
strict mode without ``asyncio_mode = "auto"``.

This module imports pytest and pytest-asyncio; ``import flowcore.testing``
alone does not.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
import pytest_asyncio

from flowcore.checkpoint.sqlite import SqliteCheckpointer
from flowcore.port.events import AiEvent
from flowcore.port.protocol import (
    Caller,
    GraphExecutorPort,
    RunHandle,
    RunOptions,
    RunOutcome,
    RunRequest,
)
from flowcore.port.relay import RunEventRelay
from flowcore.testing.graphs import SIMPLE_DATA, KitTarget, KitTargets, default_targets

__all__ = ["ExecutorConformance"]

_ENVELOPE = ("run_id", "graph_name", "graph_version", "request_id", "trace_id", "seq")


def _as_asyncio_fixture(value: Any) -> Any:
    """``value`` re-declared with ``pytest_asyncio.fixture`` if it is a plain async pytest fixture.

    Under pytest-asyncio's strict mode (its default) a coroutine or async
    generator fixture declared with ``@pytest.fixture`` is never awaited and
    pytest refuses it; the kit's users should not need a setting for that.
    Anything that is not such a fixture is returned as it is.
    """
    marker = getattr(value, "_fixture_function_marker", None)  # pytest >= 8.4
    unwrap = getattr(value, "_get_wrapped_function", None)
    if marker is None or not callable(unwrap):
        return value
    function = unwrap()
    if getattr(function, "_force_asyncio_fixture", False):
        return value  # declared with pytest_asyncio.fixture already
    if not (inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function)):
        return value
    return pytest_asyncio.fixture(
        function,
        scope=marker.scope,
        params=marker.params,
        autouse=marker.autouse,
        ids=marker.ids,
        name=marker.name,
    )


def _caller() -> Caller:
    tag = uuid.uuid4().hex[:12]
    return Caller(
        request_id=f"kit-request-{tag}",
        trace_id=f"kit-trace-{tag}",
        user_id="kit-user",
        billing_account_id="kit-billing",
    )


def _types(events: Sequence[AiEvent]) -> list[str]:
    return [e.type for e in events]


def _describe(events: Sequence[AiEvent]) -> str:
    return ", ".join(
        f"{e.type}({getattr(e, 'node', '')})" if hasattr(e, "node") else e.type for e in events
    )


def _check_envelope(
    events: Sequence[AiEvent], handle: RunHandle, request: RunRequest, target: KitTarget
) -> None:
    """Correlation ids and ``seq`` of every event of one run."""
    expected = {
        "run_id": handle.run_id,
        "graph_name": target.graph_name,
        "graph_version": target.graph_version,
        "request_id": request.caller.request_id,
        "trace_id": request.caller.trace_id,
    }
    for i, event in enumerate(events):
        got = {key: getattr(event, key, "<missing>") for key in expected}
        assert got == expected, f"event {i} ({event.type}) carries {got}, expected {expected}"
        seq = getattr(event, "seq", "<missing>")
        assert seq == i, f"event {i} ({event.type}) has seq {seq!r}; seq must count 0, 1, 2, ..."


def _check_order(events: Sequence[AiEvent], *, closed: bool) -> None:
    """run_start first, one done last, node_start before node_end; ``closed``: all nodes ended."""
    assert events, "the run yielded no events at all"
    assert events[0].type == "run_start", f"first event is {events[0].type}, not run_start"
    dones = [i for i, e in enumerate(events) if e.type == "done"]
    assert len(dones) == 1, f"expected exactly one done, got {len(dones)}: {_describe(events)}"
    assert dones[0] == len(events) - 1, f"done is not the last event: {_describe(events)}"
    assert _types(events).count("run_start") == 1, f"run_start repeated: {_describe(events)}"
    open_nodes: dict[str, int] = {}
    for event in events:
        node = getattr(event, "node", None)
        if event.type == "node_start":
            assert isinstance(node, str), "node_start without a node name"
            open_nodes[node] = open_nodes.get(node, 0) + 1
        elif event.type in ("node_end", "node_error"):
            assert open_nodes.get(str(node), 0) > 0, (
                f"{event.type} of node {node!r} before its node_start: {_describe(events)}"
            )
            open_nodes[str(node)] -= 1
    if closed:
        still_open = sorted(n for n, count in open_nodes.items() if count)
        assert not still_open, f"nodes {still_open} started but never ended: {_describe(events)}"


def _done(events: Sequence[AiEvent]) -> AiEvent:
    return events[-1]


class ExecutorConformance:
    """Tests any ``GraphExecutorPort`` passes; subclass it and give an ``executor`` fixture.

    Example:
        >>> # class TestMine(ExecutorConformance):
        >>> #     @pytest.fixture
        >>> #     def executor(self):
        >>> #         return MyExecutor()
    """

    # Marked explicitly so the kit also runs under pytest-asyncio's strict mode.
    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [pytest.mark.asyncio]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A subclass's async fixtures (its executor, above all) work without asyncio_mode.
        for name, value in list(vars(cls).items()):
            wrapped = _as_asyncio_fixture(value)
            if wrapped is not value:
                setattr(cls, name, wrapped)

    run_timeout: ClassVar[float] = 20.0
    """Seconds one run may take to stream all its events."""
    first_event_timeout: ClassVar[float] = 10.0
    """Seconds the kit waits for a running run's first node_start (no-buffering check)."""

    # ------------------------------------------------------------- fixtures
    @pytest.fixture
    def executor(self) -> GraphExecutorPort:
        """The executor under test: override this fixture in your subclass."""
        raise NotImplementedError(
            "ExecutorConformance needs an 'executor' fixture: define "
            "@pytest.fixture def executor(self): return MyExecutor() in your subclass"
        )

    @pytest_asyncio.fixture
    async def kit_targets(self, tmp_path: Path) -> AsyncIterator[KitTargets]:
        """The targets to run: flowcore's kit graphs, threads kept in ``tmp_path``."""
        async with SqliteCheckpointer(tmp_path / "kit-threads.sqlite") as store:
            yield default_targets(store)

    # -------------------------------------------------------------- helpers
    def _request(
        self,
        target: KitTarget,
        *,
        input: Mapping[str, Any] | None = None,
        options: RunOptions | None = None,
    ) -> RunRequest:
        run_input = dict(target.input or {}) | dict(input or {})
        return RunRequest(
            target=target.target,
            input=run_input or None,
            caller=_caller(),
            options=options or RunOptions(),
        )

    async def _rest(self, handle: RunHandle, events: AsyncIterator[AiEvent]) -> list[AiEvent]:
        """Every remaining event, within ``run_timeout``; cancels the run on timeout."""
        out: list[AiEvent] = []
        try:
            async with asyncio.timeout(self.run_timeout):
                async for event in events:
                    out.append(event)
        except TimeoutError:
            handle.cancel()
            pytest.fail(
                f"the run's events did not end within {self.run_timeout:g} s; got "
                f"{_describe(out) or 'nothing'} (a run must end with done, then stop iterating)"
            )
        return out

    async def _final(self, handle: RunHandle) -> RunOutcome:
        try:
            async with asyncio.timeout(self.run_timeout):
                return await handle.final
        except TimeoutError:
            pytest.fail(f"handle.final did not resolve within {self.run_timeout:g} s")

    async def _run(
        self, executor: GraphExecutorPort, request: RunRequest
    ) -> tuple[RunHandle, list[AiEvent], RunOutcome]:
        handle = executor.run(request)
        events = await self._rest(handle, aiter(handle))
        return handle, events, await self._final(handle)

    async def _until_node_start(
        self, handle: RunHandle, events: AsyncIterator[AiEvent]
    ) -> list[AiEvent]:
        """Events up to and including the first node_start, within ``first_event_timeout``."""
        seen: list[AiEvent] = []
        try:
            async with asyncio.timeout(self.first_event_timeout):
                async for event in events:
                    seen.append(event)
                    if event.type == "node_start":
                        return seen
        except TimeoutError:
            handle.cancel()
            pytest.fail(
                f"no node_start arrived within {self.first_event_timeout:g} s while the run "
                f"was provably still running (got: {_describe(seen) or 'nothing'}); the "
                "executor holds events back instead of yielding them as they happen"
            )
        pytest.fail(f"the run ended without a node_start: {_describe(seen)}")

    def _check_final(self, handle: RunHandle, done: AiEvent, final: RunOutcome) -> None:
        assert done.type == "done"
        assert final.run_id == handle.run_id, "final.run_id differs from handle.run_id"
        status = getattr(done, "status", None)
        assert final.status == status, f"final.status {final.status!r} but done says {status!r}"

    # ---------------------------------------------------------------- order
    async def test_a_completed_run_streams_its_events_in_order(
        self, executor: GraphExecutorPort, kit_targets: KitTargets
    ) -> None:
        """run_start first, nodes opened before closed, done last and only once."""
        target = kit_targets.simple
        request = self._request(target)
        handle, events, final = await self._run(executor, request)

        _check_order(events, closed=True)
        _check_envelope(events, handle, request, target)
        started = [getattr(e, "node", None) for e in events if e.type == "node_start"]
        assert len(set(started)) >= 2, f"simple must run two nodes, ran {started}"
        assert getattr(_done(events), "status", None) == "completed", _describe(events)
        self._check_final(handle, _done(events), final)
        assert final.error is None
        assert final.interrupts == ()
        assert final.output is not None
        assert dict(final.output) | dict(target.output) == dict(final.output), (
            f"final.output {final.output} lacks {target.output}"
        )

    async def test_a_node_s_app_data_reaches_the_stream_as_a_data_event(
        self, executor: GraphExecutorPort, kit_targets: KitTargets
    ) -> None:
        """``simple`` sends SIMPLE_DATA once, from inside a node, redacted but whole."""
        target = kit_targets.simple
        request = self._request(target)
        handle, events, final = await self._run(executor, request)
        data = [e for e in events if e.type == "data"]
        assert [getattr(e, "data", None) for e in data] == [dict(SIMPLE_DATA)], (
            f"expected one data event with {dict(SIMPLE_DATA)}: {_describe(events)}"
        )
        node = getattr(data[0], "node", None)
        kinds = [(e.type, getattr(e, "node", None)) for e in events]
        at = events.index(data[0])
        assert ("node_start", node) in kinds[:at], f"data from {node!r} before it started"
        assert ("node_end", node) in kinds[at:], f"data from {node!r} after it ended"
        _check_envelope(events, handle, request, target)
        self._check_final(handle, _done(events), final)

    async def test_iteration_stops_after_the_one_done(
        self, executor: GraphExecutorPort, kit_targets: KitTargets
    ) -> None:
        """After done the same iterator stays exhausted: nothing comes after done."""
        handle = executor.run(self._request(kit_targets.simple))
        events = aiter(handle)
        got = await self._rest(handle, events)
        assert _types(got).count("done") == 1, f"expected one done: {_describe(got)}"
        assert got[-1].type == "done", f"events came after done: {_describe(got)}"
        with pytest.raises(StopAsyncIteration):
            async with asyncio.timeout(self.run_timeout):
                await anext(events)
        await self._final(handle)

    async def test_final_resolves_once_to_the_same_outcome_for_every_awaiter(
        self, executor: GraphExecutorPort, kit_targets: KitTargets
    ) -> None:
        """final awaited concurrently and again later gives one and the same outcome."""
        handle = executor.run(self._request(kit_targets.simple))
        early = [asyncio.ensure_future(self._final(handle)) for _ in range(2)]
        events = await self._rest(handle, aiter(handle))
        first, second = await asyncio.gather(*early)
        third = await self._final(handle)

        assert first == second == third
        self._check_final(handle, _done(events), third)

    # --------------------------------------------------------- no buffering
    async def test_events_arrive_while_the_run_is_still_running(
        self, executor: GraphExecutorPort, kit_targets: KitTargets, tmp_path: Path
    ) -> None:
        """The slow run waits for a gate the kit opens only after it got an event."""
        target = kit_targets.slow
        gate = tmp_path / f"kit-gate-{uuid.uuid4().hex}"
        request = self._request(target, input={"gate": str(gate)})
        handle = executor.run(request)
        events = aiter(handle)
        try:
            early = await self._until_node_start(handle, events)
            assert "done" not in _types(early)
        finally:
            # Open the gate whatever happened, so the run can always finish.
            await asyncio.to_thread(gate.touch)
        rest = await self._rest(handle, events)
        everything = early + rest

        _check_order(everything, closed=True)
        _check_envelope(everything, handle, request, target)
        assert getattr(_done(everything), "status", None) == "completed", _describe(everything)
        final = await self._final(handle)
        self._check_final(handle, _done(everything), final)
        assert final.output is not None
        assert dict(final.output) | dict(target.output) == dict(final.output)

    # --------------------------------------------------------- cancellation
    async def test_cancel_mid_run_ends_with_one_cancelled_done(
        self, executor: GraphExecutorPort, kit_targets: KitTargets, tmp_path: Path
    ) -> None:
        """The gate never opens; cancel() ends the run, once, as cancelled."""
        target = kit_targets.slow
        gate = tmp_path / f"kit-gate-never-{uuid.uuid4().hex}"
        request = self._request(target, input={"gate": str(gate)})
        handle = executor.run(request)
        events = aiter(handle)
        early = await self._until_node_start(handle, events)
        handle.cancel()
        everything = early + await self._rest(handle, events)

        _check_order(everything, closed=False)
        _check_envelope(everything, handle, request, target)
        assert getattr(_done(everything), "status", None) == "cancelled", _describe(everything)
        final = await self._final(handle)
        self._check_final(handle, _done(everything), final)
        assert final.status == "cancelled"
        handle.cancel()  # cancelling an ended run changes nothing
        assert await self._final(handle) == final

    # ---------------------------------------------------- interrupt, resume
    async def test_a_paused_run_resumes_with_the_answer(
        self, executor: GraphExecutorPort, kit_targets: KitTargets
    ) -> None:
        """pausing ends interrupted; resumed on its thread with a value, it completes."""
        target = kit_targets.pausing
        thread_id = f"kit-thread-{uuid.uuid4().hex}"
        first_request = self._request(target, options=RunOptions(thread_id=thread_id))
        handle, events, final = await self._run(executor, first_request)

        _check_order(events, closed=False)
        _check_envelope(events, handle, first_request, target)
        asked = [e for e in events if e.type == "interrupt"]
        assert len(asked) == 1, f"expected one interrupt event: {_describe(events)}"
        assert getattr(_done(events), "status", None) == "interrupted", _describe(events)
        self._check_final(handle, _done(events), final)
        assert final.thread_id == thread_id
        assert [q.interrupt_id for q in final.interrupts] == [
            getattr(asked[0], "interrupt_id", None)
        ], "final.interrupts must list the interrupt the event announced"

        resume_request = RunRequest(
            target=target.target,
            input=None,
            caller=_caller(),
            options=RunOptions(thread_id=thread_id, resume=kit_targets.resume_value),
        )
        handle2, events2, final2 = await self._run(executor, resume_request)

        _check_order(events2, closed=True)
        _check_envelope(events2, handle2, resume_request, target)
        assert handle2.run_id != handle.run_id, "a resume is a new run with its own run_id"
        assert getattr(_done(events2), "status", None) == "completed", _describe(events2)
        self._check_final(handle2, _done(events2), final2)
        assert final2.interrupts == ()
        assert final2.output is not None
        assert dict(final2.output) | dict(target.output) == dict(final2.output), (
            f"the resumed run's output {final2.output} lacks {target.output}"
        )

    # --------------------------------------------------------------- errors
    async def test_a_failing_run_reports_an_error_then_done_failed(
        self, executor: GraphExecutorPort, kit_targets: KitTargets
    ) -> None:
        """An error event precedes done(failed); final.error says what went wrong."""
        target = kit_targets.failing
        request = self._request(target)
        handle, events, final = await self._run(executor, request)

        _check_order(events, closed=False)
        _check_envelope(events, handle, request, target)
        types = _types(events)
        assert "error" in types, f"no error event: {_describe(events)}"
        error = events[types.index("error")]
        assert getattr(error, "message", None), "the error event has no message"
        assert getattr(_done(events), "status", None) == "failed", _describe(events)
        self._check_final(handle, _done(events), final)
        assert isinstance(final.error, str), "final.error must say what failed"
        assert final.error, "final.error must say what failed"

    # ---------------------------------------------------------- correlation
    async def test_llm_calls_and_tool_calls_carry_their_own_ids(
        self, executor: GraphExecutorPort, kit_targets: KitTargets
    ) -> None:
        """One invocation_id per LLM call, shared by its deltas and its usage report."""
        target = kit_targets.simple
        request = self._request(target)
        handle, events, _ = await self._run(executor, request)
        _check_envelope(events, handle, request, target)

        reports = [e for e in events if e.type == "usage_report"]
        assert len(reports) >= 2, f"simple makes two LLM calls: {_describe(events)}"
        calls = [getattr(r, "invocation_id", None) for r in reports]
        assert all(isinstance(c, str) and c for c in calls), "usage_report without invocation_id"
        assert len(set(calls)) == len(calls), f"two LLM calls share an invocation_id: {calls}"
        deltas = [e for e in events if e.type == "text_delta"]
        assert deltas, "simple streams text deltas"
        position = {getattr(r, "invocation_id", None): events.index(r) for r in reports}
        for delta in deltas:
            call = getattr(delta, "invocation_id", None)
            assert call in position, f"text_delta of invocation {call!r} has no usage_report"
            assert events.index(delta) < position[call], "a delta came after its usage report"
        assert len({getattr(d, "invocation_id", None) for d in deltas}) >= 2, (
            "both LLM calls of simple stream text, under different invocation ids"
        )

        starts = [e for e in events if e.type == "tool_call_start"]
        results = [e for e in events if e.type == "tool_call_result"]
        assert starts, f"simple makes a tool call: {_describe(events)}"
        assert len(starts) == len(results), _describe(events)
        for start in starts:
            call_id = getattr(start, "tool_call_id", None)
            matching = [r for r in results if getattr(r, "tool_call_id", None) == call_id]
            assert len(matching) == 1, f"tool call {call_id!r} needs exactly one result"
            assert events.index(start) < events.index(matching[0])

    async def test_concurrent_runs_keep_their_correlation_ids_apart(
        self, executor: GraphExecutorPort, kit_targets: KitTargets
    ) -> None:
        """Two runs streaming at once: each event carries its own run's ids."""
        target = kit_targets.simple
        requests = [self._request(target) for _ in range(2)]
        outcomes = await asyncio.gather(*(self._run(executor, r) for r in requests))

        assert outcomes[0][0].run_id != outcomes[1][0].run_id
        for request, (handle, events, final) in zip(requests, outcomes, strict=True):
            _check_order(events, closed=True)
            _check_envelope(events, handle, request, target)
            self._check_final(handle, _done(events), final)

    # -------------------------------------------------------------- fan-out
    async def test_every_relay_subscriber_gets_every_event_in_order(
        self, executor: GraphExecutorPort, kit_targets: KitTargets
    ) -> None:
        """Two subscribers of one RunEventRelay each see the whole run, in order."""
        target = kit_targets.simple
        request = self._request(target)
        handle = executor.run(request)
        relay = RunEventRelay(handle)
        ui = relay.subscribe("ui", policy="best_effort")
        ledger = relay.subscribe("ledger", policy="reliable")
        pump = relay.start()
        seen = await asyncio.gather(
            self._rest(handle, aiter(ui)), self._rest(handle, aiter(ledger))
        )
        await pump
        for events in seen:
            _check_order(events, closed=True)
            _check_envelope(events, handle, request, target)
        assert seen[0] == seen[1], "the two subscribers saw different events"
        self._check_final(handle, _done(seen[0]), await self._final(handle))
