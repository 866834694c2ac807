"""Spec: ``flowcore worker`` and ``flowcore submit``: queued runs of pipeline files, on Postgres.

A real ``flowcore worker`` process executes what ``flowcore submit`` queues;
the submitted task plan pauses for a human, and ``submit --resume`` answers
it on its thread. Without a Postgres URL both commands refuse, saying what
to set.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .conftest import Outcome, Project

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli(env_cli: Callable[..., Outcome]) -> Callable[..., Outcome]:
    """The CLI with its database from the environment (conftest's ``env_cli``)."""
    return env_cli


@pytest.mark.parametrize("command", [["worker"], ["submit", "--graph", "chat"]])
def test_the_queue_commands_need_a_postgres_url(
    cli: Callable[..., Outcome], command: list[str]
) -> None:
    refused = cli(*command)

    assert refused.code == 2
    assert "needs a Postgres database: set FLOWCORE_DATABASE_URL=postgresql://" in refused.err


def test_submit_takes_a_file_or_a_graph_not_both(
    cli: Callable[..., Outcome],
    project: Project,
    pg_schema_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLOWCORE_DATABASE_URL", pg_schema_url)

    refused = cli("submit", str(project.check_in), "--graph", "chat")

    assert refused.code == 2
    assert "give a pipeline FILE.json or --graph NAME (one of the two)" in refused.err


def test_worker_init_schema_creates_the_queue_tables_and_exits(
    cli: Callable[..., Outcome], pg_schema_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    monkeypatch.setenv("FLOWCORE_DATABASE_URL", pg_schema_url)

    ready = cli("worker", "--init-schema")

    assert ready.code == 0, ready.err
    assert ready.out.startswith("queue tables ready in postgresql://")
    with psycopg.connect(pg_schema_url) as conn:
        found = conn.execute(
            "SELECT to_regclass('flowcore_queue_runs'), to_regclass('procrastinate_jobs')"
        ).fetchone()
    assert found is not None
    assert None not in found


@pytest.fixture
def worker_process(pg_schema_url: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "FLOWCORE_DATABASE_URL": pg_schema_url}
    env = {k: v for k, v in env.items() if not k.endswith("_API_KEY")}
    with open(tmp_path / "worker.log", "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flowcore", "worker", "--heartbeat", "0.5",
             "--stalled-after", "3"],
            cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    yield proc
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    assert b"stopped" in (tmp_path / "worker.log").read_bytes()


def test_a_submitted_plan_pauses_on_a_worker_and_resumes_with_submit_resume(
    cli: Callable[..., Outcome],
    project: Project,
    pg_schema_url: str,
    monkeypatch: pytest.MonkeyPatch,
    worker_process: subprocess.Popen[bytes],
) -> None:
    monkeypatch.setenv("FLOWCORE_DATABASE_URL", pg_schema_url)
    assert cli("blocks", "add", str(project.blocks)).code == 0  # the workers read blocks there

    paused = cli(
        "submit", str(project.check_in), "--input", "name=Ada", "--user", "ada",
        "--thread", "check-in-1", "--wait", "--json",
    )  # fmt: skip

    assert paused.code == 0, paused.err
    assert paused.json()["status"] == "interrupted"
    assert paused.json()["thread_id"] == "check-in-1"

    finished = cli(
        "submit", str(project.check_in), "--thread", "check-in-1", "--resume", "cheerful",
        "--wait",
    )  # fmt: skip

    assert finished.code == 0, finished.err
    assert "completed on thread check-in-1" in finished.out
    assert "node_start" in finished.out


def test_a_slot_flowcore_scheduler_queues_runs_on_a_flowcore_worker_process(
    cli: Callable[..., Outcome],
    project: Project,
    pg_schema_url: str,
    monkeypatch: pytest.MonkeyPatch,
    worker_process: subprocess.Popen[bytes],
    tmp_path: Path,
) -> None:
    import time

    monkeypatch.setenv("FLOWCORE_DATABASE_URL", pg_schema_url)
    assert cli("blocks", "add", str(project.blocks)).code == 0  # the workers read blocks there
    added = cli(
        "schedule", "add", str(project.greeting), "--blocks", str(project.blocks),
        "--user", "ada", "--input", "name=Ada", "--id", "nine", "--cron", "0 9 * * *",
    )  # fmt: skip
    assert added.code == 0, added.err

    queued = cli("scheduler", "--once", "--at", "2099-01-01T09:00:05Z")
    assert "slots queued for flowcore worker" in queued.out, queued.err

    deadline = time.monotonic() + 60  # a guard for a failing spec only, never asserted on
    slots: list[dict[str, object]] = []
    while time.monotonic() < deadline:
        slots = cli("schedule", "slots", "nine", "--json").json()
        if slots and slots[0]["status"] is not None:
            break
        time.sleep(0.1)
    [slot] = slots
    assert slot["status"] == "completed"
    [run] = cli("runs", "list", "--json").json()
    assert (run["run_id"], run["user_id"], run["status"]) == (slot["run_id"], "ada", "completed")
    assert run["thread_id"] == "schedule-nine-20990101T0900Z"
    assert b"schedules: fired here too" in (tmp_path / "worker.log").read_bytes()
