"""Spec: bench/compare.py --smoke runs every workload on every backend and reports.

It is a benchmark: no time is ever asserted, only that it ran, printed and wrote its JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

BENCH = Path(__file__).resolve().parent.parent / "bench" / "compare.py"
WORKLOADS = set("abcdefghi")


def test_compare_smoke_mode_prints_the_table_and_writes_a_row_per_workload_and_backend(
    tmp_path: Path,
) -> None:
    out_json = tmp_path / "compare.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--smoke", "--json", str(out_json)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "| workload | backend | rounds | median ms | min ms | peak memory KiB |" in proc.stdout
    assert "| workload | LangGraph / compat | LangGraph / native |" in proc.stdout

    data = json.loads(out_json.read_text())
    assert {"date", "python", "platform", "flowcore", "langgraph"} <= data["meta"].keys()
    rows = {(r["key"], r["backend"]): r for r in data["rows"]}
    for key in WORKLOADS:
        for backend in ("langgraph", "compat", "native"):
            assert (key, backend) in rows, f"no row for ({key}) on {backend}"
    # Send has no native equivalent: reported as n/a with a reason, never silently dropped.
    assert rows[("f", "native")]["status"] == "n/a"
    assert "Send" in rows[("f", "native")]["reason"]
    assert rows[("b", "taskgroup")]["rounds"] >= 1
    for (key, backend), row in rows.items():
        if (key, backend) == ("f", "native"):
            continue
        assert row["status"] == "ok", row
        assert row["rounds"] >= 1
        assert len(row["times_ms"]) == row["rounds"]
        assert row["peak_bytes"] is not None
    for backend in ("langgraph", "compat", "native"):
        storage = rows[("i", backend)]
        assert storage["stored_bytes"] > storage["stored_bytes_half"] > 0
        assert isinstance(storage["linear"], bool)


def test_compare_only_runs_the_chosen_workloads(tmp_path: Path) -> None:
    out_json = tmp_path / "compare.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--smoke", "--only", "a,f", "--json", str(out_json)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    keys = {r["key"] for r in json.loads(out_json.read_text())["rows"]}
    assert keys == {"a", "f"}
