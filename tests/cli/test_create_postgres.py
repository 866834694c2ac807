"""Spec: ``flowcore create`` and ``flowcore automate`` keep everything in Postgres too.

With ``FLOWCORE_DATABASE_URL=postgresql://...`` the Thinker finds blocks with
Postgres' full-text search, saves the blocks it creates in the Postgres
registry, keeps its checkpoints and run history there, and the created
pipeline runs there; the SQLite default file is never made.

Postgres is a real server (tests/pg.py); without one these skip, unless
FLOWCORE_REQUIRE_POSTGRES=1.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Outcome, Project


@pytest.fixture
def pg_cli(
    env_cli: Callable[..., Outcome], pg_schema_url: str, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Outcome]:
    """The CLI with no --db: the database is the Postgres schema the environment names."""
    monkeypatch.setenv("FLOWCORE_DATABASE_URL", pg_schema_url)
    return env_cli


def test_create_saves_its_blocks_and_runs_in_postgres(
    pg_cli: Callable[..., Outcome], project: Project, tmp_path: Path
) -> None:
    output = tmp_path / "poem.json"
    created = pg_cli(
        "create", "Count the lines of a poem", "--no-clarify", "--json", "--output", str(output)
    )
    assert created.code == 0, created.err
    result = created.json()
    assert result["status"] == "complete"
    assert result["created"] == ["count_lines"]
    assert output.is_file()

    shown = pg_cli("blocks", "show", "count_lines")
    assert shown.code == 0, shown.err
    assert shown.json()["created_by"] == "thinker"
    runs = pg_cli("runs", "list", "--json").json()
    assert [r["status"] for r in runs if r["pipeline_id"] == "thinker"] == ["completed"]
    ran = pg_cli("run", str(output), "--input", "text=one\ntwo\nthree")
    assert ran.code == 0, ran.err
    assert "completed: run " in ran.out
    assert not project.db.exists()


def test_automate_creates_then_runs_in_postgres(
    pg_cli: Callable[..., Outcome], project: Project
) -> None:
    done = pg_cli(
        "automate",
        "Extract the numbers from a text, then compute the average",
        "--no-clarify",
        "--input",
        "text=scores 4, 8 and 9",
    )
    assert done.code == 0, done.err
    assert " · db postgresql://" in done.out.splitlines()[0]
    assert "saved average_numbers v1 (created_by thinker)" in done.out
    assert re.search(r'n2 +completed .*\{"mean": 7\.0\}', done.out)
    # The second time the block is found in the Postgres registry (full text), not made again.
    again = pg_cli(
        "automate",
        "Extract the numbers from a text, then compute the average",
        "--no-clarify",
        "--input",
        "text=scores 1 and 3",
    )
    assert again.code == 0, again.err
    assert "saved average_numbers" not in again.out
    assert re.search(r'n2 +completed .*\{"mean": 2\.0\}', again.out)
    assert not project.db.exists()
