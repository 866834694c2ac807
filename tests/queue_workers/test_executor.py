"""Spec: what only a queue has: late subscribers, runs cancelled while queued, bad targets.

Postgres is real (tests/pg.py); the worker is a real ``QueueWorker`` in the
test's event loop, started only where a spec needs one.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flowcore.port import Caller, RunOptions, RunRequest
from flowcore.queue import QueueConfigError, QueueExecutor, RunJob

from .helpers import running_worker

GUARD = 60.0


def _request(target: object, run_input: dict[str, object] | None = None) -> RunRequest:
    return RunRequest(target, run_input, Caller("req-q", "trace-q"))


def test_the_queue_needs_a_postgres_url() -> None:
    with pytest.raises(QueueConfigError, match=r"FLOWCORE_DATABASE_URL is 'runs\.db'"):
        QueueExecutor("runs.db")


def test_a_job_names_one_target_kind() -> None:
    with pytest.raises(QueueConfigError, match="a job's target must be"):
        RunJob(run_id="r1", target={"graph": "a", "pipeline": {}})


async def test_a_late_subscriber_replays_every_event_of_a_finished_run(pg_schema_url: str) -> None:
    async with QueueExecutor(pg_schema_url) as executor, running_worker(pg_schema_url):
        handle = executor.run(_request("kit.simple", {"question": "q"}))
        async with asyncio.timeout(GUARD):
            live = [event async for event in handle]
            replayed = [event async for event in executor.attach(handle.run_id)]
            assert await executor.attach(handle.run_id).final == await handle.final

    assert replayed == live
    assert [e.seq for e in replayed] == list(range(len(live)))


async def test_a_run_cancelled_while_queued_ends_cancelled_and_never_runs(
    pg_schema_url: str, tmp_path: Path
) -> None:
    async with QueueExecutor(pg_schema_url) as executor:
        handle = executor.run(_request("kit.slow", {"gate": str(tmp_path / "gate")}))
        await handle.submitted
        handle.cancel()
        async with asyncio.timeout(GUARD):
            events = [event async for event in handle]
        outcome = await handle.final
        async with running_worker(pg_schema_url):
            await asyncio.sleep(1.0)  # a worker now could take the job, if it were still there
        row = await executor.tables.get_run(handle.run_id)

    assert [e.type for e in events] == ["run_start", "error", "done"]
    assert outcome.status == "cancelled"
    assert row is not None
    assert row.status == "cancelled"
    assert row.attempts == 0


async def test_an_unknown_graph_fails_the_run_naming_the_registered_ones(
    pg_schema_url: str,
) -> None:
    async with QueueExecutor(pg_schema_url) as executor, running_worker(pg_schema_url):
        handle = executor.run(_request("kit.nope"))
        async with asyncio.timeout(GUARD):
            events = [event async for event in handle]
        outcome = await handle.final

    assert [e.type for e in events] == ["run_start", "error", "done"]
    assert outcome.status == "failed"
    assert outcome.error is not None
    assert "no graph named 'kit.nope'" in outcome.error
    assert "kit.simple" in outcome.error


async def test_a_target_that_cannot_travel_fails_the_run_at_once(pg_schema_url: str) -> None:
    async with QueueExecutor(pg_schema_url) as executor:
        handle = executor.run(_request(print, {}))
        outcome = await handle.final

    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.startswith("InvalidTargetError: cannot queue a builtin_function")


async def test_resuming_needs_the_thread(pg_schema_url: str) -> None:
    async with QueueExecutor(pg_schema_url) as executor:
        handle = executor.run(
            RunRequest("kit.pausing", None, Caller("r", "t"), RunOptions(resume="yes"))
        )
        outcome = await handle.final

    assert outcome.status == "failed"
    assert outcome.error is not None
    assert "needs its thread_id" in outcome.error
