"""Spec: a job retried after its run had already ended (or paused) publishes that end, runs nothing.

A worker can die after a run's last checkpoint but before the run's outcome
reached the queue's tables; procrastinate then hands the job to another
worker. The ``JobRunner`` sees that the thread's latest checkpoint is this
run's own final (or paused) one and ends the run from it: no node runs
again, and the subscriber gets the outcome.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowcore.port import Caller, InProcExecutor, RunOptions, RunRequest
from flowcore.queue import RunJob
from flowcore.queue.runner import JobRunner
from flowcore.queue.tables import QueueTables
from flowcore.storage import open_backends
from flowcore.testing import build_kit_graphs

from .crash_graph import NAME as CRASH
from .crash_graph import build as build_crash


async def _queued(tables: QueueTables, run_id: str, thread_id: str, target: str) -> None:
    pool = tables._require_open()
    async with pool.connection() as conn, conn.transaction():
        await tables.insert_run(
            conn, run_id=run_id, thread_id=thread_id, target=target, strategy="enqueue"
        )


async def test_a_completed_run_is_finished_from_its_checkpoint_without_running_again(
    pg_schema_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "executions.jsonl"
    monkeypatch.setenv("FLOWCORE_CRASH_LOG", str(log))
    async with QueueTables(pg_schema_url) as tables, open_backends(pg_schema_url) as b:
        executor = InProcExecutor(graphs=build_crash(b.checkpoints))
        job = RunJob(run_id="r-done", target={"graph": CRASH}, input={"x": 1}, thread_id="t1")
        await _queued(tables, job.run_id, "t1", CRASH)
        # c holds on its first execution only (for the crash spec): count one already.
        log.write_text(json.dumps({"node": "c", "pid": 0}) + "\n")
        # The first worker ran it to the end, then died before publishing the outcome.
        first = executor.run(
            RunRequest(CRASH, {"x": 1}, Caller("r", "t"), RunOptions("t1")), run_id="r-done"
        )
        assert (await first.final).status == "completed"
        executions = log.read_text()

        status = await JobRunner(tables, executor, b.checkpoints)(None, job.to_json())
        row = await tables.get_run("r-done")
        events = await tables.events_after("r-done", -1)

    assert status == "completed"
    assert log.read_text() == executions  # nothing ran again
    assert row is not None
    assert row.status == "completed"
    assert row.outcome is not None
    assert row.outcome["output"]["d"] == 10
    assert [e["type"] for e in events] == ["run_start", "done"]


async def test_a_paused_run_is_finished_as_interrupted_with_its_question(
    pg_schema_url: str,
) -> None:
    async with QueueTables(pg_schema_url) as tables, open_backends(pg_schema_url) as b:
        executor = InProcExecutor(graphs=build_kit_graphs(b.checkpoints))
        job = RunJob(
            run_id="r-paused", target={"graph": "kit.pausing"}, input={"draft": "d"}, thread_id="t2"
        )
        await _queued(tables, job.run_id, "t2", "kit.pausing")
        first = executor.run(
            RunRequest("kit.pausing", {"draft": "d"}, Caller("r", "t"), RunOptions("t2")),
            run_id="r-paused",
        )
        paused = await first.final
        assert paused.status == "interrupted"

        status = await JobRunner(tables, executor, b.checkpoints)(None, job.to_json())
        row = await tables.get_run("r-paused")

    assert status == "interrupted"
    assert row is not None
    assert row.outcome is not None
    assert [q["interrupt_id"] for q in row.outcome["interrupts"]] == [
        q.interrupt_id for q in paused.interrupts
    ]
