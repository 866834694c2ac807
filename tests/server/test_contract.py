"""schemathesis against the live server's own OpenAPI document: no 5xx, no schema violation.

A short run (a few examples per operation) keeps the default suite fast;
CI runs ``python -m tests.server.contract --examples 50`` and prints its figures.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("schemathesis")
pytest.importorskip("uvicorn")

from tests.server.contract import run_contract
from tests.server.live import ROOT, Served, new_key


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[Served, str]]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FLOWCORE_PROVIDER": "offline",
        "FLOWCORE_TEST_TRACE": str(tmp_path / "trace.txt"),
    }
    db = tmp_path / "flowcore.db"
    token = new_key(env, db, "contract")
    started: list[Served] = []
    server = Served(db, env, tmp_path / "server.log", started, "--rate-limit", "100000000")
    yield server, token
    server.stop()


def test_generated_requests_get_no_server_error_and_match_the_schema(
    live: tuple[Served, str],
) -> None:
    server, token = live
    report = run_contract(server.base, token, examples=3)
    assert report.failures == [], report.summary()
    assert report.server_errors == 0
    assert report.violations == 0
    assert report.requests > 100  # every operation, valid and invalid requests
    assert report.statuses[401] > 0  # requests with a broken key were refused, not served
