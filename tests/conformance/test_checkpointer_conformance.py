"""Spec: flowcore's LangGraph savers pass LangGraph's own checkpointer conformance suite.

``langgraph-checkpoint-conformance`` (a test-only extra) runs about 80
checks, grouped by capability: the base ones every saver must pass (put,
put_writes, get_tuple, list, delete_thread) and extended ones a saver may
offer (delete_for_runs, copy_thread, prune). It detects a capability by the
saver having the async method (``aput`` ...), so our savers are passed to
it as they are: no LangGraph base class, no wrapper. Each saver's report is
printed to the terminal, also without ``-s``. Skipped when the suite is not
installed.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

conformance = pytest.importorskip("langgraph.checkpoint.conformance")
report_module = pytest.importorskip("langgraph.checkpoint.conformance.report")

from flowcore.compat.langgraph import (  # noqa: E402  (after the skip)
    AsyncSqliteSaver,
    InMemorySaver,
    SqliteSaver,
)

BASE = ("put", "put_writes", "get_tuple", "list", "delete_thread")
EXTENDED = ("delete_for_runs", "copy_thread", "prune")


def factories(tmp_path: Path) -> dict[str, Callable[[], AsyncIterator[Any]]]:
    """For each saver, an async generator giving a fresh one (one per capability)."""
    files = (tmp_path / f"conformance-{n}.db" for n in itertools.count())

    async def memory() -> AsyncIterator[Any]:
        yield InMemorySaver()

    async def async_sqlite() -> AsyncIterator[Any]:
        async with AsyncSqliteSaver.from_conn_string(str(next(files))) as saver:
            yield saver

    async def sqlite() -> AsyncIterator[Any]:
        with SqliteSaver.from_conn_string(str(next(files))) as saver:
            yield saver

    return {"InMemorySaver": memory, "AsyncSqliteSaver": async_sqlite, "SqliteSaver": sqlite}


def summary(name: str, report: Any) -> list[str]:
    """One line per capability with its counts, and the totals."""
    lines = [f"LangGraph checkpointer conformance: flowcore {name}"]
    totals = [0, 0, 0]
    for cap in (*BASE, *EXTENDED):
        result = report.results[cap]
        kind = "base" if cap in BASE else "extended"
        if not result.detected:
            state = "not implemented"
        else:
            state = "passed" if result.passed else "FAILED"
        counts = (result.tests_passed, result.tests_failed, result.tests_skipped)
        totals = [t + c for t, c in zip(totals, counts, strict=True)]
        lines.append(
            f"  {cap:16} {kind:8} {state:15} passed {counts[0]:3}  failed {counts[1]:3}"
            f"  skipped {counts[2]:3}"
        )
    detected = sum(1 for r in report.results.values() if r.detected)
    lines.append(
        f"  total: {totals[0]} passed, {totals[1]} failed, {totals[2]} skipped; "
        f"{detected}/{len(report.results)} capabilities detected; "
        f"level {report.conformance_level()}"
    )
    return lines


@pytest.mark.parametrize("name", ["InMemorySaver", "AsyncSqliteSaver", "SqliteSaver"])
async def test_saver_passes_the_langgraph_conformance_suite(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registered = conformance.checkpointer_test(name=f"flowcore {name}")(factories(tmp_path)[name])
    report = await conformance.validate(registered)
    with capsys.disabled():
        print()
        report.print_report()
        print("\n".join(summary(name, report)))
    failures = [f for r in report.results.values() for f in r.failures]
    assert report.passed_all_base(), failures
    # Our savers implement the extended capabilities too, and they pass.
    assert all(report.results[cap].detected for cap in EXTENDED)
    assert report.passed_all(), failures
    assert report.conformance_level() == "FULL"
