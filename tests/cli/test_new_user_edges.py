"""Spec: the rough edges a new user met on the command line are smooth.

Hints name commands, not Python methods; several problems are listed one per
line and all at once, whatever stage each belongs to; a read-only database
says so; commands that only read (``graph``, ``validate``) create no
database; ``validate`` reports a Python block the sandbox would refuse.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flowcore.cli import main

from .conftest import GREETING, Outcome, Project

# A depends_on typo (the plan's structure) and an unknown block (the registry): two stages.
TWO_STAGES = {
    "plan_id": "lunch",
    "entry_step_id": "hello",
    "steps": [
        {"step_id": "hello", "block_id": "greet", "inputs": {"name": "<<input.name>>"}},
        {"step_id": "order", "block_id": "open_uber_eatz", "depends_on": ["helo"]},
    ],
}
SNEAKY = {
    "id": "sneaky",
    "name": "Sneaky",
    "description": "Runs a command on the host",
    "kind": "python",
    "output_keys": ["n"],
    "source_code": "import subprocess\n\ndef execute(inputs, context):\n    return {'n': 1}\n",
}


def test_validate_lists_the_problems_of_every_stage_at_once(
    cli: Callable[..., Outcome], project: Project
) -> None:
    plan = project.write("lunch.json", TWO_STAGES)
    outcome = cli("validate", str(plan), "--blocks", str(project.blocks), "--json")
    assert outcome.code == 1
    problems = outcome.json()["problems"]
    assert any("depends_on names unknown step 'helo'" in p for p in problems)
    assert any("open_uber_eatz" in p for p in problems)


def test_several_problems_are_printed_one_per_line_and_nothing_is_created(
    cli: Callable[..., Outcome], project: Project
) -> None:
    plan = project.write("lunch.json", TWO_STAGES)
    outcome = cli("run", str(plan), "--input", "name=Ada", "--blocks", str(project.blocks))
    assert outcome.code == 2
    heading, *lines = outcome.err.splitlines()
    assert heading == "flowcore: error: pipeline 'lunch' has 3 problems:"
    assert len(lines) == 3
    assert all(line.startswith("  - ") for line in lines)
    assert any("open_uber_eatz" in line for line in lines)
    assert not project.db.exists()


def test_several_run_input_problems_are_printed_one_per_line(
    cli: Callable[..., Outcome], project: Project
) -> None:
    outcome = cli("run", str(project.greeting), "--input", "nmae=Ada", "--blocks",
                  str(project.blocks))  # fmt: skip
    assert outcome.code == 2
    assert outcome.err.splitlines() == [
        "flowcore: error: run input of pipeline 'greeting' has 2 problems:",
        "  - input 'name' is missing (read by node hello); pass it, e.g. --input name=...",
        "  - input 'nmae' is not read by pipeline 'greeting' (it reads: name); remove it or "
        "wire it into a node's inputs as <<input.nmae>>",
    ]


def test_an_unknown_block_hint_names_the_cli_commands(
    cli: Callable[..., Outcome], project: Project
) -> None:
    broken = project.write(
        "broken.json", {**GREETING, "nodes": [{"id": "n1", "block_id": "no_such_block"}]}
    )
    for outcome in (cli("run", str(broken)), cli("blocks", "show", "no_such_block")):
        assert outcome.code == 2
        assert "'flowcore blocks list' lists the stored blocks" in outcome.err
        assert "list_blocks()" not in outcome.err
    listed = cli("validate", str(broken), "--json").json()["problems"]
    assert "'flowcore blocks add FILE.json' adds one" in listed[0]


def test_graph_and_validate_without_db_create_no_database(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    default = project.dir / "home" / "flowcore.db"
    monkeypatch.setenv("FLOWCORE_DB", str(default))
    out, err = io.StringIO(), io.StringIO()
    greeting = str(project.greeting)
    assert main(["graph", greeting, "--blocks", str(project.blocks)], stdout=out, stderr=err) == 0
    assert "hello" in out.getvalue()
    assert (
        main(["validate", greeting, "--blocks", str(project.blocks)], stdout=out, stderr=err) == 0
    )
    assert err.getvalue() == ""
    assert not default.exists()
    assert not default.parent.exists()


def test_validate_reports_a_python_block_the_sandbox_would_refuse(
    cli: Callable[..., Outcome], project: Project
) -> None:
    blocks = project.write("sneaky.json", [SNEAKY])
    pipeline = project.write(
        "count.json",
        {"id": "count", "name": "Count", "nodes": [{"id": "n1", "block_id": "sneaky"}]},
    )
    outcome = cli("validate", str(pipeline), "--blocks", str(blocks), "--json")
    assert outcome.code == 1
    (problem,) = outcome.json()["problems"]
    assert problem.startswith("node 'n1': the Python sandbox would refuse block 'sneaky': ")
    assert "line 1: import of 'subprocess' is not allowed" in problem


@pytest.fixture
def read_only(project: Project, cli: Callable[..., Outcome]) -> Iterator[Path]:
    """The project's database, made read-only (immutable for root, who ignores modes)."""
    assert cli("blocks", "list").code == 0  # creates the database
    db = project.db
    if os.geteuid() != 0:
        db.chmod(0o444)
        yield db
        db.chmod(0o644)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(db)], check=False).returncode != 0:
        pytest.skip("running as root without chattr: no way to make a file read-only")
    try:
        yield db
    finally:
        subprocess.run([chattr, "-i", str(db)], check=True)


