"""Spec: LangGraph's four multitask strategies, on a real Postgres with a real queue worker.

A thread runs ``steps`` (``s1 -> s2 -> s3``, each waiting for its gate
file); while its first run is busy, a second run is submitted on the same
thread with each strategy:

* ``reject``: refused with ``ThreadBusyRejectedError``; the first run goes on;
* ``enqueue``: starts only after the first run ended, then continues the thread;
* ``interrupt``: the first run stops at its next step boundary, keeping the
  steps it finished; the second continues the thread from there;
* ``rollback``: the first run stops and its checkpoints are deleted; the
  second starts from the thread as it was before the first.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from flowcore.port import Caller, InProcExecutor, RunOptions, RunRequest
from flowcore.queue import QueueExecutor, ThreadBusyRejectedError
from flowcore.queue.executor import QueueRunHandle
from flowcore.storage import Backends

from .helpers import running_worker
from .step_graph import NAME, STEPS, build

GUARD = 60.0


def _executor(backends: Backends) -> InProcExecutor:
    return InProcExecutor(graphs=build(backends.checkpoints))


@pytest.fixture
async def queue(pg_schema_url: str) -> AsyncIterator[QueueExecutor]:
    async with QueueExecutor(pg_schema_url) as executor, running_worker(pg_schema_url, _executor):
        yield executor


def _request(tag: str, gates: Path, thread: str) -> RunRequest:
    return RunRequest(
        NAME,
        {"tag": tag, "gate": str(gates)},
        Caller(f"req-{tag}", f"tr-{tag}"),
        RunOptions(thread),
    )


def _open(gates: Path, tag: str, *steps: str) -> None:
    for step in steps or STEPS:
        (gates / f"{tag}-{step}").touch()


async def _until(handle: QueueRunHandle, events: AsyncIterator[Any], node: str) -> list[Any]:
    seen = []
    async with asyncio.timeout(GUARD):
        async for event in events:
            seen.append(event)
            if event.type == "node_start" and event.node == node:
                return seen
    raise AssertionError(f"run {handle.run_id} ended before {node} started: {seen}")


async def _rest(events: AsyncIterator[Any]) -> list[Any]:
    async with asyncio.timeout(GUARD):
        return [event async for event in events]


async def _final(handle: QueueRunHandle) -> Any:
    async with asyncio.timeout(GUARD):
        return await handle.final


async def test_reject_refuses_the_second_run_and_leaves_the_first_alone(
    queue: QueueExecutor, tmp_path: Path
) -> None:
    first = queue.run(_request("A", tmp_path, "t-reject"))
    events = aiter(first)
    await _until(first, events, "s1")

    with pytest.raises(ThreadBusyRejectedError) as refused:
        await queue.submit(_request("B", tmp_path, "t-reject"), strategy="reject")
    assert refused.value.active_run_id == first.run_id
    via_port = queue.run(_request("B", tmp_path, "t-reject"), strategy="reject")
    outcome = await _final(via_port)
    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.startswith("ThreadBusyRejectedError")

    _open(tmp_path, "A")
    await _rest(events)
    done = await _final(first)
    assert done.status == "completed"
    assert done.output is not None
    assert done.output["trail"] == ["A:s1", "A:s2", "A:s3"]


async def test_enqueue_runs_the_second_run_after_the_first(
    queue: QueueExecutor, tmp_path: Path
) -> None:
    first = queue.run(_request("A", tmp_path, "t-enqueue"))
    events = aiter(first)
    await _until(first, events, "s1")
    _open(tmp_path, "B")  # the second could run at once: only the queue holds it back
    second = await queue.submit(_request("B", tmp_path, "t-enqueue"), strategy="enqueue")
    await asyncio.sleep(1.0)
    row = await queue.tables.get_run(second.run_id)
    assert row is not None
    assert row.status == "queued"

    _open(tmp_path, "A")
    await _rest(events)
    assert (await _final(first)).status == "completed"
    outcome = await _final(second)
    assert outcome.status == "completed"
    assert outcome.output is not None
    assert outcome.output["trail"] == ["A:s1", "A:s2", "A:s3", "B:s1", "B:s2", "B:s3"]


async def test_interrupt_stops_the_first_run_at_a_step_boundary_keeping_its_steps(
    queue: QueueExecutor, tmp_path: Path
) -> None:
    first = queue.run(_request("A", tmp_path, "t-interrupt"))
    events = aiter(first)
    await _until(first, events, "s1")
    _open(tmp_path, "B")
    second = await queue.submit(_request("B", tmp_path, "t-interrupt"), strategy="interrupt")
    await asyncio.sleep(0.5)
    _open(tmp_path, "A", "s1")  # s1 finishes; the run stops before s2 does anything

    rest = await _rest(events)
    stopped = await _final(first)
    assert stopped.status == "cancelled"
    assert stopped.error is not None
    assert "interrupt" in stopped.error
    assert [e.node for e in rest if e.type == "node_end"] == ["s1"]
    outcome = await _final(second)
    assert outcome.status == "completed"
    assert outcome.output is not None
    assert outcome.output["trail"] == ["A:s1", "B:s1", "B:s2", "B:s3"]


async def test_rollback_stops_the_first_run_and_deletes_its_checkpoints(
    queue: QueueExecutor, tmp_path: Path, pg_schema_url: str
) -> None:
    first = queue.run(_request("A", tmp_path, "t-rollback"))
    events = aiter(first)
    _open(tmp_path, "A", "s1")
    await _until(first, events, "s2")  # s1 is done and checkpointed
    _open(tmp_path, "B")
    second = await queue.submit(_request("B", tmp_path, "t-rollback"), strategy="rollback")

    await _rest(events)
    stopped = await _final(first)
    assert stopped.status == "cancelled"
    assert stopped.error is not None
    assert "rolled back" in stopped.error
    outcome = await _final(second)
    assert outcome.status == "completed"
    assert outcome.output is not None
    assert outcome.output["trail"] == ["B:s1", "B:s2", "B:s3"]

    from flowcore.checkpoint.postgres import PostgresCheckpointer

    async with PostgresCheckpointer(pg_schema_url) as store:
        runs = {cp.metadata.get("run_id") for cp in await store.history("t-rollback")}
    assert first.run_id not in runs
    assert second.run_id in runs
