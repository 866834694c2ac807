"""Fault test of the run queue: runs on 3 worker processes while workers die and Postgres restarts.

Starts a throwaway Postgres cluster (``tests/pg.py``: Debian's ``initdb``,
loopback only) unless ``--url`` names one, three ``flowcore worker``
processes serving ``bench/queue_fault_graph.py`` (``a -> (b, c) -> d``,
every node execution logged by the node itself to a side file), and then,
while it queues ``--runs`` runs (each on its own thread), it:

* SIGKILLs a worker every ``--kill-every`` seconds (one that just ran a
  node, when it can tell), and starts a new worker process in its place;
* restarts Postgres (``pg_ctl restart -m fast``) ``--restarts`` times.

The workers are never restarted by the bench after a Postgres restart:
they reconnect by themselves (see ``flowcore.queue.worker``).

Then it checks:

* every run completed, with the right value from every node in its final
  state (``lost results`` counts a node result missing or wrong);
* the first ``--follow`` runs (10) are followed live by ``QueueExecutor``
  handles through all of it (LISTEN/NOTIFY, replay from the events table):
  each stream must be whole (``seq`` 0, 1, 2, ..., one ``run_start``, one
  ``done``, completed);
* every re-execution of a node is explained: an execution followed by
  another of the same node of the same run must have been cut short, by a
  SIGKILL of the worker process that ran it (after it started), or by a
  Postgres restart that began after it started.

Prints runs, kills, restarts, lost results and re-executions
(explained / unexplained) and exits 1 if any run did not complete right,
any result was lost, any followed stream was broken, or any re-execution
is unexplained.

Run: ``python bench/queue_faults.py`` (about 1-3 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.queue_fault_graph import NAME, NODES, expected  # noqa: E402
from flowcore.port import Caller, RunOptions, RunRequest  # noqa: E402
from flowcore.queue import QueueExecutor  # noqa: E402


@dataclass
class Cluster:
    """A throwaway Postgres cluster the bench can restart."""

    url: str
    data: Path | None = None
    bin: Path | None = None
    log: Path | None = None
    stop: list[str] = field(default_factory=list)

    def restart(self) -> None:
        if self.data is None or self.bin is None:
            raise SystemExit("--restarts needs the bench's own cluster (drop --url)")
        cmd = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w"]
        cmd += ["-l", str(self.log), "restart"]
        subprocess.run(_as_owner(cmd), check=True, capture_output=True, timeout=60)


def _as_owner(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--", *cmd] if os.geteuid() == 0 else cmd


def start_cluster(tmp: Path) -> Cluster:
    from tests.pg import _start_cluster, find_pg_bin

    url, stop = _start_cluster(tmp)
    return Cluster(url, tmp / "data", find_pg_bin(), tmp / "sock" / "log", stop)


class Workers:
    """The worker processes: started, SIGKILLed and replaced."""

    def __init__(self, url: str, log: Path, count: int, concurrency: int, out: Path) -> None:
        self.env = {**os.environ, "FLOWCORE_DATABASE_URL": url, "FLOWCORE_FAULT_LOG": str(log)}
        self.env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
        )
        self.concurrency = concurrency
        self.out = out
        self.procs: list[subprocess.Popen[bytes]] = []
        self.kills: list[tuple[int, float]] = []
        self.started = 0
        for _ in range(count):
            self.procs.append(self._start())

    def _start(self) -> subprocess.Popen[bytes]:
        self.started += 1
        cmd = [sys.executable, "-m", "flowcore", "worker", "--graphs"]
        cmd += ["bench.queue_fault_graph:build", "--concurrency", str(self.concurrency)]
        # A worker starved of CPU for longer than --stalled-after would look dead and have
        # its runs re-queued while alive: keep a margin for a busy 2-core machine.
        cmd += ["--heartbeat", "1", "--stalled-after", "6", "--lease-ttl", "4"]
        cmd += ["--name", f"fault-worker-{self.started}"]
        with open(self.out, "ab") as sink:
            return subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=sink, stderr=sink)

    def kill_one(self, prefer: set[int]) -> int:
        live = [p for p in self.procs if p.poll() is None]
        chosen = [p for p in live if p.pid in prefer] or live
        victim = random.choice(chosen)
        victim.kill()
        self.kills.append((victim.pid, time.time()))
        victim.wait()
        self.procs[self.procs.index(victim)] = self._start()
        return victim.pid

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def retrying(what: str, call: Any, *, limit: float = 60.0) -> Any:
    """``await call()``, retried while Postgres restarts (a submitter's own duty)."""
    deadline = time.monotonic() + limit
    while True:
        try:
            return await call()
        except Exception as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} kept failing: {exc}") from exc
            await asyncio.sleep(0.2)


