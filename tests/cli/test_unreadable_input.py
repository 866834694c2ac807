"""Spec: input the stores cannot hold, or that JSON cannot read, is one line and no trace.

Ids and values with bytes that are not UTF-8 (a shell passes them through as
lone surrogates), ``--input`` JSON nested past the recursion limit or with
ints too long to read, pipeline files nested too deeply: each is refused
with exit code 2 and one ``flowcore: error:`` line, before anything is
written. A failure of flowcore itself is one line with exit code 70.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from flowcore.cli import app

from .conftest import Outcome, Project


def _rows(db: Path) -> int:
    """Rows of the tables a run writes: checkpoints, their writes and the run history."""
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return sum(
            conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]
            for name in ("checkpoints", "writes", "run_history_runs", "run_history_nodes")
        )


def _one_line(outcome: Outcome, *fragments: str) -> None:
    assert outcome.code == 2, outcome
    assert len(outcome.err.splitlines()) == 1, outcome.err
    assert outcome.err.startswith("flowcore: error: ")
    assert "Traceback" not in outcome.err
    for fragment in fragments:
        assert fragment in outcome.err, outcome.err


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["resume", "thread-\udcff"], ("thread", "not UTF-8 text")),
        (["runs", "show", "run-\udcff"], ("run id", "not UTF-8 text")),
        (["blocks", "show", "b\udcff"], ("not UTF-8 text",)),
    ],
    ids=["thread", "run id", "block id"],
)
def test_an_id_that_is_not_utf8_is_refused_in_one_line(
    cli: Callable[..., Outcome], argv: list[str], fragments: tuple[str, ...]
) -> None:
    _one_line(cli(*argv), *fragments)


@pytest.mark.parametrize(
    ("value", "fragments"),
    [
        ("caf\udce9", ("not UTF-8 text",)),
        ("[" * 5000 + "]" * 5000, ("nests", "too deeply")),
        ("1" * 5000, ("4300", "as a string")),
        ('{"a": NaN}', ("NaN",)),
    ],
    ids=["surrogate", "deep", "huge int", "nan"],
)
def test_an_input_value_no_store_can_hold_is_refused_before_anything_is_written(
    cli: Callable[..., Outcome], project: Project, value: str, fragments: tuple[str, ...]
) -> None:
    outcome = cli(
        "run", str(project.greeting), "--blocks", str(project.blocks), "--input", f"name={value}"
    )
    _one_line(outcome, *fragments)
    assert _rows(project.db) == 0


def test_a_pipeline_file_nested_too_deeply_is_one_line(
    cli: Callable[..., Outcome], project: Project
) -> None:
    deep = project.dir / "deep.json"
    deep.write_text('{"id": "p", "nodes": ' + "[" * 100_000 + "]" * 100_000 + "}")
    _one_line(cli("validate", str(deep)), "deep.json", "too deeply")


def test_a_failure_of_flowcore_itself_is_one_line_with_exit_code_70(
    cli: Callable[..., Outcome], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(args: object, out: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setitem(app.COMMANDS, "runs", broken)
    monkeypatch.delenv("FLOWCORE_TRACEBACK", raising=False)
    outcome = cli("runs", "list")
    assert outcome.code == 70
    assert outcome.err.splitlines() == [
        "flowcore: error: internal error: RuntimeError: a bug (this is a flowcore bug: please "
        "report it; set FLOWCORE_TRACEBACK=1 to see the traceback)"
    ]
