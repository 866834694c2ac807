"""Spec: ``flowcore serve --executor``: ``queue`` needs Postgres, an unknown kind is refused.

Both are refused before anything is opened, saying what to set; the queue
itself (runs on workers, restart, cancel) is specified in
tests/server/test_queue_serve.py.
"""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest

pytest.importorskip("fastapi")

from flowcore.cli import main

from .conftest import Outcome, Project


@pytest.fixture
def cli(project: Project, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Outcome]:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "FLOWCORE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    for var in (
        "FLOWCORE_PROVIDER",
        "FLOWCORE_MODEL",
        "FLOWCORE_DATABASE_URL",
        "FLOWCORE_EXECUTOR",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("FLOWCORE_DB", str(project.db))

    def call(*argv: str) -> Outcome:
        out, err = io.StringIO(), io.StringIO()
        code = main(list(argv), stdout=out, stderr=err)
        return Outcome(code, out.getvalue(), err.getvalue())

    return call


def test_serve_on_the_queue_needs_a_postgres_database(cli: Callable[..., Outcome]) -> None:
    refused = cli("serve", "--executor", "queue", "--provider", "offline")

    assert refused.code == 2
    assert "'flowcore serve --executor queue' needs a Postgres database" in refused.err
    assert "FLOWCORE_DATABASE_URL=postgresql://" in refused.err


def test_the_executor_comes_from_the_environment_and_is_checked(
    cli: Callable[..., Outcome], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWCORE_EXECUTOR", "celery")
    refused = cli("serve", "--provider", "offline")

    assert refused.code == 2
    assert "executor 'celery' is not one of inproc, queue" in refused.err
    monkeypatch.setenv("FLOWCORE_EXECUTOR", "queue")
    assert "needs a Postgres database" in cli("serve", "--provider", "offline").err
