"""Spec: `flowcore validate | graph | blocks ... | runs ...` inspect and manage what runs."""

from __future__ import annotations

import json
from collections.abc import Callable

from .conftest import BLOCKS, GREETING, Outcome, Project


def test_validate_says_a_good_pipeline_is_valid(
    cli: Callable[..., Outcome], project: Project
) -> None:
    ok = cli("validate", str(project.check_in), "--blocks", str(project.blocks))

    assert ok.code == 0, ok.err
    assert ok.out == "task plan 'check_in' is valid (2 steps)\n"


def test_validate_lists_every_problem_and_fails(
    cli: Callable[..., Outcome], project: Project
) -> None:
    broken = project.write(
        "broken.json",
        {
            **GREETING,
            "nodes": [
                *GREETING["nodes"],
                {"id": "n2", "block_id": "no_such_block"},
                {"id": "n3", "block_id": "greet", "inputs": {"name": "<<ghost.name>>"}},
            ],
        },
    )

    bad = cli("validate", str(broken), "--blocks", str(project.blocks), "--json")

    assert bad.code == 1
    data = bad.json()
    assert data["valid"] is False
    assert len(data["problems"]) == 2
    assert any("no_such_block" in p for p in data["problems"])
    assert any("refers to unknown node 'ghost'" in p for p in data["problems"])
    # validate reads the blocks file without importing it.
    assert cli("blocks", "show", "greet").code == 2


def test_graph_prints_mermaid(cli: Callable[..., Outcome], project: Project) -> None:
    drawn = cli(
        "graph", str(project.check_in), "--format", "mermaid", "--blocks", str(project.blocks)
    )

    assert drawn.code == 0, drawn.err
    lines = drawn.out.splitlines()
    assert lines[0].startswith("flowchart")
    for node in ("load_memory", "hello", "mood", "save_memory"):
        assert node in drawn.out


def test_blocks_import_list_show_search_export_add(
    cli: Callable[..., Outcome], project: Project
) -> None:
    imported = cli("blocks", "import", str(project.blocks))
    assert imported.out == f"imported 2 block version(s) from {project.blocks}\n"
    assert cli("blocks", "import", str(project.blocks)).out.startswith("imported 0 ")

    listed = cli("blocks", "list", "--category", "demo")
    assert listed.code == 0
    rows = listed.out.splitlines()
    assert rows[0].split() == ["id", "version", "kind", "category", "name"]
    assert [r.split()[0] for r in rows[2:]] == ["greet"]

    shown = cli("blocks", "show", "greet").json()
    assert shown["prompt_template"] == "Greet {{ name }} warmly."
    assert shown["version"] == 1

    found = cli("blocks", "search", "greeting", "--json").json()
    assert found[0]["id"] == "greet"

    changed = {**BLOCKS["blocks"][0], "description": "Write a short, warm greeting"}
    changed.pop("version")
    added = cli("blocks", "add", str(project.write("greet2.json", changed)))
    assert added.out == "saved greet v2\n"
    assert cli("blocks", "show", "greet", "--version", "1").json()["version"] == 1

    target = project.dir / "export.json"
    exported = cli("blocks", "export", "--output", str(target))
    assert exported.code == 0
    versions = [
        (b["id"], b["version"])
        for b in json.loads(target.read_text())["blocks"]
        if b["id"] in ("greet", "ask_mood")
    ]
    assert versions == [("ask_mood", 1), ("greet", 1), ("greet", 2)]


def test_runs_list_filters_and_show_gives_every_node(
    cli: Callable[..., Outcome], project: Project
) -> None:
    for user in ("ada", "grace"):
        cli(
            "run",
            str(project.greeting),
            "--input",
            f"name={user}",
            "--user",
            user,
            "--blocks",
            str(project.blocks),
        )
    cli("run", str(project.check_in), "--input", "name=x", "--user", "ada")

    everything = cli("runs", "list", "--json").json()
    assert [(r["pipeline_id"], r["user_id"]) for r in everything] == [
        ("check_in", "ada"),
        ("greeting", "grace"),
        ("greeting", "ada"),
    ]
    assert [
        r["user_id"] for r in cli("runs", "list", "--pipeline", "greeting", "--json").json()
    ] == [
        "grace",
        "ada",
    ]
    paused = cli("runs", "list", "--status", "interrupted", "--json").json()
    assert [r["pipeline_id"] for r in paused] == ["check_in"]
    table = cli("runs", "list", "--user", "ada").out.splitlines()
    assert table[0].split()[:5] == ["run", "pipeline", "user", "thread", "status"]
    assert len(table) == 4

    shown = cli("runs", "show", everything[-1]["run_id"])
    assert shown.code == 0
    assert shown.out.startswith(f"run {everything[-1]['run_id']} · pipeline greeting v1 · user ada")
    assert "hello" in shown.out
    assert "completed" in shown.out
