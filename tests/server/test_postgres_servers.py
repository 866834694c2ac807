"""Spec: two ``flowcore serve`` apps on one Postgres database are one API (a stateless tier).

Each app is a whole server (its own executor, pool and run manager) as a
second process would be; they share nothing but the database. A key made
by one opens the other, a pipeline saved through one runs through the
other, a run started on one is read (record and events) on the other, a
clarifying thread started on one is answered on the other, and a run the
first server stops is continued by the second, never while the first lives.

Postgres is a real server (tests/pg.py); without one these skip, unless
``FLOWCORE_REQUIRE_POSTGRES=1``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from flowcore.port.sse import parse_sse
from flowcore.storage import DatabaseTarget
from tests.server.conftest import Server, client_for, start_server
from tests.server.graphs import summary_pipeline

VAGUE = "research stuff"
ANSWER = "a long weekly report; summarize it, then count the words of it"


@pytest.fixture
async def pair(tmp_path: Path, pg_schema_url: str) -> AsyncIterator[tuple[Server, Server]]:
    """Two servers on one Postgres schema (their SQLite paths differ and stay unused)."""
    database = DatabaseTarget("postgres", pg_schema_url)
    async with AsyncExitStack() as stack:
        first = await start_server(stack, tmp_path / "first.db", database)
        second = await start_server(stack, tmp_path / "second.db", database)
        yield first, second
    assert not (tmp_path / "first.db").exists()
    assert not (tmp_path / "second.db").exists()


async def _gated_run_going(server: Server) -> dict[str, Any]:
    """``server`` beats (alive to the others) and runs ada's gated run, held in ``wait``."""
    assert await server.manager.begin(recover=False) == []
    started = await server.ada.post("/api/runs", json={"target": {"graph": "gated"}})
    assert started.status_code == 201, started.text
    await asyncio.wait_for(server.gate.entered.wait(), 30)
    body: dict[str, Any] = started.json()
    return body


async def test_a_key_from_one_server_opens_the_other_and_a_revoke_reaches_both(
    pair: tuple[Server, Server],
) -> None:
    first, second = pair
    made_on_first, made_on_second = first.tokens["ada"], second.tokens["ada"]
    for server in pair:
        for token in (made_on_first, made_on_second):
            async with client_for(server.app, token) as client:
                assert (await client.get("/api/runs")).status_code == 200

    key = await second.app.state.services.keys.verify(made_on_first)
    assert key is not None
    await second.app.state.services.keys.revoke(key.key_id)
    for server in pair:
        async with client_for(server.app, made_on_first) as revoked:
            assert (await revoked.get("/api/runs")).status_code == 401
        async with client_for(server.app, made_on_second) as kept:
            assert (await kept.get("/api/runs")).status_code == 200


async def test_a_pipeline_saved_through_one_server_runs_through_the_other(
    pair: tuple[Server, Server],
) -> None:
    first, second = pair
    saved = await first.ada.post("/api/pipelines", json=summary_pipeline("shared_digest"))
    assert saved.status_code == 201, saved.text
    listed = (await second.ada.get("/api/pipelines")).json()["pipelines"]
    assert [p["id"] for p in listed] == ["shared_digest"]
    started = await second.ada.post(
        "/api/runs", json={"target": {"pipeline_id": "shared_digest"}, "input": {"doc": "x y"}}
    )
    assert started.status_code == 201, started.text
    done = await second.finished(second.ada, started.json()["run_id"])
    assert done["status"] == "completed"


async def test_a_run_started_on_one_server_is_read_on_the_other_by_its_owner_only(
    pair: tuple[Server, Server],
) -> None:
    first, second = pair
    started = await first.ada.post(
        "/api/runs", json={"target": {"graph": "echo"}, "input": {"text": "hello"}}
    )
    assert started.status_code == 201, started.text
    run_id = started.json()["run_id"]
    assert (await first.finished(first.ada, run_id))["status"] == "completed"

    async with client_for(second.app, first.tokens["ada"]) as ada_on_second:
        detail = (await ada_on_second.get(f"/api/runs/{run_id}")).json()
        assert detail["status"] == "completed"
        assert detail["output"]["upper"] == "HELLO"
        events = parse_sse((await ada_on_second.get(f"/api/runs/{run_id}/events")).text)
        assert events[0].type == "run_start"
        assert [e.type for e in events].count("done") == 1
        assert events[-1].type == "done"
        mine = (await ada_on_second.get("/api/runs")).json()["runs"]
        assert run_id in [r["run_id"] for r in mine]
    # bob (a user on both servers) sees it on neither.
    for server in pair:
        assert (await server.bob.get(f"/api/runs/{run_id}")).status_code == 404