def test_a_read_only_database_says_so(cli: Callable[..., Outcome], read_only: Path) -> None:
    outcome = cli("blocks", "list")
    assert outcome.code == 2
    assert len(outcome.err.splitlines()) == 1
    assert f"the database {str(read_only)!r} is read-only" in outcome.err
    assert "or pass another --db" in outcome.err


def test_an_edited_block_runs_after_blocks_add_or_a_version_bump(
    cli: Callable[..., Outcome], project: Project
) -> None:
    args = ("--input", "name=Ada")
    assert cli("run", str(project.greeting), *args, "--blocks", str(project.blocks)).code == 0
    edited = json.loads(project.blocks.read_text(encoding="utf-8"))
    edited["blocks"][0]["prompt_template"] = "Greet {{ name }} briefly."
    project.write("blocks.json", edited)

    # The file still says version 1, which the database holds with the old prompt.
    refused = cli("run", str(project.greeting), *args, "--blocks", str(project.blocks))
    assert refused.code == 2
    assert '"version": 2' in refused.err
    assert "'flowcore blocks add FILE.json'" in refused.err

    assert cli("blocks", "add", str(project.blocks)).out == "saved greet v2\nsaved ask_mood v1\n"
    ran = cli("run", str(project.greeting), *args, "--json")
    assert ran.code == 0
    assert "briefly" in ran.json()["final_state"]["greeting"]

    edited["blocks"][0]["prompt_template"] = "Greet {{ name }} kindly."
    edited["blocks"][0]["version"] = 3
    bumped = project.write("bumped.json", edited)
    ran = cli("run", str(project.greeting), *args, "--blocks", str(bumped), "--json")
    assert ran.code == 0
    assert "kindly" in ran.json()["final_state"]["greeting"]
    assert json.loads(cli("blocks", "show", "greet").out)["version"] == 3


def test_hints_for_runs_and_threads_name_cli_commands(
    cli: Callable[..., Outcome], project: Project
) -> None:
    missing = cli("runs", "show", "run-nope")
    assert missing.code == 2
    assert "'flowcore runs list' shows the recorded runs" in missing.err
    assert "history.list()" not in missing.err

    args = ("--input", "name=Ada", "--blocks", str(project.blocks))
    assert cli("run", str(project.greeting), *args, "--thread", "t-1").code == 0
    finished = cli("resume", "t-1", "--value", "x")
    assert "'flowcore run FILE.json --thread t-1'" in finished.err
    assert cli("run", str(project.check_in), *args, "--thread", "t-2").code == 0
    waiting = cli("resume", "t-2")
    assert waiting.code == 2
    assert "'flowcore resume t-2 --value ANSWER'" in waiting.err
    assert "Resume(" not in finished.err + waiting.err