async def statuses(url: str) -> dict[str, tuple[str, Any]]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute("SELECT run_id, status, outcome FROM flowcore_queue_runs")
        return {r[0]: (r[1], r[2]) for r in await cur.fetchall()}


def prepare(args: argparse.Namespace) -> tuple[Path, Cluster, Path]:
    """A temp dir, the cluster, and the executions log every worker may append to."""
    tmp = Path(tempfile.mkdtemp(prefix="flowcore-faults-"))
    if os.geteuid() == 0:
        tmp.chmod(0o755)
    cluster = Cluster(args.url) if args.url else start_cluster(tmp)
    log = tmp / "executions.jsonl"
    log.touch()
    log.chmod(0o666)
    return tmp, cluster, log


async def main(args: argparse.Namespace) -> int:
    tmp, cluster, log = await asyncio.to_thread(prepare, args)
    began = time.time()
    workers = Workers(cluster.url, log, args.workers, args.concurrency, tmp / "workers.log")
    restarts: list[tuple[float, float]] = []
    inputs: dict[str, int] = {}
    threads: dict[str, str] = {}
    followers: list[asyncio.Future[str | None]] = []
    streams: list[str | None] = []
    try:
        async with QueueExecutor(cluster.url) as executor:
            batches = max(args.kills, args.restarts * 4, 1)
            per_batch = -(-args.runs // batches)
            restart_at = {
                int(batches * (i + 1) / (args.restarts + 1)) for i in range(args.restarts)
            }
            submitted = 0
            tick = 0
            while submitted < args.runs or len(workers.kills) < args.kills:
                for _ in range(min(per_batch, args.runs - submitted)):
                    x = random.randint(0, 1000)
                    thread = f"fault-thread-{uuid.uuid4().hex[:10]}"
                    request = RunRequest(
                        NAME,
                        {"x": x, "run": thread},  # the nodes log executions under the thread
                        Caller(f"fault-{submitted}", f"fault-{submitted}"),
                        RunOptions(thread_id=thread),
                    )
                    run_id = await retrying("queueing a run", lambda r=request: executor.enqueue(r))
                    inputs[run_id] = x
                    threads[thread] = run_id
                    submitted += 1
                    if len(followers) < args.follow:
                        followers.append(asyncio.ensure_future(follow(executor, run_id)))
                await asyncio.sleep(args.kill_every * random.uniform(0.6, 1.4))
                if len(workers.kills) < args.kills:
                    recent = {e["pid"] for e in read_log(log)[-12:]}
                    workers.kill_one(recent)
                if tick in restart_at and len(restarts) < args.restarts:
                    start = time.time()
                    cluster.restart()
                    restarts.append((start, time.time()))
                tick += 1
            while len(restarts) < args.restarts:  # few batches: restart once more each
                start = time.time()
                cluster.restart()
                restarts.append((start, time.time()))
                await asyncio.sleep(1.0)
            deadline = time.monotonic() + args.timeout
            async with asyncio.timeout(args.timeout):
                streams = list(await asyncio.gather(*followers))
            while True:
                rows = await retrying("reading the runs", lambda: statuses(cluster.url))
                pending = [
                    r for r in inputs if rows.get(r, ("queued",))[0] in ("queued", "running")
                ]
                if not pending or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.5)
    finally:
        workers.stop()
    wall = time.time() - began
    executions = [dict(e, run=threads.get(e["run"], e["run"])) for e in read_log(log)]
    broken = [problem for problem in streams if problem is not None]
    for problem in broken:
        print(f"broken stream: {problem}")
    whole = len(streams) - len(broken)
    print(f"streams followed live through the faults: {len(streams)}, whole: {whole}")
    code = report(args, inputs, rows, executions, workers.kills, restarts, wall, cluster, tmp)
    return code or (1 if broken else 0)


