"""Smoke test for bench/engine.py: it runs and reports. It never asserts a time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import flowcore

BENCH = Path(__file__).resolve().parent.parent / "bench" / "engine.py"


def test_engine_benchmark_smoke_mode_prints_the_table_and_writes_json(tmp_path: Path) -> None:
    out_json = tmp_path / "engine.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--smoke", "--json", str(out_json)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "| workload | mode | node runs | rounds | median ms | min ms |" in proc.stdout

    data = json.loads(out_json.read_text())
    assert data["meta"]["flowcore"] == flowcore.__version__
    assert {"python", "platform", "date"} <= data["meta"].keys()
    modes_by_workload: dict[str, set[str]] = {}
    for row in data["overhead"]:
        modes_by_workload.setdefault(row["workload"], set()).add(row["mode"])
    engine_rows = {w: m for w, m in modes_by_workload.items() if "baseline" not in w}
    assert engine_rows, "no engine workloads reported"
    assert all(m == {"supersteps", "dataflow"} for m in engine_rows.values())
    assert {r["mode"] for r in data["sleep"]} == {"supersteps", "dataflow", "-"}
    assert data["compile"]
    assert data["memory"]


def test_checkpoint_benchmark_smoke_mode_reports_overhead_and_storage() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH.with_name("checkpoints.py")), "--smoke"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    for store in ("in-memory", "sqlite"):
        for durability in ("sync", "async", "exit"):
            assert f"| {store}, durability={durability} |" in proc.stdout
    assert "bytes of the checkpoint at step 10" in proc.stdout
    assert "full state at every step would be" in proc.stdout


def test_sandbox_benchmark_smoke_mode_reports_every_payload_and_the_spawn_cost() -> None:
    bench = BENCH.parent / "sandbox.py"
    proc = subprocess.run(
        [sys.executable, str(bench), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "| payload | policy layer + jail | jail alone (policy off, full builtins) |" in (
        proc.stdout
    )
    assert "ESCAPED" not in proc.stdout
    assert "0 escaped. Jail alone:" in proc.stdout
    assert proc.stdout.rstrip().endswith("|")
    assert "| PythonSandbox, bubblewrap | 3 |" in proc.stdout
