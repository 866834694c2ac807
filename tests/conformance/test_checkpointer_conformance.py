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
from urllib.parse import quote, unquote

import pytest

conformance = pytest.importorskip("langgraph.checkpoint.conformance")
report_module = pytest.importorskip("langgraph.checkpoint.conformance.report")

from flowcore.compat.langgraph import (  # noqa: E402  (after the skip)
    AsyncPostgresSaver,
    AsyncSqliteSaver,
    InMemorySaver,
    SqliteSaver,
)

BASE = ("put", "put_writes", "get_tuple", "list", "delete_thread")
EXTENDED = ("delete_for_runs", "copy_thread", "prune")


def factories(tmp_path: Path, pg_url: str = "") -> dict[str, Callable[[], AsyncIterator[Any]]]:
    """For each saver, an async generator giving a fresh one (one per capability)."""
    files = (tmp_path / f"conformance-{n}.db" for n in itertools.count())
    schemas = itertools.count()

    async def memory() -> AsyncIterator[Any]:
        yield InMemorySaver()

    async def async_sqlite() -> AsyncIterator[Any]:
        async with AsyncSqliteSaver.from_conn_string(str(next(files))) as saver:
            yield saver

    async def sqlite() -> AsyncIterator[Any]:
        with SqliteSaver.from_conn_string(str(next(files))) as saver:
            yield saver

    async def async_postgres() -> AsyncIterator[Any]:
        # A fresh schema per saver, as each SQLite saver gets a fresh file.
        async with AsyncPostgresSaver.from_conn_string(
            await fresh_schema(pg_url, f"c{next(schemas)}")
        ) as saver:
            yield saver

    return {
        "InMemorySaver": memory,
        "AsyncSqliteSaver": async_sqlite,
        "SqliteSaver": sqlite,
        "AsyncPostgresSaver": async_postgres,
    }


async def fresh_schema(schema_url: str, suffix: str) -> str:
    """``schema_url`` (one test's schema) turned into the URL of a new sibling schema."""
    import psycopg

    base, _, options = schema_url.partition("options=")
    schema = unquote(options).removeprefix("-csearch_path=") + "_" + suffix
    async with await psycopg.AsyncConnection.connect(schema_url, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}")
    return f"{base}options={quote(f'-csearch_path={schema}')}"


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


@pytest.mark.parametrize(
    "name", ["InMemorySaver", "AsyncSqliteSaver", "SqliteSaver", "AsyncPostgresSaver"]
)
async def test_saver_passes_the_langgraph_conformance_suite(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    # Postgres: a real server (tests/pg.py); skipped without one unless FLOWCORE_REQUIRE_POSTGRES=1.
    pg_url = request.getfixturevalue("pg_schema_url") if "Postgres" in name else ""
    make = factories(tmp_path, pg_url)[name]
    registered = conformance.checkpointer_test(name=f"flowcore {name}")(make)
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
