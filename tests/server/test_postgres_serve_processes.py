"""Spec: ``flowcore serve`` processes on ``FLOWCORE_DATABASE_URL=postgresql://...`` are one API.

Two real server processes, started with no ``--db`` and the database named
by the environment only, behind one Postgres: a key made with ``flowcore
keys create`` opens both, a run started on one is read on the other, and a
run the first stops with SIGTERM is finished by another (the third, started
later, at its start; or the second on its periodic sweep, if that comes
first), without running its saved nodes again. The SQLite default file is never
created.

Postgres is a real server (tests/pg.py); without one these skip, unless
``FLOWCORE_REQUIRE_POSTGRES=1``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("uvicorn")

from tests.server.live import GUARD, ROOT, Served, new_key


def test_two_serve_processes_on_postgres_share_keys_and_runs_and_a_third_finishes_a_run(
    tmp_path: Path, pg_schema_url: str, servers: list[Served]
) -> None:
    unused = tmp_path / "default.db"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FLOWCORE_DATABASE_URL": pg_schema_url,
        "FLOWCORE_DB": str(unused),
        "FLOWCORE_PROVIDER": "offline",
        "FLOWCORE_TEST_TRACE": str(tmp_path / "trace.txt"),
        "FLOWCORE_TEST_SLOW": "3",
    }
    token = new_key(env, None, "ada")
    headers = {"Authorization": f"Bearer {token}"}

    def call(server: Served, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, server.base + path, headers=headers, timeout=GUARD, **kwargs)

    first = Served(None, env, tmp_path / "first.log", servers)
    second = Served(None, env, tmp_path / "second.log", servers)
    assert "db postgresql://" in (tmp_path / "first.log").read_text()

    started = call(first, "POST", "/api/runs", json={"target": {"graph": "slow"}})
    assert started.status_code == 201, started.text
    run_id = started.json()["run_id"]
    trace = tmp_path / "trace.txt"
    deadline = time.monotonic() + GUARD
    while "slow:start" not in (trace.read_text() if trace.exists() else ""):
        assert time.monotonic() < deadline, "the run never reached `slow`"
        time.sleep(0.05)
    # Read on the second server while the first runs `slow`.
    assert call(second, "GET", f"/api/runs/{run_id}").json()["status"] == "running"
    assert run_id in [r["run_id"] for r in call(second, "GET", "/api/runs").json()["runs"]]

    assert first.stop() == 0
    assert call(second, "GET", f"/api/runs/{run_id}").json()["status"] == "suspended"
    assert trace.read_text().split() == ["prepare", "slow:start"]

    # A server started later takes the run over (the first left cleanly) and finishes it;
    # under a slow machine the second's 30 s sweep may take it first: the same to readers.
    third = Served(None, env, tmp_path / "third.log", servers)
    stream = call(second, "GET", f"/api/runs/{run_id}/events")
    assert stream.text.count("event: done") == 1
    assert call(third, "GET", f"/api/runs/{run_id}").json()["status"] == "completed"
    # `prepare` saved its writes before the stop: it never ran again.
    assert trace.read_text().split() == [
        "prepare",
        "slow:start",
        "slow:start",
        "slow:end",
        "finish",
    ]
    assert second.stop() == 0
    assert third.stop() == 0
    assert not unused.exists()
