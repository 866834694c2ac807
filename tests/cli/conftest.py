"""Fixtures for the CLI specs: a small pipeline and its blocks as files, and a CLI caller."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flowcore.cli import main

BLOCKS = {
    "format": "flowcore-blocks",
    "version": 1,
    "blocks": [
        {
            "id": "greet",
            "version": 1,
            "name": "Greet",
            "description": "Write a greeting for a name",
            "kind": "llm",
            "input_keys": ["name"],
            "output_keys": ["greeting"],
            "prompt_template": "Greet {{ name }} warmly.",
            "category": "demo",
            "tags": ["greeting"],
        },
        {
            "id": "ask_mood",
            "version": 1,
            "name": "Ask mood",
            "description": "Ask the person how they feel",
            "kind": "human",
            "output_keys": ["mood"],
            "prompt_template": "How do you feel today?",
        },
    ],
}

GREETING = {
    "id": "greeting",
    "name": "Greeting",
    "nodes": [
        {"id": "hello", "block_id": "greet", "inputs": {"name": "<<input.name>>"}},
    ],
}

CHECK_IN = {
    "plan_id": "check_in",
    "name": "Check in",
    "entry_step_id": "hello",
    "steps": [
        {"step_id": "hello", "block_id": "greet", "inputs": {"name": "<<input.name>>"}},
        {"step_id": "mood", "block_id": "ask_mood", "depends_on": ["hello"]},
    ],
    "memory_keys": ["mood"],
}


@dataclass
class Outcome:
    """What one CLI call did."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Project:
    """Files of a small project and the database the CLI uses."""

    dir: Path
    db: Path
    blocks: Path
    greeting: Path
    check_in: Path

    def write(self, name: str, data: Any) -> Path:
        path = self.dir / name
        path.write_text(json.dumps(data), encoding="utf-8")
        return path


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """A blocks file, a pipeline, a task plan, and where the database goes."""
    p = Project(tmp_path, tmp_path / "flowcore.db", tmp_path / "b.json", tmp_path, tmp_path)
    p.blocks = p.write("blocks.json", BLOCKS)
    p.greeting = p.write("greeting.json", GREETING)
    p.check_in = p.write("check_in.json", CHECK_IN)
    return p


@pytest.fixture
def cli(project: Project, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Outcome]:
    """Call the CLI in-process on the project's database, with no model configured."""
    for var in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "FLOWCORE_BASE_URL",
        "OPENAI_BASE_URL",
        "FLOWCORE_PROVIDER",
        "FLOWCORE_MODEL",
        "FLOWCORE_DB",
    ):
        monkeypatch.delenv(var, raising=False)

    def call(*argv: str) -> Outcome:
        out, err = io.StringIO(), io.StringIO()
        code = main([*argv, "--db", str(project.db)], stdout=out, stderr=err)
        return Outcome(code, out.getvalue(), err.getvalue())

    return call


@pytest.fixture
def env_cli(project: Project, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Outcome]:
    """Call the CLI without --db: the database comes from the environment."""
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "FLOWCORE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    for var in ("FLOWCORE_PROVIDER", "FLOWCORE_MODEL", "FLOWCORE_DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    # Where the SQLite default would go: the Postgres runs must leave it untouched.
    monkeypatch.setenv("FLOWCORE_DB", str(project.db))

    def call(*argv: str) -> Outcome:
        out, err = io.StringIO(), io.StringIO()
        code = main(list(argv), stdout=out, stderr=err)
        return Outcome(code, out.getvalue(), err.getvalue())

    return call