async def test_a_clarifying_thread_started_on_one_server_is_answered_on_the_other(
    pair: tuple[Server, Server],
) -> None:
    first, second = pair
    asked = (await first.ada.post("/api/clarify", json={"intent": VAGUE})).json()
    assert asked["status"] == "question"
    async with client_for(second.app, first.tokens["ada"]) as ada_on_second:
        answered = await ada_on_second.post(
            "/api/clarify", json={"thread_id": asked["thread_id"], "answer": ANSWER}
        )
    assert answered.status_code == 200, answered.text
    assert answered.json()["status"] == "ready"
    assert answered.json()["user_messages"] == 2
    stolen = await second.bob.post(
        "/api/clarify", json={"thread_id": asked["thread_id"], "answer": ANSWER}
    )
    assert stolen.status_code == 404


async def test_a_run_is_taken_over_only_once_its_server_has_stopped(
    pair: tuple[Server, Server],
) -> None:
    first, second = pair
    assert await second.manager.begin(recover=False) == []
    run_id = (await _gated_run_going(first))["run_id"]

    # The first server beats: the second leaves its run alone.
    assert await second.manager.recover() == []
    async with client_for(second.app, first.tokens["ada"]) as ada_on_second:
        assert (await ada_on_second.get(f"/api/runs/{run_id}")).json()["status"] == "running"

        # The first server stops (its gate stays shut): the run is suspended at its checkpoint.
        await first.manager.shutdown()
        assert (await ada_on_second.get(f"/api/runs/{run_id}")).json()["status"] == "suspended"

        second.gate.opened.set()
        assert await second.manager.recover() == [run_id]
        assert await second.manager.recover() == []  # taken once
        detail = await second.finished(ada_on_second, run_id)
    assert detail["status"] == "completed"
    assert detail["output"]["upper"] == "WAITED"
    assert first.gate.opened.is_set() is False


async def test_a_stream_read_on_the_other_server_ends_with_the_run(
    pair: tuple[Server, Server],
) -> None:
    first, second = pair
    run_id = (await _gated_run_going(first))["run_id"]
    async with client_for(second.app, first.tokens["ada"]) as ada_on_second:
        # Asked while the run is going on the first server: the answer waits for its end.
        reading = asyncio.ensure_future(ada_on_second.get(f"/api/runs/{run_id}/events"))
        await asyncio.sleep(0.3)
        assert not reading.done()
        first.gate.opened.set()
        events = parse_sse((await asyncio.wait_for(reading, 30)).text)
    assert events[0].type == "run_start"
    assert [e.type for e in events].count("done") == 1
    assert events[-1].type == "done"
    assert getattr(events[-1], "status", None) == "completed"


async def test_a_run_going_on_one_server_is_cancelled_and_its_thread_guarded_through_the_other(
    pair: tuple[Server, Server],
) -> None:
    first, second = pair
    started = await _gated_run_going(first)
    run_id, thread = started["run_id"], started["thread_id"]
    async with client_for(second.app, first.tokens["ada"]) as ada_on_second:
        # The thread is busy on the first server: the second refuses a run on it.
        busy = await ada_on_second.post(
            "/api/runs", json={"target": {"graph": "gated"}, "thread_id": thread}
        )
        assert busy.status_code == 409
        assert run_id in busy.json()["error"]["message"]

        cancelled = await ada_on_second.post(f"/api/runs/{run_id}/cancel")
        assert cancelled.status_code == 202, cancelled.text
        events = parse_sse((await ada_on_second.get(f"/api/runs/{run_id}/events")).text)
        assert events[-1].type == "done"
        assert getattr(events[-1], "status", None) == "cancelled"
        detail = (await ada_on_second.get(f"/api/runs/{run_id}")).json()
        assert detail["status"] == "cancelled"
        again = await ada_on_second.post(f"/api/runs/{run_id}/cancel")
        assert again.status_code == 409
    assert not first.gate.opened.is_set()
