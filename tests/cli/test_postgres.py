"""Spec: with FLOWCORE_DATABASE_URL the CLI keeps runs, threads, memory and blocks there.

Postgres is a real server (tests/pg.py); without one these skip, unless
FLOWCORE_REQUIRE_POSTGRES=1.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Outcome, Project


def test_a_paused_plan_resumes_and_is_listed_all_in_postgres(
    env_cli: Callable[..., Outcome],
    project: Project,
    pg_schema_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import psycopg

    monkeypatch.setenv("FLOWCORE_DATABASE_URL", pg_schema_url)
    paused = env_cli(
        "run", str(project.check_in), "--input", "name=Ada", "--blocks", str(project.blocks),
        "--user", "ada",
    )  # fmt: skip
    assert paused.code == 0, paused.err
    assert " · db postgresql://" in paused.out.splitlines()[0]
    thread = paused.out.splitlines()[-1].split()[4]

    finished = env_cli("resume", thread, "--value", "cheerful", "--json")

    assert finished.code == 0, finished.err
    assert finished.json()["status"] == "completed"
    listed = env_cli("runs", "list", "--user", "ada", "--json").json()
    assert [r["status"] for r in listed] == ["completed", "interrupted"]
    assert not project.db.exists()
    with psycopg.connect(pg_schema_url) as conn:
        row = conn.execute("SELECT value FROM flowcore_memory WHERE key = 'mood'").fetchone()
        threads = conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()
    assert row is not None
    assert "cheerful" in row[0]
    assert threads == (1,)


def test_an_sqlite_url_acts_as_db_and_a_bad_scheme_is_one_line(
    env_cli: Callable[..., Outcome], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWCORE_DATABASE_URL", f"sqlite:///{tmp_path / 'via-url.db'}")
    done = env_cli("blocks", "list", "--json")
    assert done.code == 0, done.err
    assert (tmp_path / "via-url.db").exists()

    monkeypatch.setenv("FLOWCORE_DATABASE_URL", "mysql://app:hunter2@db/flowcore")
    refused = env_cli("blocks", "list")
    assert refused.code != 0
    assert "postgresql://user:password@host:5432/dbname" in refused.err
    assert "hunter2" not in refused.err
    assert len(refused.err.splitlines()) == 1


def test_an_unreachable_server_is_named_without_its_password(
    env_cli: Callable[..., Outcome], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://app:hunter2@127.0.0.1:1/flowcore?connect_timeout=2"
    monkeypatch.setenv("FLOWCORE_DATABASE_URL", url)
    failed = env_cli("runs", "list")
    assert failed.code != 0
    assert "hunter2" not in failed.err + failed.out
    assert "postgresql://app:***@127.0.0.1:1/flowcore" in failed.err
