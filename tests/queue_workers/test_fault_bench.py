"""Spec: the queue fault test (``bench/queue_faults.py``), small: every run right, nothing lost.

The full one (200 runs, 20 SIGKILLs, 3 Postgres restarts) runs in CI; this
one queues 24 runs over 3 real ``flowcore worker`` processes while 4 of them
are SIGKILLed and Postgres restarts once, and asserts the bench's verdict:
every run completed with the right value from every node, and every
re-execution of a node is explained by a kill of the process that ran it or
by the restart.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from tests.pg import find_pg_bin

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("queue_faults", ROOT / "bench/queue_faults.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["queue_faults"] = module
    spec.loader.exec_module(module)
    return module


async def test_runs_survive_worker_kills_and_a_postgres_restart(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if find_pg_bin() is None:
        if os.environ.get("FLOWCORE_REQUIRE_POSTGRES") == "1":
            pytest.fail("FLOWCORE_REQUIRE_POSTGRES=1 but initdb is not installed")
        pytest.skip("no Postgres to restart (apt-get install postgresql)")
    bench = _bench()
    args = bench.parse(  # type: ignore[attr-defined]
        ["--runs", "24", "--kills", "4", "--restarts", "1", "--kill-every", "1.0"]
    )
    code = await bench.main(args)  # type: ignore[attr-defined]
    out = capsys.readouterr().out
    assert code == 0, out
    row = out.strip().splitlines()[-1].split("|")
    assert row[1].strip() == row[2].strip() == "24"  # runs, completed
    assert row[5].strip() == "0"  # lost results
    assert row[7].strip().endswith("/ 0)")  # no unexplained re-execution
