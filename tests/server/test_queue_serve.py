"""Spec: ``flowcore serve --executor queue``: the runs API hands runs to queue workers.

A run created over HTTP is executed by a ``QueueWorker`` (a real worker in the
test's event loop, as tests/queue_workers does) and its SSE stream comes back
whole; a server stopped mid-run does not stop the run, and the next server
re-attaches to it by run id so its stream completes; a cancel through the API
cancels the run in the queue. Postgres is real (tests/pg.py); without one these
skip, unless ``FLOWCORE_REQUIRE_POSTGRES=1``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("procrastinate")
pytest.importorskip("fastapi")

from flowcore.llm.offline import OfflineProvider
from flowcore.port import InProcExecutor
from flowcore.port.sse import parse_sse
from flowcore.server import ServerSettings
from flowcore.server.queue_executor import QueueServerExecutor, queue_executor_factory
from flowcore.server.queue_runs import DetachingRunManager
from flowcore.server.run_store import RunRow, RunStore
from flowcore.server.serve import open_server
from flowcore.storage import Backends, DatabaseTarget
from tests.queue_workers import step_graph
from tests.queue_workers.helpers import running_worker
from tests.server.conftest import client_for

GUARD = 60.0


def _worker_graphs(backends: Backends) -> InProcExecutor:
    """The worker's side: the steps graph on the worker's Postgres checkpointer."""
    return InProcExecutor(graphs=step_graph.build(backends.checkpoints), history=backends.history)


@asynccontextmanager
async def queue_server(tmp_path: Path, url: str, *, recover: bool) -> AsyncIterator[Any]:
    """A server on Postgres ``url`` whose runs go to the queue, begun (its lifespan's start)."""
    async with open_server(
        ServerSettings(),
        db_path=tmp_path / "unused.db",
        database=DatabaseTarget("postgres", url),
        provider=OfflineProvider(),
        executor_factory=queue_executor_factory(url, poll_interval=0.1),
        recover=recover,
    ) as app:
        executor = app.state.services.runs.executor
        # The same name the workers know it by; the server's copy only resolves and draws it.
        executor.register(step_graph.NAME, step_graph.build(executor.runner.checkpointer)["steps"])
        await app.state.services.runs.begin(recover=recover)
        yield app


def _open(gate: Path, tag: str, *steps: str) -> None:
    gate.mkdir(exist_ok=True)
    for step in steps:
        (gate / f"{tag}-{step}").touch()


async def _start(client: httpx.AsyncClient, gate: Path, tag: str) -> str:
    started = await client.post(
        "/api/runs",
        json={"target": {"graph": step_graph.NAME}, "input": {"tag": tag, "gate": str(gate)}},
    )
    assert started.status_code == 201, started.text
    run_id: str = started.json()["run_id"]
    return run_id


async def _queue_events(app: Any, run_id: str, until: str) -> list[dict[str, Any]]:
    """The run's events as the worker stored them, once one of type ``until`` is there."""
    tables = app.state.services.runs.executor.queue.tables
    async with asyncio.timeout(GUARD):
        while True:
            rows: list[dict[str, Any]] = await tables.events_after(run_id, -1)
            if any(row["type"] == until for row in rows):
                return rows
            await asyncio.sleep(0.05)


def _whole(text: str) -> list[Any]:
    """The SSE stream's events, checked whole: one start, one done, seq 0..n-1."""
    events = parse_sse(text)
    types = [e.type for e in events]
    assert types[0] == "run_start"
    assert types[-1] == "done"
    assert types.count("run_start") == 1
    assert types.count("done") == 1
    assert [e.seq for e in events] == list(range(len(events)))
    return events


async def test_a_run_created_over_http_is_executed_by_a_worker_and_streamed_whole(
    tmp_path: Path, pg_schema_url: str
) -> None:
    gate = tmp_path / "gate"
    _open(gate, "a", *step_graph.STEPS)
    async with (
        queue_server(tmp_path, pg_schema_url, recover=False) as app,
        running_worker(pg_schema_url, _worker_graphs),
    ):
        assert isinstance(app.state.services.runs, DetachingRunManager)
        assert isinstance(app.state.services.runs.executor, QueueServerExecutor)
        _, token = await app.state.services.keys.create("ada")
        async with client_for(app, token) as ada, asyncio.timeout(GUARD):
            run_id = await _start(ada, gate, "a")
            events = _whole((await ada.get(f"/api/runs/{run_id}/events")).text)
            detail = (await ada.get(f"/api/runs/{run_id}")).json()
            ui = await ada.get(f"/api/runs/{run_id}/ui-stream")
            row = await app.state.services.runs.executor.queue.tables.get_run(run_id)

    assert detail["status"] == "completed"
    assert detail["output"]["trail"] == ["a:s1", "a:s2", "a:s3"]
    assert events[-1].status == "completed"
    # The queue ran it: its own record of the run, executed once, by a worker.
    assert row is not None
    assert row.status == "completed"
    assert row.attempts == 1
    assert ui.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert ui.text.rstrip().endswith("data: [DONE]")


async def test_a_server_restarted_mid_run_re_attaches_and_the_stream_completes(
    tmp_path: Path, pg_schema_url: str
) -> None:
    gate = tmp_path / "gate"
    _open(gate, "b", "s1")
    async with running_worker(pg_schema_url, _worker_graphs):
        async with AsyncExitStack() as first_server:
            first = await first_server.enter_async_context(
                queue_server(tmp_path, pg_schema_url, recover=False)
            )
            _, token = await first.state.services.keys.create("ada")
            async with client_for(first, token) as ada:
                run_id = await _start(ada, gate, "b")
            # s1 is done and s2 waits on its gate: the run is mid-way in the worker.
            await _queue_events(first, run_id, "node_end")
        # The first server has stopped (and left): the run must go on in the worker.
        _open(gate, "b", "s2", "s3")
        async with queue_server(tmp_path, pg_schema_url, recover=True) as second:
            assert second.state.services.runs.live(run_id) is not None  # re-attached
            async with client_for(second, token) as ada, asyncio.timeout(GUARD):
                events = _whole((await ada.get(f"/api/runs/{run_id}/events")).text)
                detail = (await ada.get(f"/api/runs/{run_id}")).json()
                row = await second.state.services.runs.executor.queue.tables.get_run(run_id)

    assert detail["status"] == "completed"
    assert detail["output"]["trail"] == ["b:s1", "b:s2", "b:s3"]
    # Never stopped nor run again: the worker's one attempt carried it to the end.
    assert row is not None
    assert row.status == "completed"
    assert row.attempts == 1
    assert [e.node for e in events if e.type == "node_end"] == ["s1", "s2", "s3"]


async def test_a_cancel_through_the_api_cancels_the_queued_and_the_running_run(
    tmp_path: Path, pg_schema_url: str
) -> None:
    gate = tmp_path / "gate"
    async with queue_server(tmp_path, pg_schema_url, recover=False) as app:
        tables = app.state.services.runs.executor.queue.tables
        _, token = await app.state.services.keys.create("ada")
        async with client_for(app, token) as ada, asyncio.timeout(GUARD):
            # No worker yet: the run waits in the queue, and is cancelled there.
            queued = await _start(ada, gate, "q")
            assert (await ada.post(f"/api/runs/{queued}/cancel")).status_code == 202
            queued_events = _whole((await ada.get(f"/api/runs/{queued}/events")).text)
            async with running_worker(pg_schema_url, _worker_graphs):
                running = await _start(ada, gate, "r")
                await _queue_events(app, running, "node_start")  # s1 runs, held at its gate
                assert (await ada.post(f"/api/runs/{running}/cancel")).status_code == 202
                running_events = _whole((await ada.get(f"/api/runs/{running}/events")).text)
                details = [(await ada.get(f"/api/runs/{r}")).json() for r in (queued, running)]
            rows = [await tables.get_run(r) for r in (queued, running)]

    assert [d["status"] for d in details] == ["cancelled", "cancelled"]
    assert queued_events[-1].status == "cancelled"
    assert running_events[-1].status == "cancelled"
    assert [r.status for r in rows if r is not None] == ["cancelled", "cancelled"]
    assert rows[0] is not None
    assert rows[0].attempts == 0  # the queued one never ran


async def test_another_api_process_streams_a_running_run_live_from_the_queue(
    tmp_path: Path, pg_schema_url: str
) -> None:
    gate = tmp_path / "gate"
    async with (
        queue_server(tmp_path, pg_schema_url, recover=False) as first,
        queue_server(tmp_path, pg_schema_url, recover=False) as second,
        running_worker(pg_schema_url, _worker_graphs),
    ):
        _, token = await first.state.services.keys.create("ada")
        async with client_for(first, token) as ada, asyncio.timeout(GUARD):
            run_id = await _start(ada, gate, "c")
            assert second.state.services.runs.live(run_id) is None  # the first one follows it
            stream = second.state.services.runs.follow("ada", run_id)
            # Held at s1's gate, the run has not ended, yet the second process sees it start.
            seen = [await anext(stream)]
            while seen[-1].type != "node_start":
                seen.append(await anext(stream))
            assert (await ada.get(f"/api/runs/{run_id}")).json()["status"] == "running"
            _open(gate, "c", *step_graph.STEPS)
            seen += [event async for event in stream]

    assert seen[0].type == "run_start"
    assert seen[-1].type == "done"
    assert seen[-1].status == "completed"
    assert [e.seq for e in seen] == list(range(len(seen)))


async def test_a_recorded_run_that_never_reached_the_queue_fails_on_recovery(
    tmp_path: Path, pg_schema_url: str
) -> None:
    async with queue_server(tmp_path, pg_schema_url, recover=False) as app:
        manager = app.state.services.runs
        # A server that stopped between recording the run and queueing it (never beat).
        gone = RunStore(manager.store.db, server_id="server-gone")
        await gone.insert(
            RunRow("lost-run", "ada", None, {"graph": "steps"}, "steps", {}, "running", 0.0)
        )
        assert await manager.recover() == []
        row = await manager.store.get("lost-run")

    assert row is not None
    assert row.status == "failed"
    assert row.error == "the server stopped before the run was queued"
