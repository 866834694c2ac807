"""Spec: ``flowcore create`` asks its questions in the terminal and writes a pipeline that runs.

The transcript in docs/thinker.md is this spec's session: the spec checks
the document against what the command really prints.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs" / "thinker.md"
INTENT = "summarize stuff"
ANSWERS = "a news article\nsummarize it, then count the words of the summary\n"
ARTICLE = "Rivers rose after three days of rain. Towns near the banks were evacuated."


def _flowcore(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_BASE_URL"))
        and k not in ("FLOWCORE_PROVIDER", "FLOWCORE_DB")
    }
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return subprocess.run(
        [sys.executable, "-m", "flowcore", "--db", "flowcore.db", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _documented(section: str) -> str:
    """The transcript lines of docs/thinker.md's ``section`` block (without the prompt line)."""
    text = DOCS.read_text(encoding="utf-8")
    block = re.search(rf"<!-- {section} -->\n```text\n(.*?)```", text, re.DOTALL)
    assert block is not None, f"docs/thinker.md lacks the {section} transcript"
    return "\n".join(block.group(1).splitlines()[1:]) + "\n"


def test_create_asks_in_the_terminal_and_saves_a_pipeline_that_runs(tmp_path: Path) -> None:
    created = _flowcore(tmp_path, "create", INTENT, stdin=ANSWERS)
    assert created.returncode == 0, created.stderr
    assert created.stderr == ""
    assert created.stdout == _documented("create")
    assert "? What will you give it as input, and what should it produce?\n> a news article\n" in (
        created.stdout
    )
    path = tmp_path / "summarize_stuff_news_article_pipeline.json"
    pipeline = json.loads(path.read_text(encoding="utf-8"))
    assert [n["block_id"] for n in pipeline["nodes"]] == ["summarize", "count_words"]
    assert pipeline["nodes"][1]["inputs"] == {"text": "<<n1.summary>>"}

    ran = _flowcore(tmp_path, "run", path.name, "--input", f"text={ARTICLE}")
    assert ran.returncode == 0, ran.stderr
    assert "completed: run " in ran.stdout
    assert re.search(r'n2 +completed .*\{"word_count": \d+\}', ran.stdout)
    documented = _documented("run")
    assert documented.splitlines()[0] == ran.stdout.splitlines()[0]

    shown = _flowcore(tmp_path, "blocks", "show", "count_words")
    assert json.loads(shown.stdout)["created_by"] == "thinker"

    runs = json.loads(_flowcore(tmp_path, "runs", "list", "--json").stdout)
    thinking = [r for r in runs if r["pipeline_id"] == "thinker"]
    # One run per answer: asked, asked again, then built; each with its tokens counted.
    assert [r["status"] for r in thinking] == ["completed", "interrupted", "interrupted"]
    assert all(r["input_tokens"] > 0 for r in thinking)
    assert len({r["thread_id"] for r in thinking}) == 1


def test_a_closed_stdin_is_one_clear_line(tmp_path: Path) -> None:
    done = _flowcore(tmp_path, "create", INTENT, stdin="")
    assert done.returncode == 2
    assert done.stderr.startswith("flowcore: error: no answer to the question (stdin is closed)")
    assert "--no-clarify" in done.stderr


def test_automate_creates_then_runs_without_questions(tmp_path: Path) -> None:
    done = _flowcore(
        tmp_path,
        "automate",
        "Extract the numbers from a text, then compute the average",
        "--no-clarify",
        "--input",
        "text=scores 4, 8 and 9",
    )
    assert done.returncode == 0, done.stderr
    assert "saved average_numbers v1 (created_by thinker)" in done.stdout
    assert re.search(r'n2 +completed .*\{"mean": 7\.0\}', done.stdout)


def test_create_json_prints_only_the_result_document(tmp_path: Path) -> None:
    done = _flowcore(tmp_path, "create", "Count the lines of a poem", "--no-clarify", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "complete"
    assert result["created"] == ["count_lines"]
    assert (tmp_path / result["file"]).is_file()
