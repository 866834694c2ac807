"""Spec: the conformance kit runs in a user's project that never set ``asyncio_mode``.

pytest-asyncio's default is strict mode, where an ``async def`` fixture
declared with a plain ``@pytest.fixture`` is refused. The kit is run here
the way a user runs it: a test file in a fresh folder with its own (empty)
pytest configuration, an async ``executor`` fixture, and pytest started in
another process, so this repository's ``asyncio_mode = "auto"`` plays no part.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import flowcore

REPO_ROOT = Path(flowcore.__file__).resolve().parent.parent

USER_TESTS = """\
from collections.abc import AsyncIterator

import pytest

from flowcore.port import InProcExecutor
from flowcore.testing import ExecutorConformance


class TestMyExecutor(ExecutorConformance):
    @pytest.fixture
    async def executor(self) -> AsyncIterator[InProcExecutor]:
        async with InProcExecutor() as executor:
            yield executor
"""


def test_the_kit_runs_with_an_async_executor_fixture_in_strict_mode(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "test_my_executor.py").write_text(USER_TESTS, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-k",
            "completed_run or paused_run or failing_run",
            "test_my_executor.py",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "3 passed" in ran.stdout
    assert "asyncio_mode" not in (tmp_path / "pytest.ini").read_text(encoding="utf-8")
