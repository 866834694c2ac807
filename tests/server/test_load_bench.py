"""Spec: ``bench/serve_load.py`` really checks streams, and holds its runs open together.

The checker is fed doctored SSE streams (an event dropped, a second
``done``, an event repeated, a log the store lost) and must flag each; then
the bench runs small against a real ``flowcore serve`` and must report every
run completed, all streams live at once and nothing lost.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("fastapi")

from flowcore.port.events import AiEvent, DataAiEvent, DoneAiEvent, RunStartAiEvent
from flowcore.port.sse import to_sse

BENCH = Path(__file__).resolve().parents[2] / "bench" / "serve_load.py"


def _bench() -> ModuleType:
    name = "serve_load_bench"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def _events(count: int = 4) -> list[AiEvent]:
    common: dict[str, Any] = {
        "run_id": "r1",
        "graph_name": "load",
        "graph_version": "1",
        "request_id": "q",
        "trace_id": "t",
    }
    events: list[AiEvent] = [RunStartAiEvent(**common, seq=0, thread_id=None)]
    events += [
        DataAiEvent(**common, seq=i, node="work", name="progress", data={"step": i})
        for i in range(1, count)
    ]
    events.append(DoneAiEvent(**common, seq=count, status="completed"))
    return events


def _wire(events: list[AiEvent]) -> str:
    return "".join(to_sse(e) for e in events) + ": keep-alive\n\n"


def _check(sent: list[AiEvent], stored: list[AiEvent] | None = None) -> Any:
    bench = _bench()
    kept = _events() if stored is None else stored
    return bench.check_stream(bench._pairs(_wire(sent)), bench._pairs(_wire(kept)))


def test_a_whole_stream_passes() -> None:
    check = _check(_events())
    assert check.ok
    assert check.received == 5
    assert check.lost == 0


def test_a_dropped_event_is_lost() -> None:
    events = _events()
    check = _check(events[:2] + events[3:])
    assert check.lost == 1
    assert not check.ok
    assert check.one_done  # the done itself arrived


def test_a_gap_counts_even_when_the_store_lost_the_event_too() -> None:
    events = _events()
    doctored = events[:2] + events[3:]
    assert _check(doctored, stored=doctored).lost == 1


def test_a_dropped_last_event_is_lost_against_the_store() -> None:
    check = _check(_events()[:-1])
    assert check.lost == 1
    assert check.dones == 0
    assert not check.one_done


def test_two_dones_and_a_done_not_last_are_bad() -> None:
    events = _events()
    twice = _check([*events, events[-1]])
    assert twice.dones == 2
    assert not twice.one_done
    assert twice.duplicates == 1
    early = _check([events[0], events[-1], *events[1:-1]])
    assert early.dones == 1
    assert not early.done_last
    assert early.out_of_order == 1
    assert not early.ok


def test_events_the_store_lacks_are_counted() -> None:
    check = _check(_events(), stored=[])
    assert check.unstored == 5
    assert check.lost == 0
    assert not check.ok


def test_a_different_event_under_a_stored_seq_is_flagged() -> None:
    events = _events()
    # A done where the store has the progress event seq 1.
    swapped = [events[0], replace(events[-1], seq=1), *events[2:]]
    check = _check(swapped)
    assert check.mismatched == 1
    assert not check.ok


def test_the_bench_holds_its_runs_open_together_and_loses_nothing() -> None:
    bench = _bench()
    figures, results = bench.run_bench(runs=24, concurrency=12)
    assert not bench.failed(figures), figures
    assert figures["completed"] == 24
    assert figures["peak_open_streams"] == 12
    assert figures["open_at_release"] == 12
    assert figures["events_lost"] == 0
    assert figures["streams_without_one_done"] == 0
    assert figures["server_errors"] == 0
    # fetch, work (three progress events), finish: run_start, 3 x (start, end), 3 data, done.
    assert {r.check.received for r in results} == {11}
    assert figures["events"] == 24 * 11
