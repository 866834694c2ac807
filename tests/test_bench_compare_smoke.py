"""Spec: bench/compare.py --smoke runs every workload on every backend and reports.

It is a benchmark: no time is ever asserted, only that it ran, printed and wrote its JSON,
that every run was checked by counting node executions, and that a miscount stops it.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

BENCH = Path(__file__).resolve().parent.parent / "bench" / "compare.py"
WORKLOADS = set("abcdefghijkl")
CHECKPOINTED = {"d", "e", "i", "k", "l"}


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
    smoke = _load_compare().SMOKE
    expected_runs = {
        "a": smoke.chain,
        "b": 1 + smoke.fanout + 1,
        "c": smoke.loop,
        "d": smoke.loop,
        "e": smoke.loop,
        "f": smoke.send + 1,  # one `work` task per item, then `reduce`
        "g": 0,
        "h": smoke.dag,
        "i": smoke.grow,
        "j": smoke.long_chain,
        "k": smoke.loop,
        "l": smoke.grow,
    }
    assert {"date", "python", "platform", "flowcore", "langgraph"} <= data["meta"].keys()
    rows = {(r["key"], r["backend"]): r for r in data["rows"]}
    for key in WORKLOADS:
        for backend in ("langgraph", "compat", "native"):
            assert (key, backend) in rows, f"no row for ({key}) on {backend}"
    assert rows[("b", "taskgroup")]["rounds"] >= 1
    for (key, backend), row in rows.items():
        assert row["status"] == "ok", row
        assert row["rounds"] >= 1
        assert len(row["times_ms"]) == row["rounds"]
        assert row["peak_bytes"] is not None
        # Counted by the node bodies during the run; (g) only builds, so it must run none.
        expected = smoke.fanout if backend == "taskgroup" else expected_runs[key]
        assert row["node_executions"] == expected, (key, backend)
        if key in CHECKPOINTED:
            assert row["durability"] in ("async", "sync"), row
        else:
            assert row["durability"] is None, row
    for backend in ("langgraph", "compat", "native"):
        for key in ("k", "l"):
            assert rows[(key, backend)]["durability"] == "sync"
            assert "synchronous=FULL" in rows[(key, backend)]["store"]
        assert rows[("e", backend)]["durability"] == "async"
        assert "synchronous=" in rows[("e", backend)]["store"]
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


def test_a_run_that_did_not_execute_every_node_stops_the_benchmark_naming_it() -> None:
    compare = _load_compare()
    chain = next(w for w in compare.WORKLOADS if w.key == "a")
    compare.EXECUTIONS.n = compare.SMOKE.chain - 1
    with pytest.raises(SystemExit, match=r"\(a\) chain.* on compat \(warm-up\): 9 node"):
        compare._check(chain, compare.SMOKE, "compat", {"x": 0}, "warm-up")
    compare.EXECUTIONS.n = compare.SMOKE.chain
    assert compare._check(chain, compare.SMOKE, "compat", {"x": 0}, "warm-up") == 10


def _load_compare() -> ModuleType:
    """bench/compare.py as a module (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_compare", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being built
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module
