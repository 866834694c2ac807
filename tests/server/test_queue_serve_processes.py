"""Spec: real `flowcore serve` processes on FLOWCORE_EXECUTOR=queue and a real `flowcore worker`.

The server hands the run to the worker process; stopped with SIGTERM
mid-run it leaves the run going, and the next server process re-attaches to
it so its stream completes, with no node run twice (the trace file counts
them). A cancel through the second server's API stops a running run in the
worker. Postgres is real (tests/pg.py); without one these skip, unless
``FLOWCORE_REQUIRE_POSTGRES=1``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("procrastinate")

from flowcore.port.sse import parse_sse
from tests.server.live import GUARD, ROOT, Served, new_key

GRAPHS = "tests.server.slow_graphs:build"


@pytest.fixture
def env(tmp_path: Path, pg_schema_url: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {
        **base,
        "PYTHONPATH": str(ROOT),
        "FLOWCORE_DATABASE_URL": pg_schema_url,
        "FLOWCORE_DB": str(tmp_path / "default.db"),
        "FLOWCORE_PROVIDER": "offline",
        "FLOWCORE_EXECUTOR": "queue",
        "FLOWCORE_TEST_TRACE": str(tmp_path / "trace.txt"),
        "FLOWCORE_TEST_SLOW": "4",
    }


@contextlib.contextmanager
def worker(env: dict[str, str], tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """One ``flowcore worker`` process with the servers' graphs."""
    with open(tmp_path / "worker.log", "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flowcore", "worker", "--graphs", GRAPHS, "--heartbeat", "0.5"],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    yield proc
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=GUARD)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait_for(trace: Path, line: str, count: int = 1) -> None:
    deadline = time.monotonic() + GUARD
    while (trace.read_text().splitlines() if trace.exists() else []).count(line) < count:
        assert time.monotonic() < deadline, f"{line!r} never reached {count} in {trace}"
        time.sleep(0.05)


def test_a_serve_process_restarted_mid_run_re_attaches_and_cancel_reaches_the_worker(
    tmp_path: Path,
    env: dict[str, str],
    servers: list[Served],
) -> None:
    # The key first: its command makes the server's tables, then the worker starts on them.
    token = new_key(env, None, "ada")
    with worker(env, tmp_path):
        _restart_and_cancel(tmp_path, env, servers, token)


def _restart_and_cancel(
    tmp_path: Path, env: dict[str, str], servers: list[Served], token: str
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    trace = tmp_path / "trace.txt"

    def call(server: Served, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, server.base + path, headers=headers, timeout=GUARD, **kwargs)

    first = Served(None, env, tmp_path / "first.log", servers)
    assert "executor queue" in (tmp_path / "first.log").read_text()
    started = call(first, "POST", "/api/runs", json={"target": {"graph": "slow"}})
    assert started.status_code == 201, started.text
    run_id = started.json()["run_id"]
    _wait_for(trace, "slow:start")
    assert first.stop() == 0  # mid-run: the worker keeps the run

    second = Served(None, env, tmp_path / "second.log", servers)
    events = parse_sse(call(second, "GET", f"/api/runs/{run_id}/events").text)
    detail = call(second, "GET", f"/api/runs/{run_id}").json()

    types = [e.type for e in events]
    assert types[0] == "run_start"
    assert types[-1] == "done"
    assert (types.count("run_start"), types.count("done")) == (1, 1)
    assert [e.seq for e in events] == list(range(len(events)))
    assert detail["status"] == "completed"
    # Not stopped by the shutdown, not run again: each node ran once, in the worker.
    assert trace.read_text().splitlines() == ["prepare", "slow:start", "slow:end", "finish"]

    again = call(second, "POST", "/api/runs", json={"target": {"graph": "slow"}})
    assert again.status_code == 201, again.text
    _wait_for(trace, "slow:start", 2)
    assert call(second, "POST", f"/api/runs/{again.json()['run_id']}/cancel").status_code == 202
    cancelled = parse_sse(call(second, "GET", f"/api/runs/{again.json()['run_id']}/events").text)
    assert cancelled[-1].type == "done"
    assert getattr(cancelled[-1], "status", None) == "cancelled"
    assert call(second, "GET", f"/api/runs/{again.json()['run_id']}").json()["status"] == (
        "cancelled"
    )
    assert second.stop() == 0
    assert "finish" not in trace.read_text().splitlines()[4:]  # the cancelled run never finished
