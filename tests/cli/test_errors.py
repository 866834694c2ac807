"""Spec: a mistake gets one clear line on stderr, a non-zero exit, and leaves no trace."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import GREETING, Outcome, Project


def _rows(db: Path) -> dict[str, int]:
    """How many rows each table of the database holds (nothing when there is no file)."""
    if not db.exists():
        return {}
    with sqlite3.connect(db) as conn:
        tables = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not r[0].startswith(("sqlite_", "blocks_fts"))
        ]
        return {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}


def _one_line_error(outcome: Outcome, *fragments: str) -> None:
    assert outcome.code == 2
    assert outcome.out == ""
    assert len(outcome.err.splitlines()) == 1, outcome.err
    assert outcome.err.startswith("flowcore: error: ")
    for fragment in fragments:
        assert fragment in outcome.err


@pytest.fixture
def baseline(cli: Callable[..., Outcome], project: Project) -> dict[str, int]:
    """A database that has seen one good run; bad commands must leave it as it is."""
    cli("run", str(project.greeting), "--input", "name=Ada", "--blocks", str(project.blocks))
    return _rows(project.db)


def test_a_missing_pipeline_file_is_named(
    cli: Callable[..., Outcome], project: Project, baseline: dict[str, int]
) -> None:
    _one_line_error(cli("run", str(project.dir / "nope.json")), "nope.json", "does not exist")
    assert _rows(project.db) == baseline


def test_a_file_that_is_not_json_is_named(
    cli: Callable[..., Outcome], project: Project, baseline: dict[str, int]
) -> None:
    bad = project.dir / "bad.json"
    bad.write_text("{nodes: [", encoding="utf-8")
    _one_line_error(cli("run", str(bad)), "bad.json", "is not valid JSON")
    assert _rows(project.db) == baseline


def test_a_pipeline_with_problems_is_refused_before_anything_is_written(
    cli: Callable[..., Outcome], project: Project, baseline: dict[str, int]
) -> None:
    broken = project.write(
        "broken.json",
        {**GREETING, "nodes": [*GREETING["nodes"], {"id": "n2", "block_id": "no_such_block"}]},
    )
    more_blocks = project.write(
        "more.json",
        {
            "format": "flowcore-blocks",
            "blocks": [
                {
                    "id": "extra",
                    "name": "Extra",
                    "description": "A block that must not be imported",
                    "kind": "llm",
                    "prompt_template": "hi",
                }
            ],
        },
    )
    outcome = cli("run", str(broken), "--input", "name=Ada", "--blocks", str(more_blocks))
    _one_line_error(outcome, "pipeline 'greeting' has 1 problem", "no_such_block")
    assert _rows(project.db) == baseline


def test_missing_and_unknown_run_inputs_are_named(
    cli: Callable[..., Outcome], project: Project, baseline: dict[str, int]
) -> None:
    missing = cli("run", str(project.greeting))
    _one_line_error(missing, "input 'name' is missing (read by node hello)")
    unknown = cli("run", str(project.greeting), "--input", "name=A", "--input", "nmae=B")
    _one_line_error(unknown, "input 'nmae' is not read by pipeline 'greeting' (it reads: name)")
    assert _rows(project.db) == baseline


def test_a_malformed_input_option_is_named(
    cli: Callable[..., Outcome], project: Project, baseline: dict[str, int]
) -> None:
    _one_line_error(cli("run", str(project.greeting), "--input", "name"), "key=value")
    assert _rows(project.db) == baseline


def test_an_invalid_block_file_imports_nothing(
    cli: Callable[..., Outcome], project: Project, baseline: dict[str, int]
) -> None:
    bad = project.write(
        "badblocks.json",
        {
            "format": "flowcore-blocks",
            "blocks": [
                {
                    "id": "ok_one",
                    "name": "Ok",
                    "description": "fine",
                    "kind": "llm",
                    "prompt_template": "hi",
                },
                {"id": "bad one", "name": "Bad", "description": "bad id", "kind": "llm"},
            ],
        },
    )
    _one_line_error(cli("blocks", "import", str(bad)), "bad one")
    _one_line_error(cli("blocks", "add", str(bad)), "bad one")
    assert _rows(project.db) == baseline


def test_unknown_runs_and_blocks_are_named(
    cli: Callable[..., Outcome], project: Project, baseline: dict[str, int]
) -> None:
    _one_line_error(cli("runs", "show", "run-does-not-exist"), "run-does-not-exist")
    _one_line_error(cli("blocks", "show", "nothing_here"), "nothing_here")
    _one_line_error(cli("resume", "no-such-thread"), "no-such-thread")
    assert _rows(project.db) == baseline


def test_a_usage_mistake_is_one_line_too(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    from flowcore.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["run"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert err.startswith("flowcore: error: the following arguments are required: FILE.json")
