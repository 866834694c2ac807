"""Spec: a run killed with SIGKILL at any moment resumes to the same end, nothing lost.

A real subprocess (``crash_worker.py``) runs a 30-superstep graph with a
4-way fan-out on a SqliteCheckpointer. The test kills it at seeded random
moments and at named crash points, starts it again until the thread
finishes, and checks after every kill and at the end:

* the final state equals that of an uninterrupted run;
* no node whose write was persisted when the process died ran again
  (executions are counted in a side table written by the nodes themselves);
* duplicate executions never exceed the nodes that had run but were not yet
  persisted at each kill (for ``exit`` durability that is the whole run so far);
* ``PRAGMA integrity_check`` is ok.

The figures (kills, resumes, lost results, duplicates, resume latency) are
printed in pytest's terminal summary.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from flowcore import InMemoryCheckpointer, Resume
from flowcore.checkpoint import SqliteCheckpointer

from . import crash_worker
from .crash_figures import CRASH_FIGURES, Figures, merge

WORKER = Path(__file__).with_name("crash_worker.py")
DURABILITIES = ("sync", "async", "exit")
RANDOM_KILLS_PER_MODE = 6
MAX_STARTS = 60
KILL_AT_NODES = (1, 8)
"""A random kill lands after the k-th node of a start reported running, k in this range..."""
KILL_DELAY = (0.0, 0.015)
"""...plus a random delay in seconds, so it falls in a node, a write or a commit."""
KILLS_PER_ROUND = 3
"""Then the thread runs to its end unkilled: with ``exit`` durability nothing
after the interrupt is saved before the end, so a kill at every start would never finish."""
WALL_LIMIT = 600.0
"""Seconds one durability mode may take: a bound that only catches a hang."""


def reference_state() -> dict[str, Any]:
    """The end state of an uninterrupted run (resumed once for the interrupt)."""

    async def run() -> dict[str, Any]:
        side = Path(_tmp_side())
        _make_side(side)
        app = crash_worker.build(InMemoryCheckpointer(), str(side), None)
        first = await app.run({"log": [], "total": 0, "answer": ""}, thread_id="ref")
        assert first.status == "interrupted"
        done = await app.run(Resume("yes"), thread_id="ref")
        assert done.status == "completed"
        return dict(done.state)

    return asyncio.run(run())


_SIDE_DIR: list[Path] = []


def _tmp_side() -> str:
    return str(_SIDE_DIR[0] / f"ref-{time.monotonic_ns()}.db")


def _make_side(path: Path) -> None:
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE IF NOT EXISTS runs(node TEXT, pid INTEGER, at REAL)")


def executions(side: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(side) as con:
        return [(n, p) for n, p in con.execute("SELECT node, pid FROM runs ORDER BY rowid")]


def persisted(db: Path, thread: str) -> set[str]:
    """Nodes whose completed write is in the database: applied, or pending."""

    async def read() -> set[str]:
        store = await SqliteCheckpointer.open(str(db))
        try:
            app = crash_worker.build(store, "unused", None)
            try:
                snap = await app.get_state(thread)
            except Exception:
                return set()
            done = set(snap.values.get("log", []))
            for write in await store.get_writes(thread, snap.checkpoint_id):
                if write.payload.get("status") == "completed":
                    done.add(write.node)
            return done
        finally:
            await store.aclose()

    return asyncio.run(read())


def start(config: dict[str, Any]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), json.dumps(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@dataclass(frozen=True)
class Kill:
    """When a random kill lands: ``delay`` seconds after the ``after_nodes``-th node started."""

    after_nodes: int
    delay: float


def _kill_when_running(proc: subprocess.Popen[str], kill: Kill) -> str:
    """Kill ``proc`` as ``kill`` says; return the output read on the way."""
    # Timed from the worker's own "node" lines, so the kill lands while the
    # graph runs however slow start-up is; a start that ends first is not killed.
    assert proc.stdout is not None
    read: list[str] = []
    while sum(line.startswith("node ") for line in read) < kill.after_nodes:
        line = proc.stdout.readline()
        if not line:
            return "".join(read)
        read.append(line)
    time.sleep(kill.delay)
    proc.send_signal(signal.SIGKILL)
    return "".join(read)


@dataclass
class Harness:
    db: Path
    side: Path
    durability: str
    thread: str = "crash"
    figures: Figures = field(default_factory=Figures)
    starts: int = 0

    def config(self, crash: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "db": str(self.db),
            "side": str(self.side),
            "thread": self.thread,
            "durability": self.durability,
            "crash": crash,
        }

    def run_once(self, crash: dict[str, Any] | None = None, kill: Kill | None = None) -> str:
        """Start the worker once; return 'killed', 'interrupted' or 'completed'."""
        self.starts += 1
        assert self.starts <= MAX_STARTS, "the thread never finished"
        if self.starts > 1:
            self.figures.resumes += 1
        before = len(executions(self.side))
        proc = start(self.config(crash))
        early = _kill_when_running(proc, kill) if kill is not None else ""
        out, err = proc.communicate(timeout=120)
        out = early + out
        if proc.returncode == -signal.SIGKILL:
            self._after_kill(before)
            return "killed"
        assert proc.returncode == 0, err
        report = json.loads(out.strip().splitlines()[-1])
        if self.starts > 1:
            self.figures.latencies_ms.append(report["load_ms"])
        return "interrupted" if report["interrupted"] else report["status"]

    def _after_kill(self, rows_before: int) -> None:
        self.figures.kills += 1
        saved = persisted(self.db, self.thread)
        ran = [n for n, _ in executions(self.side)]
        # Nodes that ran in the dead process (or earlier) but whose write is not stored.
        self.figures.in_flight += len({n for n in ran if n not in saved})
        self._saved_at_kill.append((len(ran), saved))

    def finish(self) -> None:
        for _ in range(MAX_STARTS):
            if self.run_once() == "completed":
                return
        raise AssertionError("the thread never finished")

    def __post_init__(self) -> None:
        self._saved_at_kill: list[tuple[int, set[str]]] = []
        _make_side(self.side)

    def check(self, expected: dict[str, Any]) -> None:
        async def final() -> dict[str, Any]:
            store = await SqliteCheckpointer.open(str(self.db))
            try:
                snap = await crash_worker.build(store, "x", None).get_state(self.thread)
                assert snap.next == ()
                return dict(snap.values)
            finally:
                await store.aclose()

        state = asyncio.run(final())
        assert state == expected
        self.figures.lost += len(set(expected["log"]) - set(state["log"]))

        ran = [n for n, _ in executions(self.side)]
        # No node persisted at a kill ran again after it.
        for rows_then, saved in self._saved_at_kill:
            again = set(ran[rows_then:]) & saved
            assert again == set(), f"persisted nodes ran again: {sorted(again)}"
        expected_runs = Counter(expected["log"])
        expected_runs[crash_worker.ASKS] += 1  # interrupt() re-runs its node once, by design
        extra = sum((Counter(ran) - expected_runs).values())
        self.figures.duplicates += extra
        assert extra <= self.figures.in_flight
        with sqlite3.connect(self.db) as con:
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    _SIDE_DIR.append(tmp_path_factory.mktemp("reference"))
    return reference_state()


def figures_for(request: pytest.FixtureRequest, label: str) -> Figures:
    table: dict[str, Figures] = request.config.stash.setdefault(CRASH_FIGURES, {})
    return table.setdefault(label, Figures())


@pytest.mark.parametrize("durability", DURABILITIES)
def test_random_sigkills_resume_to_the_uninterrupted_result(
    durability: str, tmp_path: Path, expected: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    rng = random.Random(f"flowcore-crash-{durability}")
    totals = Figures()
    rounds = 0
    began = time.monotonic()
    while totals.kills < RANDOM_KILLS_PER_MODE:
        rounds += 1
        assert time.monotonic() - began < WALL_LIMIT, f"{totals.kills} kills in {rounds} rounds"
        # One thread per round: kill it at random moments until it finishes.
        harness = Harness(
            tmp_path / f"threads-{rounds}.db", tmp_path / f"side-{rounds}.db", durability
        )
        while True:
            kill = Kill(rng.randint(*KILL_AT_NODES), rng.uniform(*KILL_DELAY))
            if harness.run_once(kill=kill) == "completed":
                break
            if harness.figures.kills >= KILLS_PER_ROUND:
                harness.finish()
                break
        harness.check(expected)
        merge(totals, harness.figures)
    merge(figures_for(request, durability), totals)
    assert totals.kills >= RANDOM_KILLS_PER_MODE


NAMED = [
    ("after_side_effect", "f2"),
    ("between_write_and_checkpoint", None),
    ("inside_checkpoint_commit", None),
    ("saving_interrupt", None),
    ("during_resume", None),
]


@pytest.mark.parametrize("durability", DURABILITIES)
@pytest.mark.parametrize(("point", "node"), NAMED, ids=[p for p, _ in NAMED])
def test_a_kill_at_a_named_crash_point_loses_nothing(
    point: str,
    node: str | None,
    durability: str,
    tmp_path: Path,
    expected: dict[str, Any],
    request: pytest.FixtureRequest,
) -> None:
    if durability == "exit" and point == "between_write_and_checkpoint":
        pytest.skip("exit durability stores the checkpoint before its node writes, at the end")
    harness = Harness(tmp_path / "threads.db", tmp_path / "side.db", durability)
    # exit mode commits only when a run ends, so its first commit is the one to hit.
    crash = {"point": point, "node": node, "after": 1 if durability == "exit" else 5}
    # Keep the crash armed until it fires: some points are only reached after
    # the interrupt (f2 runs after s06 pauses; a resume needs a saved thread).
    for _ in range(4):
        if harness.run_once(crash=crash) == "killed":
            break
    else:
        raise AssertionError(f"crash point {point} was never reached")
    harness.finish()
    harness.check(expected)
    merge(figures_for(request, durability), harness.figures)
