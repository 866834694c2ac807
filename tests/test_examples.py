"""Spec for the runnable material: every example program, and every code block of the docs.

Examples run as real subprocesses, the way a user runs them. Docs code blocks
(```python fences in docs/*.md, except the API reference's signatures) run
in order, one namespace per page; a block followed by an ```output fence must
print exactly that text.
"""

from __future__ import annotations

import contextlib
import io
import pathlib
import re
import subprocess
import sys
import types

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.py"))
DOC_PAGES_WITH_RUNNABLE_CODE = [
    "getting-started.md",
    "concepts.md",
    "errors.md",
    "checkpoints.md",
    "blocks.md",
    "llm.md",
    "pipelines.md",
    "langgraph-migration.md",
    "port.md",
    "secrets.md",
    "tracing.md",
    "budgets.md",
    "thinker.md",
    "ai-sdk.md",
    "search.md",
    "schedules.md",
]


def run_example(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error", str(REPO_ROOT / "examples" / name), *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )


def final_answer(stdout: str) -> str:
    match = re.search(r"^Final answer:\n(.*?)\n\nSummary:", stdout, flags=re.S | re.M)
    assert match, f"no final answer in:\n{stdout}"
    return match.group(1)


# ------------------------------------------------------------------ examples


def test_there_are_examples_to_run() -> None:
    names = {p.name for p in EXAMPLES}
    assert names >= {"hello_graph.py", "research_pipeline.py", "approval_flow.py"}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_exits_zero_without_warnings_or_stderr(example: pathlib.Path) -> None:
    proc = run_example(example.name)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.strip(), "an example should show what it did"


def test_approval_flow_pauses_in_one_process_and_finishes_in_another() -> None:
    proc = run_example("approval_flow.py")

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "[start]  status: interrupted",
        "[start]  waiting: Send this reply? 'Dear Ada, we refund 42.00 EUR.'",
        "[answer] resuming at review with 'yes'",
        "[answer] status: completed",
        "[answer] log: ['drafted', 'reviewed: yes', 'sent']",
        "[answer] checkpoints in the thread: 4",
    ]


def test_approval_flow_steps_can_be_driven_by_hand(tmp_path: pathlib.Path) -> None:
    db = str(tmp_path / "approvals.db")
    first = run_example("approval_flow.py", "start", "--db", db, "--thread", "t1")
    second = run_example(
        "approval_flow.py", "answer", "--db", db, "--thread", "t1", "--answer", "no"
    )

    assert first.returncode == 0, first.stderr
    assert "status: interrupted" in first.stdout
    assert second.returncode == 0, second.stderr
    assert "log: ['drafted', 'reviewed: no', 'rejected']" in second.stdout


def test_hello_graph_prints_the_notes_of_both_searches_then_the_summary() -> None:
    proc = run_example("hello_graph.py")
    assert proc.stdout == "['web: graph engines', 'docs: graph engines', 'summary of 2 notes']\n"


def test_readme_code_sample_is_the_hello_graph_example() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    sample = re.findall(r"```python\n(.*?)```", readme, flags=re.S)[0]
    assert sample in (REPO_ROOT / "examples" / "hello_graph.py").read_text()


@pytest.fixture(scope="module")
def pipeline_supersteps() -> subprocess.CompletedProcess[str]:
    return run_example("research_pipeline.py")


def test_research_pipeline_completes_and_prints_a_summary(
    pipeline_supersteps: subprocess.CompletedProcess[str],
) -> None:
    out = pipeline_supersteps.stdout
    assert pipeline_supersteps.returncode == 0, pipeline_supersteps.stderr
    assert "mode: supersteps" in out
    assert "  status:      completed\n" in out
    assert "  supersteps:  9\n" in out
    assert "  passes:      3\n" in out
    assert "  nodes run:   11 (3 skipped)\n" in out
    assert "  revisions:   2\n" in out


def test_research_pipeline_prints_live_progress_of_each_parallel_researcher(
    pipeline_supersteps: subprocess.CompletedProcess[str],
) -> None:
    lines = pipeline_supersteps.stdout.splitlines()
    for angle in ("background", "methods", "pitfalls"):
        node = f"research_{angle}"
        searching = next(i for i, line in enumerate(lines) if node in line and "searching" in line)
        done = next(i for i, line in enumerate(lines) if node in line and "done" in line)
        assert searching < done
        assert "step  2" in lines[searching]
    assert any("planner" in line and "wrote angles, topic" in line for line in lines)
    # The loop's exit: the critic approved, so revise was not taken in the last pass.
    assert any("revise" in line and "skipped" in line for line in lines)
    assert any(line.startswith("step  9") and "write" in line for line in lines)


def test_research_pipeline_final_answer_uses_every_finding_and_both_revisions(
    pipeline_supersteps: subprocess.CompletedProcess[str],
) -> None:
    answer = " ".join(final_answer(pipeline_supersteps.stdout).split())
    assert answer.startswith("Graph engines keep parallel LLM agents deterministic:")
    # Findings in declaration order of the parallel researchers.
    assert answer.index("On background") < answer.index("On methods") < answer.index("On pitfalls")
    assert "For example," in answer
    assert "The trade-off:" in answer
    assert "(sources: notes/background.md, notes/methods.md, notes/pitfalls.md)" in answer


