"""Spec: RunEventRelay pumps a run to the end and fans its events out.

Every subscriber gets every event in order. A best-effort subscriber (a UI)
that reads slowly, stops reading or never reads cannot stall the run or the
pump, and never costs a reliable subscriber (a usage ledger) an event: its
bounded buffer drops its oldest events (counted) but always keeps ``error``
and ``done``. A reliable subscriber loses nothing; when it falls behind, the
pump waits for it, while the run itself goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from flowcore.port import (
    AiEvent,
    Caller,
    DoneAiEvent,
    InProcExecutor,
    NodeStartAiEvent,
    RelayStateError,
    RunEventRelay,
    RunRequest,
    Subscription,
)

from .graphs import chat_graph, chatty_graph

GUARD = 30.0  # only reached when a spec fails; a busy machine stays far below it
CALLS = 6
WORDS = 40


def chatty_run(executor: InProcExecutor) -> Any:
    graph, _ = chatty_graph(CALLS, WORDS)
    return executor.run(RunRequest(graph, {}, Caller("req-1", "trace-1")))


async def read_all(subscription: Subscription) -> list[AiEvent]:
    return [event async for event in subscription]


def common(seq: int) -> dict[str, Any]:
    return {
        "run_id": "r",
        "graph_name": "g",
        "graph_version": "1",
        "request_id": "q",
        "trace_id": "t",
        "seq": seq,
    }


async def synthetic(count: int) -> AsyncIterator[AiEvent]:
    for i in range(count):
        yield NodeStartAiEvent(**common(i), node=f"n{i}")
    yield DoneAiEvent(**common(count), status="completed")


@pytest.fixture
async def executor() -> AsyncIterator[InProcExecutor]:
    async with InProcExecutor() as ex:
        yield ex


async def test_every_subscriber_gets_every_event_in_order(executor: InProcExecutor) -> None:
    graph, _ = chat_graph()
    relay = RunEventRelay(executor.run(RunRequest(graph, {"question": "q"}, Caller("r", "t"))))
    subscribers = [
        relay.subscribe("ui", policy="best_effort"),
        relay.subscribe("ledger"),
        relay.subscribe("log", policy="reliable"),
    ]
    relay.start()
    async with asyncio.timeout(GUARD):
        got = await asyncio.gather(*(read_all(s) for s in subscribers))

    assert got[0] == got[1] == got[2]
    assert [e.seq for e in got[0]] == list(range(len(got[0])))
    assert got[0][0].type == "run_start"
    assert got[0][-1].type == "done"
    assert relay.finished
    assert relay.pumped == len(got[0])
    assert all(s.dropped == 0 for s in subscribers)


async def test_a_ui_that_never_reads_stalls_nothing_and_costs_the_ledger_nothing(
    executor: InProcExecutor,
) -> None:
    handle = chatty_run(executor)
    relay = RunEventRelay(handle)
    ui = relay.subscribe("ui", policy="best_effort", max_buffer=8)
    ledger = relay.subscribe("ledger", policy="reliable")
    relay.start()

    async with asyncio.timeout(GUARD):
        ledger_events = await read_all(ledger)  # the ledger keeps up; the UI never reads
        outcome = await handle.final
        await relay.start()

    assert outcome.status == "completed"
    usage = [e for e in ledger_events if e.type == "usage_report"]
    assert len(usage) == CALLS  # every model call billed
    assert [e.seq for e in ledger_events] == list(range(relay.pumped))
    # The UI kept only its newest events, and how it ended.
    assert ui.buffered <= 8 + 1
    assert ui.dropped == relay.pumped - ui.buffered
    ui_events = await read_all(ui)
    assert ui_events[-1].type == "done"
    assert ui_events == ledger_events[-len(ui_events) :]


async def test_a_slow_ui_falls_behind_while_the_run_and_the_ledger_finish(
    executor: InProcExecutor,
) -> None:
    handle = chatty_run(executor)
    relay = RunEventRelay(handle)
    ui = relay.subscribe("ui", policy="best_effort", max_buffer=16)
    ledger = relay.subscribe("ledger")
    ui_seen: list[AiEvent] = []
    pump_ended = asyncio.Event()

    async def slow_ui() -> None:
        async for event in ui:
            ui_seen.append(event)
            if len(ui_seen) == 1:
                # A client on a bad connection: after its first event nothing gets
                # through until the pump has ended. (A few ms per event instead would
                # let it keep up whenever the machine is busy.)
                await pump_ended.wait()

    ui_task = asyncio.create_task(slow_ui())
    pump = relay.start()
    async with asyncio.timeout(GUARD):
        ledger_events = await read_all(ledger)
        await pump
        outcome = await handle.final
        read_when_pump_ended = len(ui_seen)
        pump_ended.set()
        await ui_task

    assert outcome.status == "completed"
    assert len([e for e in ledger_events if e.type == "usage_report"]) == CALLS
    assert [e.seq for e in ledger_events] == list(range(len(ledger_events)))
    # The pump did not wait for the UI: it had read only part of the run by then ...
    assert read_when_pump_ended < len(ledger_events)
    # ... and then got what its buffer kept, in order, ending with done.
    seqs = [e.seq for e in ui_seen]
    assert seqs == sorted(seqs)
    assert ui_seen[-1].type == "done"
    assert ui.dropped == len(ledger_events) - len(ui_seen)
    assert ui.dropped > 0


async def test_a_ui_that_stops_reading_half_way_does_not_cost_the_ledger_an_event(
    executor: InProcExecutor,
) -> None:
    handle = chatty_run(executor)
    relay = RunEventRelay(handle)
    ui = relay.subscribe("ui", policy="best_effort", max_buffer=4)
    ledger = relay.subscribe("ledger")
    relay.start()

    ui_seen: list[AiEvent] = []
    async with asyncio.timeout(GUARD):
        async for event in ui:
            ui_seen.append(event)
            if len(ui_seen) == 5:
                break  # the browser tab was closed
        ledger_events = await read_all(ledger)
        await relay.start()
        outcome = await handle.final

    assert outcome.status == "completed"
    assert len(ui_seen) == 5
    assert len([e for e in ledger_events if e.type == "usage_report"]) == CALLS
    assert ledger_events[-1].type == "done"
    assert [e.seq for e in ledger_events] == list(range(len(ledger_events)))
    assert ui.buffered <= 4 + 1  # what it left unread stayed bounded


async def test_a_closed_subscription_is_no_longer_fed(executor: InProcExecutor) -> None:
    relay = RunEventRelay(chatty_run(executor))
    ui = relay.subscribe("ui", policy="best_effort")
    ledger = relay.subscribe("ledger")
    async with ui:
        pass  # leaving the block closes it
    relay.start()
    async with asyncio.timeout(GUARD):
        await read_all(ledger)
        await relay.start()

    assert ui.closed
    assert ui.buffered == 0
    assert await read_all(ui) == []


async def test_a_slow_reliable_subscriber_loses_nothing_and_the_run_does_not_wait_for_it(
    executor: InProcExecutor,
) -> None:
    handle = chatty_run(executor)
    relay = RunEventRelay(handle)
    ledger = relay.subscribe("ledger", policy="reliable", max_buffer=2)
    relay.start()
    got: list[AiEvent] = []
    run_ended_after: int | None = None

    async with asyncio.timeout(GUARD):
        async for event in ledger:
            got.append(event)
            if len(got) == 1:
                # The ledger stalls on its first event: the run must end all the same
                # (a run that waited for the pump would never get here).
                await handle.final
            if run_ended_after is None and handle.done:
                run_ended_after = len(got)

    assert got[-1].type == "done"
    assert [e.seq for e in got] == list(range(len(got)))
    assert ledger.dropped == 0
    assert len([e for e in got if e.type == "usage_report"]) == CALLS
    # The run finished while the ledger was still far behind (the pump waited, not the run).
    assert run_ended_after is not None
    assert run_ended_after < len(got) // 2


async def test_best_effort_drops_the_oldest_events_but_never_done() -> None:
    relay = RunEventRelay(synthetic(10))
    ui = relay.subscribe("ui", policy="best_effort", max_buffer=3)
    await relay.run()

    got = await read_all(ui)
    assert [e.seq for e in got] == [7, 8, 9, 10]
    assert got[-1].type == "done"
    assert ui.dropped == 7
    assert ui.delivered == 4


async def test_subscribing_after_the_pump_started_is_refused() -> None:
    relay = RunEventRelay(synthetic(1))
    relay.subscribe("early")
    pump = relay.start()
    with pytest.raises(RelayStateError, match="subscribe everyone before"):
        relay.subscribe("late")
    with pytest.raises(RelayStateError, match="already pumping"):
        await relay.run()
    await pump


async def test_a_source_that_breaks_off_is_reported_to_every_subscriber() -> None:
    async def broken() -> AsyncIterator[AiEvent]:
        yield NodeStartAiEvent(**common(0), node="a")
        raise ConnectionError("worker died")

    relay = RunEventRelay(broken())
    ledger = relay.subscribe("ledger")
    ui = relay.subscribe("ui", policy="best_effort")
    with pytest.raises(ConnectionError):
        await relay.run()

    for subscription in (ledger, ui):
        assert (await anext(subscription)).type == "node_start"
        with pytest.raises(RelayStateError, match="worker died"):
            await anext(subscription)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"policy": "sometimes"}, "policy must be"), ({"max_buffer": 0}, "at least 1")],
)
def test_bad_subscription_settings_are_refused(kwargs: dict[str, Any], message: str) -> None:
    relay = RunEventRelay(synthetic(0))
    with pytest.raises(ValueError, match=message):
        relay.subscribe("x", **kwargs)
