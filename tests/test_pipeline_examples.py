"""Spec: the three end-to-end examples show their seed's flow, as programs and through the CLI.

- ``examples/lunch_order.py`` (seed 000): a task plan whose first run pauses for
  the user's usual order, is resumed with the answer and places the order; the
  answer is remembered, so the second run for the same user takes the
  ``has_preference`` branch without a pause. Memory and run history live in
  the one database file the driver creates.
- ``examples/market_research.py`` (seed 003): ``<<n1.results>>`` feeds three
  branches that run in one superstep, joined by a report.
- ``examples/agent_loop.py`` (seed 001): an empty search makes the verifier
  send the work back to the planner once; the second pass answers.

Drivers run as real subprocesses (warnings are errors there too) and every
one prints the same text on every run.
"""

from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys
import types
from datetime import UTC, datetime

import pytest

from flowcore.history import SqliteRunHistory
from flowcore.memory import MemoryManager, SqliteStore
from flowcore.pipeline import TaskPlan, load_definition

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = REPO_ROOT / "examples"
ANSWER = "Chicken burrito bowl, chips and guacamole from Chipotle"
ORDERED = "Chicken burrito bowl, chips and guacamole from Chipotle, 15.35 USD, arriving 12:45-13:00"


def run_python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )


def run_example(name: str, *args: str) -> str:
    proc = run_python(str(EXAMPLES / name), *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout


def load_driver(name: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """Import an example driver as a module (it runs nothing on import)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses resolve names here
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def lunch() -> str:
    return run_example("lunch_order.py")


@pytest.fixture(scope="module")
def research() -> str:
    return run_example("market_research.py")


@pytest.fixture(scope="module")
def agent() -> str:
    return run_example("agent_loop.py")


def lunch_runs(out: str) -> tuple[str, str]:
    first = out.split("\nrun 1\n", 1)[1].split("\nrun 2 (same user)\n", 1)[0]
    second = out.split("\nrun 2 (same user)\n", 1)[1].split("\nrun history", 1)[0]
    return first, second


# ------------------------------------------------------------------ lunch order


def test_lunch_first_run_asks_the_user_pauses_and_completes_when_resumed(lunch: str) -> None:
    first, _ = lunch_runs(lunch)
    lines = first.splitlines()

    def at(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)

    assert "load_memory     remembered: nothing yet" in first
    assert "recall          memory search found: nothing" in first
    assert "check_previous  decision -> no_preference (no usual order on file yet)" in first
    assert at("ask_order       paused") < at("status: interrupted") < at("question:")
    assert (
        "  question: No usual lunch order is saved for ada yet. What should I order every "
        "Tuesday? Write the dishes, then 'from' and the restaurant."
    ) in lines
    assert f"  answer:   {ANSWER}" in lines
    resumed = at("resuming the thread")
    # The resumed run starts at the human block: nothing before it runs again.
    assert "ask_order" in lines[resumed + 1]
    assert all("recall" not in line for line in lines[resumed:])
    order = [
        "add_to_cart     tool add_to_cart",
        "set_delivery    tool set_delivery_time",
        "place_order     tool place_order",
        "confirm         write_confirmation",
        "save_memory     preferences and run summary saved",
    ]
    assert [at(step) for step in order] == sorted(at(step) for step in order)
    assert at("status: completed") > resumed
    assert f"  order:  UE-1001 placed: {ORDERED}" in lines
    assert f"  remembered for ada: {{'usual_order': '{ANSWER}'}}" in lines


def test_lunch_second_run_uses_the_remembered_order_without_a_pause(lunch: str) -> None:
    _, second = lunch_runs(lunch)

    assert f"load_memory     remembered: {{'usual_order': '{ANSWER[:30]}" in second
    assert "recall          memory search found: usual_order" in second
    assert "check_previous  decision -> has_preference (usual order on file: Chicken" in second
    assert "ask_order       skipped: branch not taken" in second
    assert "paused" not in second
    assert "interrupted" not in second
    assert "  status: completed" in second.splitlines()
    assert f"  order:  UE-1002 placed: {ORDERED}" in second.splitlines()


def test_lunch_run_history_lists_the_pause_the_resumed_run_and_the_automatic_run(
    lunch: str,
) -> None:
    history = lunch.split("\nrun history", 1)[1].splitlines()[1:]
    assert [line.split()[:3] for line in history] == [
        ["run", "1", "interrupted"],
        ["run", "1", "completed"],
        ["run", "2", "completed"],
    ]
    assert history[0].endswith("load_memory, recall, open_app, check_previous")
    assert history[1].endswith(
        "ask_order, add_to_cart, set_delivery, place_order, confirm, save_memory"
    )
    assert "ask_order" not in history[2]


async def test_lunch_answer_is_saved_as_the_preference_run_two_reads_and_both_runs_are_recorded(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = load_driver("lunch_order", monkeypatch)
    db = tmp_path / "lunch.db"

    runs = await driver.main(db, "grace", "Pad thai, green salad from Thai Basil")

    capsys.readouterr()
    first, second = runs.first, runs.second
    assert (first.status, second.status) == ("completed", "completed")
    assert first.state["results"]["check_previous"]["branch"] == "no_preference"
    assert second.state["results"]["check_previous"]["branch"] == "has_preference"
    assert "ask_order" not in second.state["results"]
    assert second.state["results"]["add_to_cart"] == {
        "restaurant": "Thai Basil",
        "items": ["Pad thai", "green salad"],
        "cart_total": 20.5,
    }
    # What run 1 saved is in the database file, for any later process to read.
    async with SqliteStore(db) as store:
        memory = MemoryManager(store)
        assert await memory.preferences("grace") == {
            "usual_order": "Pad thai, green salad from Thai Basil"
        }
        summaries = await memory.history("grace", "lunch_order")
        assert len(summaries) == 2
        assert all(
            s["remembered"] == {"usual_order": "Pad thai, green salad from Thai Basil"}
            for s in summaries
        )
        assert await memory.preferences("ada") == {}
    async with SqliteRunHistory(db) as history:
        records = await history.list(pipeline_id="lunch_order", user_id="grace")
    newest_first = [(r.status, r.thread_id) for r in records]
    assert [status for status, _ in newest_first] == ["completed", "completed", "interrupted"]
    assert newest_first[1][1] == newest_first[2][1] == first.thread_id
    assert newest_first[0][1] == second.thread_id != first.thread_id
    assert (
        records[2].interrupts[0]["question"].startswith("No usual lunch order is saved for grace")
    )
    assert all(r.source is not None and r.source["plan_id"] == "lunch_order" for r in records)


def test_lunch_plan_is_a_task_plan_due_every_tuesday_at_noon_new_york_time() -> None:
    plan = load_definition((EXAMPLES / "lunch_order" / "plan.json").read_text())

    assert isinstance(plan, TaskPlan)
    assert plan.memory_keys == ("usual_order",)
    assert plan.schedule is not None
    due = plan.schedule.next_runs(datetime(2025, 10, 30, tzinfo=UTC), count=3)
    # 4 November 2025: New York is back on standard time, the wall clock stays at noon.
    assert [t.isoformat() for t in due] == [
        "2025-11-04T12:00:00-05:00",
        "2025-11-11T12:00:00-05:00",
        "2025-11-18T12:00:00-05:00",
    ]


# -------------------------------------------------------------- market research


def test_market_research_runs_the_three_branches_of_n1_in_one_superstep(research: str) -> None:
    lines = research.splitlines()
    assert "status: completed (recorded in the run history: completed)" in lines
    steps = research.split("supersteps:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert steps == [
        "  1: load_memory",
        "  2: n1",
        "  3: n2, n3, n4   <- in parallel",
        "  4: n5",
        "  5: save_memory",
    ]
    # The live progress agrees: every branch started in step 3, before the join started.
    for node in ("n2", "n3", "n4"):
        assert any(re.match(rf"  step 3  {node} +start ", line) for line in lines), node
    join = next(i for i, line in enumerate(lines) if "n5          start" in line)
    branch_ends = [i for i, line in enumerate(lines) if re.match(r"  step 3  n[234] +done", line)]
    assert len(branch_ends) == 3
    assert max(branch_ends) < join


def test_market_research_feeds_the_raw_n1_results_to_n2_and_n3(research: str) -> None:
    # n2's prompt was rendered from the list of pages: one line per page.
    prompt = [line for line in research.splitlines() if line.startswith("    | ")]
    assert prompt[0] == "    | Search results:"
    assert prompt[1].startswith("    | - NotePilot - pricing: NotePilot Pro costs $18/month")
    assert prompt[5].startswith("    | - Why teams switch meeting-note apps: A survey of 400 teams")
    assert prompt[-1] == "    | Summarize the competitors in two sentences."
    # n3 (sandboxed Python) indexed the same pages and pulled out every monthly price.
    assert "  n3 prices:  EchoNotes $9, Scribbly $12, NotePilot $18, MinuteMind $25" in research
    assert "  n3 median:  $15, cheapest EchoNotes" in research
    assert "n3          done   4 prices, median 15.0 [bubblewrap]" in research
    assert "n1          done   5 pages for 'AI meeting-note apps pricing reviews'" in research
    assert research.rstrip().endswith("with privacy as the headline feature.")


# ------------------------------------------------------------------- agent loop


def test_agent_loop_verifier_sends_an_empty_search_back_to_the_planner_once(agent: str) -> None:
    lines = agent.splitlines()
    assert "status: completed after 12 supersteps" in lines
    assert "  pass 1: load_memory, planner, router, executor, verifier" in lines
    assert (
        "  pass 2: planner, router, executor, verifier, generator, summarizer, save_memory"
    ) in lines
    verdicts = [line.split("verifier")[1].split()[1] for line in lines if "  verifier  " in line]
    assert verdicts == ["retry", "ok"]
    assert "  step  4  executor    0 hit(s): none" in lines
    assert "  step  8  executor    2 hit(s): checkpoints.md, durability.md" in lines
    assert "           generator   skipped: not reached in this pass" in lines
    # One search per pass: two calls, never under one id (each start closed by its result).
    assert "tool calls: 2, 2 distinct id(s), each closed by its result" in lines


def test_agent_loop_second_plan_reads_the_verifier_feedback_and_the_summary_is_kept(
    agent: str,
) -> None:
    assert (
        "  | Your last attempt: no results for 'process crash recovery replay journal'; "
        "search again with fewer, broader words"
    ) in agent.splitlines()
    assert "  step  6  planner     search_docs, query 'crash checkpoint'" in agent
    assert "(checkpoints.md); with sync durability a crash loses nothing at all" in agent
    assert "remembered for ada: Asked what a crash does to a running graph;" in agent


# ------------------------------------------------------------------- all three


@pytest.mark.parametrize(
    ("name", "fixture"),
    [
        ("lunch_order.py", "lunch"),
        ("market_research.py", "research"),
        ("agent_loop.py", "agent"),
    ],
)
def test_every_example_prints_the_same_text_on_every_run(
    name: str, fixture: str, request: pytest.FixtureRequest
) -> None:
    assert run_example(name) == request.getfixturevalue(fixture)


# ---------------------------------------------------------------- through the CLI


def flowcore(db: pathlib.Path, *args: str) -> str:
    proc = run_python("-m", "flowcore", *args, "--provider", "offline", "--db", str(db))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc.stdout


def test_the_lunch_order_files_run_pause_and_resume_through_the_cli(
    tmp_path: pathlib.Path,
) -> None:
    db = tmp_path / "flowcore.db"
    files = "examples/lunch_order"
    tools = ("--tools", f"{files}/tools.py")
    started = flowcore(
        db,
        "run",
        f"{files}/plan.json",
        "--blocks",
        f"{files}/blocks.json",
        *tools,
        "--user",
        "ada",
    )
    (thread,) = re.findall(r"^resume with: flowcore resume (\S+) --value", started, flags=re.M)
    resumed = flowcore(db, "resume", thread, "--value", ANSWER, *tools)
    again = flowcore(db, "run", f"{files}/plan.json", *tools, "--user", "ada")

    assert "interrupted: run" in started
    assert "waiting for an answer from node ask_order: No usual lunch order" in started
    assert "completed: run" in resumed
    assert '"order_id": "UE-1001", "status": "placed"' in resumed
    assert "completed: run" in again
    assert '"branch": "has_preference"' in again
    assert re.search(r"^ask_order +skipped", again, flags=re.M)


@pytest.mark.parametrize(
    ("name", "definition", "run_input"),
    [
        ("market_research", "pipeline.json", "topic=AI meeting-note apps"),
        ("agent_loop", "pipeline.json", "question=What happens when the process crashes?"),
    ],
)
def test_the_pipeline_examples_run_through_the_cli_with_the_offline_model(
    tmp_path: pathlib.Path, name: str, definition: str, run_input: str
) -> None:
    files = f"examples/{name}"
    out = flowcore(
        tmp_path / "flowcore.db",
        "run",
        f"{files}/{definition}",
        "--blocks",
        f"{files}/blocks.json",
        "--tools",
        f"{files}/tools.py",
        "--input",
        run_input,
        "--user",
        "ada",
    )
    assert "completed: run" in out
    assert "failed" not in out