def test_research_pipeline_output_is_the_same_on_every_run(
    pipeline_supersteps: subprocess.CompletedProcess[str],
) -> None:
    assert run_example("research_pipeline.py").stdout == pipeline_supersteps.stdout


def test_research_pipeline_dataflow_mode_gives_the_same_answer(
    pipeline_supersteps: subprocess.CompletedProcess[str],
) -> None:
    proc = run_example("research_pipeline.py", "--mode", "dataflow")
    assert proc.returncode == 0, proc.stderr
    assert "mode: dataflow" in proc.stdout
    assert "  status:      completed\n" in proc.stdout
    assert final_answer(proc.stdout) == final_answer(pipeline_supersteps.stdout)
    summary = pipeline_supersteps.stdout.split("Summary:")[1]
    assert proc.stdout.split("Summary:")[1] == summary


def test_research_pipeline_revision_loop_stops_at_max_revisions() -> None:
    proc = run_example("research_pipeline.py", "--max-revisions", "1")
    assert proc.returncode == 0, proc.stderr
    assert "  revisions:   1\n" in proc.stdout
    answer = final_answer(proc.stdout)
    assert "For example," in answer
    assert "trade-off" not in answer


def test_support_agent_runs_stored_blocks_of_every_main_kind() -> None:
    proc = run_example("support_agent.py")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "registry: blocks.db, 5 blocks imported" in out
    assert "lookup     tool   order_status -> {'status': 'shipped', 'eta_days': 2}" in out
    assert "urgency    end    {'score': 0, 'reasons': []} [bubblewrap]" in out
    assert "triage     end    {'branch': 'auto'}" in out
    assert "status: completed" in out
    assert "reply: Good news: your order has shipped and arrives in 2 days." in out


def test_support_agent_hands_urgent_messages_to_a_person() -> None:
    proc = run_example("support_agent.py", "--message", "It is broken, refund me today")
    assert proc.returncode == 0, proc.stderr
    assert "{'score': 5, 'reasons': ['broken', 'refund', 'today']}" in proc.stdout
    assert "hand_over  paused 'Please answer this customer (urgency 5)" in proc.stdout
    assert "status: interrupted" in proc.stdout


# --------------------------------------------------------------- docs blocks

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", flags=re.S | re.M)


def doc_blocks(page: str) -> list[tuple[int, str, str | None]]:
    """(line, python code, expected output or None) for each runnable block of a page."""
    text = (REPO_ROOT / "docs" / page).read_text()
    fences = list(_FENCE.finditer(text))
    blocks = []
    for i, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        expected = None
        nxt = fences[i + 1] if i + 1 < len(fences) else None
        if (
            nxt is not None
            and nxt.group(1) == "output"
            and not text[fence.end() : nxt.start()].strip()
        ):
            expected = nxt.group(2)
        line = text.count("\n", 0, fence.start()) + 1
        blocks.append((line, fence.group(2), expected))
    return blocks


@pytest.mark.parametrize("page", DOC_PAGES_WITH_RUNNABLE_CODE)
def test_every_python_block_of_the_docs_runs_and_prints_what_the_page_shows(
    page: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = doc_blocks(page)
    assert blocks, f"docs/{page} has no python blocks"
    module = types.ModuleType(f"docs_{page.replace('-', '_').removesuffix('.md')}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for line, code, expected in blocks:
        where = f"docs/{page}:{line}"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(code, where, "exec"), module.__dict__)
            except Exception as exc:  # pragma: no cover - the message is the point
                pytest.fail(f"{where}: block raised {type(exc).__name__}: {exc}")
        if expected is not None:
            assert out.getvalue() == expected, f"{where}: printed output differs"


def test_every_output_block_of_the_docs_follows_a_python_block() -> None:
    for page in DOC_PAGES_WITH_RUNNABLE_CODE:
        text = (REPO_ROOT / "docs" / page).read_text()
        outputs = sum(1 for fence in _FENCE.finditer(text) if fence.group(1) == "output")
        checked = sum(1 for _, _, expected in doc_blocks(page) if expected is not None)
        assert outputs == checked, f"docs/{page}: an ```output block is not checked"


# ---------------------------------------------------------------------- links

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """The id GitHub gives a markdown heading."""
    text = heading.lstrip("#").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: pathlib.Path) -> set[str]:
    text = _FENCE.sub("", page.read_text())
    return {github_anchor(line) for line in text.splitlines() if line.startswith("#")}


def markdown_pages() -> list[pathlib.Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", markdown_pages(), ids=lambda p: p.name)
def test_every_relative_link_points_to_an_existing_file_and_heading(page: pathlib.Path) -> None:
    broken = []
    text = _FENCE.sub("", page.read_text())
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # external: not checked offline
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        missing_heading = bool(anchor) and resolved.suffix == ".md"
        if not resolved.exists() or (missing_heading and anchor not in anchors(resolved)):
            broken.append(target)
    assert broken == []


def test_the_api_reference_signatures_are_valid_python() -> None:
    # They are declarations, not programs: parse them, do not run them.
    text = (REPO_ROOT / "docs" / "api.md").read_text()
    blocks = [fence for fence in _FENCE.finditer(text) if fence.group(1) == "python"]
    assert blocks
    for fence in blocks:
        line = text.count("\n", 0, fence.start()) + 1
        compile(fence.group(2), f"docs/api.md:{line}", "exec", dont_inherit=True)
