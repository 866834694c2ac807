"""Spec: procrastinate is an optional extra: importing flowcore (and its queue) never loads it."""

from __future__ import annotations

import subprocess
import sys


def test_importing_flowcore_its_queue_and_cli_leaves_procrastinate_unloaded() -> None:
    code = (
        "import sys, flowcore, flowcore.queue, flowcore.cli.app; "
        "from flowcore.queue import QueueExecutor, QueueWorker; "
        "print(sorted(m for m in ('procrastinate', 'psycopg') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"
