"""Spec: bench/fsync_share.py counts the fsyncs of the per-step durable workloads (k), (l).

A measurement, not a benchmark test: no time is asserted, only the counts, which follow
from how each engine commits: LangGraph commits a task's writes and then its checkpoint,
flowcore both in one transaction, so flowcore makes fewer durable commits per run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

BENCH = Path(__file__).resolve().parent.parent / "bench" / "fsync_share.py"


def _strace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    probe = subprocess.run(
        ["strace", "-f", "--seccomp-bpf", "-e", "trace=getppid", "-o", "/dev/null", "true"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _strace_works(), reason="needs strace allowed to trace a child")
def test_smoke_run_counts_one_durable_commit_per_step_for_flowcore_and_two_for_langgraph() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--smoke", "--only", "k,l"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {}
    for line in proc.stdout.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0] in ("(k)", "(l)"):
            rows[cells[0], cells[1]] = int(cells[2])
    assert set(rows) == {(w, b) for w in ("(k)", "(l)") for b in ("langgraph", "compat", "native")}
    steps = {"(k)": 10, "(l)": 10}  # SMOKE: loop=10, grow=10
    for workload, n in steps.items():
        langgraph = rows[workload, "langgraph"]
        assert langgraph >= 2 * n
        for backend in ("compat", "native"):
            assert n <= rows[workload, backend] < langgraph
