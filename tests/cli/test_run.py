"""Spec: `flowcore run` and `flowcore resume` run pipelines and task plans from JSON files."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from .conftest import Outcome, Project


def test_run_shows_live_progress_and_a_summary_table(
    cli: Callable[..., Outcome], project: Project
) -> None:
    done = cli("run", str(project.greeting), "--input", "name=Ada", "--blocks", str(project.blocks))

    assert done.code == 0, done.err
    lines = done.out.splitlines()
    assert lines[0].startswith("flowcore run greeting v1 · user - · model offline")
    assert "no API key or FLOWCORE_BASE_URL is set" in lines[0]
    # One progress line per node start and end, in the order they happen.
    progress = [line for line in lines if line.startswith("[")]
    started = [line.split()[1] for line in progress if line.endswith("...")]
    assert started == ["load_memory", "hello", "save_memory"]
    assert any(line.split()[1] == "hello" and " done in " in line for line in progress)
    header = next(line for line in lines if line.startswith("node "))
    assert header.split() == ["node", "status", "ms", "tok", "in", "tok", "out", "detail"]
    assert any(line.startswith("hello ") and " completed " in line for line in lines)
    assert lines[-1].startswith("completed: run ")


def test_json_output_is_one_document_with_every_node(
    cli: Callable[..., Outcome], project: Project
) -> None:
    done = cli(
        "run",
        str(project.greeting),
        "--input",
        "name=Ada",
        "--blocks",
        str(project.blocks),
        "--json",
        "--user",
        "ada",
    )

    assert done.code == 0, done.err
    data = done.json()
    assert data["status"] == "completed"
    assert data["pipeline_id"] == "greeting"
    assert data["user_id"] == "ada"
    assert data["inputs"] == {"name": "Ada"}
    assert [n["node"] for n in data["nodes"]] == ["load_memory", "hello", "save_memory"]
    hello = data["nodes"][1]
    assert isinstance(hello["outputs"]["greeting"], str)
    assert hello["outputs"]["greeting"]
    assert hello["input_tokens"] > 0
    assert data["input_tokens"] == hello["input_tokens"]


def test_input_values_are_parsed_as_json_when_they_are_json(
    cli: Callable[..., Outcome], project: Project
) -> None:
    inputs = project.write("inputs.json", {"name": "Grace"})
    from_file = cli(
        "run",
        str(project.greeting),
        "--input",
        f"@{inputs}",
        "--blocks",
        str(project.blocks),
        "--json",
    )
    as_json = cli(
        "run",
        str(project.greeting),
        "--input",
        'name="Linus"',
        "--blocks",
        str(project.blocks),
        "--json",
    )

    assert from_file.json()["inputs"] == {"name": "Grace"}
    assert as_json.json()["inputs"] == {"name": "Linus"}


def test_a_task_plan_pauses_for_a_human_and_resume_finishes_it(
    cli: Callable[..., Outcome], project: Project
) -> None:
    paused = cli(
        "run",
        str(project.check_in),
        "--input",
        "name=Ada",
        "--blocks",
        str(project.blocks),
        "--user",
        "ada",
    )

    assert paused.code == 0, paused.err
    assert "mood asks: How do you feel today?" in paused.out
    assert any(line.split()[:2] == ["mood", "paused"] for line in paused.out.splitlines())
    assert "interrupted: run " in paused.out
    resume_line = paused.out.splitlines()[-1]
    assert resume_line.startswith("resume with: flowcore resume check_in-")
    thread = resume_line.split()[4]

    finished = cli("resume", thread, "--value", "cheerful", "--json")

    assert finished.code == 0, finished.err
    data = finished.json()
    assert data["status"] == "completed"
    assert data["thread_id"] == thread
    assert data["user_id"] == "ada"
    mood = next(n for n in data["nodes"] if n["node"] == "mood")
    assert mood["outputs"] == {"mood": "cheerful"}
    # The answer is the user's remembered preference now (memory_keys: ["mood"]).
    again = cli("run", str(project.check_in), "--input", "name=Ada", "--user", "ada", "--json")
    assert again.json()["status"] == "interrupted"
    listed = cli("runs", "list", "--user", "ada", "--json").json()
    assert [r["status"] for r in listed] == ["interrupted", "completed", "interrupted"]
    with sqlite3.connect(project.db) as conn:
        (value,) = conn.execute("SELECT value FROM flowcore_memory WHERE key = 'mood'").fetchone()
    assert "cheerful" in value


def test_resume_of_a_finished_thread_is_refused_in_one_line(
    cli: Callable[..., Outcome], project: Project
) -> None:
    done = cli(
        "run",
        str(project.greeting),
        "--input",
        "name=Ada",
        "--blocks",
        str(project.blocks),
        "--thread",
        "t-1",
        "--json",
    )
    assert done.json()["status"] == "completed"

    again = cli("resume", "t-1", "--value", "x")

    assert again.code == 2
    assert again.err.startswith("flowcore: error: ")
    assert len(again.err.splitlines()) == 1
