"""A real ``flowcore serve`` process: SIGTERM stops a run at a checkpoint, a restart finishes it.

The server runs with a provider API key in its environment; everything it
logs and every body it answers is scanned for that key (and its encoded
forms) with flowcore.secrets' scanner.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("uvicorn")

from flowcore.secrets import SecretRedactor
from tests.server.live import GUARD, ROOT, Served, cli

SECRET = "sk-test-Zq8Nf3Lr9Wv2Kx7Pd4Hs6Tb1"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OPENAI_API_KEY": SECRET,
        "FLOWCORE_PROVIDER": "offline",
        "FLOWCORE_TEST_TRACE": str(tmp_path / "trace.txt"),
        "FLOWCORE_TEST_SLOW": "1.5",
    }
    return environment


def test_sigterm_suspends_a_run_and_the_next_server_completes_it(
    tmp_path: Path, env: dict[str, str], servers: list[Served]
) -> None:
    db = tmp_path / "flowcore.db"
    created = json.loads(cli(env, "keys", "create", "--user", "ada", "--db", str(db), "--json"))
    token = created["key"]
    assert "fc_" in token
    listed = cli(env, "keys", "list", "--db", str(db))
    assert created["key_id"] in listed
    assert token not in listed
    headers = {"Authorization": f"Bearer {token}"}
    bodies: list[str] = []

    def call(server: Served, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = httpx.request(
            method, server.base + path, headers=headers, timeout=GUARD, **kwargs
        )
        bodies.append(response.text)
        return response

    first = Served(db, env, tmp_path / "first.log", servers)
    started = call(first, "POST", "/api/runs", json={"target": {"graph": "slow"}}).json()
    run_id = started["run_id"]
    deadline = time.monotonic() + GUARD
    while True:  # stop the server while `slow` is running
        nodes = {
            n["node"]: n["status"]
            for n in call(first, "GET", f"/api/runs/{run_id}").json()["nodes"]
        }
        if nodes.get("slow") == "running":
            break
        assert time.monotonic() < deadline, nodes
        time.sleep(0.05)
    call(first, "GET", "/api/graphs")
    call(first, "GET", "/api/nope")
    assert first.stop() == 0
    with sqlite3.connect(db) as conn:
        [(status,)] = conn.execute(
            "SELECT status FROM flowcore_server_runs WHERE run_id = ?", (run_id,)
        ).fetchall()
    assert status == "suspended"
    assert (tmp_path / "trace.txt").read_text().split() == ["prepare", "slow:start"]

    second = Served(db, env, tmp_path / "second.log", servers)
    stream = call(second, "GET", f"/api/runs/{run_id}/events")
    assert "event: done" in stream.text
    detail = call(second, "GET", f"/api/runs/{run_id}").json()
    assert detail["status"] == "completed"
    assert detail["output"] == {
        "prepared": True,
        "slept": True,
        "finished": True,
        "note": "key=[REDACTED]",
    }
    call(second, "GET", f"/api/runs/{run_id}/state")
    call(second, "GET", f"/api/runs/{run_id}/ui-stream")
    call(second, "GET", f"/api/executions/{run_id}")
    call(second, "GET", "/api/runs")
    assert stream.text.count("event: done") == 1
    # `prepare` saved its writes before the stop: it never ran again.
    assert (tmp_path / "trace.txt").read_text().split() == [
        "prepare",
        "slow:start",
        "slow:start",
        "slow:end",
        "finish",
    ]
    assert stream.text.count('"node":"prepare"') == 2  # its start and end, once
    assert second.stop() == 0

    scanner = SecretRedactor.from_environment({"OPENAI_API_KEY": SECRET})
    logs = (tmp_path / "first.log").read_text() + (tmp_path / "second.log").read_text()
    assert "Uvicorn running" in logs or "flowcore serve" in logs
    assert not scanner.contains_secret(logs)
    hits = [b for b in bodies if scanner.contains_secret(b)]
    assert hits == []
