"""Fixtures shared across the test suite."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from flowcore.blocks import SqliteBlockStore
from tests.pg import pg_schema_url, pg_server_url  # noqa: F401  (fixtures: a real Postgres)


@pytest.fixture
async def block_store(tmp_path: Path) -> AsyncIterator[SqliteBlockStore]:
    """A block registry on a real SQLite file, seeded with the builtin blocks."""
    async with SqliteBlockStore(tmp_path / "blocks.db") as store:
        yield store


class ProcessWorkers:
    """Starts scripts as real worker processes and waits on them, with a generous guard.

    The guard is only ever reached when a spec fails: a worker that hangs is
    reported instead of hanging the suite.
    """

    guard = 60.0

    def start(self, script: Path, config: dict[str, Any]) -> subprocess.Popen[str]:
        """Run ``python script <config as JSON>``, capturing its output."""
        return subprocess.Popen(
            [sys.executable, str(script), json.dumps(config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    async def wait_for(self, check: Callable[[], bool], what: str) -> None:
        """Poll ``check`` until it holds; fail naming ``what`` after the guard."""
        deadline = time.monotonic() + self.guard
        while not check():
            assert time.monotonic() < deadline, f"gave up waiting for {what}"
            await asyncio.sleep(0.02)

    def outcome(self, proc: subprocess.Popen[str]) -> dict[str, Any]:
        """The JSON object a worker printed, once it exited cleanly."""
        out, err = proc.communicate(timeout=self.guard)
        assert proc.returncode == 0, err
        result: dict[str, Any] = json.loads(out)
        return result


@pytest.fixture
def workers() -> ProcessWorkers:
    """Real worker processes for multi-process specs (thread leases, crashes)."""
    return ProcessWorkers()
