"""Spec: a SIGKILLed worker process's run resumes elsewhere, re-running only unsaved nodes.

Real worker processes (``python -m flowcore worker``) on a real Postgres:
the first one is killed while node ``b``'s result is saved and ``c`` is
still running; its heartbeat goes stale, a second worker re-queues the job
and resumes the thread from its last checkpoint with the pending writes,
so ``a`` and ``b`` never run again, ``c`` runs once more, and the
submitter's one stream carries the whole run (one ``run_start``, ``seq``
without gaps, one ``done``).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from flowcore.port import Caller, RunOptions, RunRequest
from flowcore.queue import QueueExecutor

from .crash_graph import NAME

ROOT = Path(__file__).resolve().parents[2]
GUARD = 120.0


def _worker(url: str, log: Path, out: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "FLOWCORE_DATABASE_URL": url, "FLOWCORE_CRASH_LOG": str(log)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "flowcore", "worker", "--concurrency", "2"]
    cmd += ["--graphs", "tests.queue_workers.crash_graph:build"]
    cmd += ["--heartbeat", "0.5", "--stalled-after", "2", "--lease-ttl", "2"]
    with open(out, "ab") as sink:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=sink, stderr=sink)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def test_a_killed_worker_s_run_resumes_elsewhere_without_rerunning_saved_nodes(
    pg_schema_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "executions.jsonl"
    first = _worker(pg_schema_url, log, tmp_path / "w1.log")
    second: subprocess.Popen[bytes] | None = None
    try:
        async with QueueExecutor(pg_schema_url) as executor:
            request = RunRequest(NAME, {"x": 1}, Caller("req", "trace"), RunOptions("crash-1"))
            handle = executor.run(request)
            events = []
            ended: set[str] = set()
            async with asyncio.timeout(GUARD):
                async for event in handle:
                    events.append(event)
                    if event.type == "node_end":
                        ended.add(event.node)  # type: ignore[attr-defined]
                    if second is None and ended >= {"a", "b"}:
                        # b's result is saved; c holds on its first execution: kill now.
                        first.kill()
                        first.wait()
                        second = _worker(pg_schema_url, log, tmp_path / "w2.log")
                outcome = await handle.final
    finally:
        _stop(first)
        if second is not None:
            _stop(second)

    assert second is not None, "the run ended before the worker could be killed"
    assert outcome.status == "completed", outcome.error
    assert outcome.output is not None
    assert {k: outcome.output[k] for k in "abcd"} == {"a": 2, "b": 4, "c": 6, "d": 10}
    runs = Counter(json.loads(line)["node"] for line in log.read_text().splitlines())
    assert runs == {"a": 1, "b": 1, "c": 2, "d": 1}
    pids = {json.loads(line)["pid"] for line in log.read_text().splitlines()}
    assert pids == {first.pid, second.pid}
    assert [e.seq for e in events] == list(range(len(events)))
    assert [e.type for e in events].count("run_start") == 1
    assert [e.type for e in events][-1] == "done"