async def follow(executor: QueueExecutor, run_id: str) -> str | None:
    """Follow one run live (LISTEN/NOTIFY, replay); None if its stream was whole, else why not."""
    handle = executor.attach(run_id)
    events = [event async for event in handle]
    outcome = await handle.final
    types = [e.type for e in events]
    if [e.seq for e in events] != list(range(len(events))):
        return f"run {run_id}: seq {[e.seq for e in events]}"
    if types.count("run_start") != 1 or types.count("done") != 1 or types[-1] != "done":
        return f"run {run_id}: events {types}"
    if outcome.status != "completed" or getattr(events[-1], "status", None) != "completed":
        return f"run {run_id}: ended {outcome.status} ({outcome.error})"
    return None


def report(
    args: argparse.Namespace,
    inputs: dict[str, int],
    rows: dict[str, tuple[str, Any]],
    executions: list[dict[str, Any]],
    kills: list[tuple[int, float]],
    restarts: list[tuple[float, float]],
    wall: float,
    cluster: Cluster,
    tmp: Path,
) -> int:
    completed = wrong_status = lost = 0
    for run_id, x in inputs.items():
        status, outcome = rows.get(run_id, ("missing", None))
        if status != "completed":
            wrong_status += 1
            print(f"run {run_id}: {status} {(outcome or {}).get('error')}")
            lost += len(NODES)
            continue
        completed += 1
        output = (outcome or {}).get("output") or {}
        want = expected(x)
        lost += sum(1 for node in NODES if output.get(node) != want[node])
    by_node: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for e in executions:
        by_node[(e["run"], e["node"])].append(e)
    extra = explained = 0
    for (run, node), runs in by_node.items():
        runs.sort(key=lambda e: e["t"])
        for first, later in itertools.pairwise(runs):
            extra += 1
            killed = any(p == first["pid"] and first["t"] <= t <= later["t"] for p, t in kills)
            restarted = any(first["t"] <= s <= later["t"] for s, _ in restarts)
            if killed or restarted:
                explained += 1
            else:
                print(f"unexplained re-execution: run {run} node {node}: {first} then {later}")
    missing_runs = {r for r in inputs if not any(k[0] == r for k in by_node)}
    unexplained = extra - explained
    print(
        "| runs | completed | worker kills | Postgres restarts | lost results "
        "| node executions | re-executions (explained / unexplained) | wall time |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| {len(inputs)} | {completed} | {len(kills)} | {len(restarts)} | {lost} "
        f"| {len(executions)} | {extra} ({explained} / {unexplained}) | {wall:.1f} s |"
    )
    ok = (
        completed == len(inputs) == args.runs
        and lost == 0
        and unexplained == 0
        and not missing_runs
        and len(kills) >= args.kills
        and len(restarts) >= args.restarts
    )
    if cluster.stop:
        subprocess.run(cluster.stop, capture_output=True, timeout=60, cwd=tmp)
    if ok:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"FAILED; worker logs and executions kept in {tmp}")
    return 0 if ok else 1


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4, help="runs per worker at once")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--kill-every", type=float, default=1.5, help="seconds between kills")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds to wait at the end")
    parser.add_argument("--url", help="use this Postgres instead of a throwaway cluster")
    parser.add_argument(
        "--follow", type=int, default=10, help="runs whose event streams are followed live"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    # The submitter's pool reports each connection a Postgres restart broke: expected here.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    sys.exit(asyncio.run(main(parse())))
