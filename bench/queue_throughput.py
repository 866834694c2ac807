"""Throughput of the run queue: runs/s with 1, 2 and 4 ``flowcore worker`` processes.

On a throwaway Postgres cluster (``tests/pg.py``) unless ``--url`` names
one, for each worker count it starts that many ``flowcore worker``
processes (``--concurrency`` runs each) serving ``bench/queue_fault_graph.py``
with its nodes' sleeps off (``a -> (b, c) -> d``: 4 nodes, 3 supersteps,
every step checkpointed, every event stored and notified), waits until they
have registered, queues ``--runs`` runs at once (each on its own thread)
and waits for all of them. Each run is checked: completed, with the right
value from every node. Every worker count gets a fresh schema.

Prints a Markdown table (workers, runs, runs right, wall time, runs/s) and
exits 1 if any run did not complete right. The machine's cores are shared
by the workers, the submitter and Postgres: on 2 cores, more than 2 workers
mostly add contention; the table shows what that costs.

Run: ``python bench/queue_throughput.py`` (well under a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.queue_fault_graph import NAME, NODES, expected  # noqa: E402
from flowcore.port import Caller, RunOptions, RunRequest  # noqa: E402
from flowcore.queue import QueueExecutor  # noqa: E402


def start_cluster(tmp: Path) -> tuple[str, list[str]]:
    from tests.pg import _start_cluster

    if os.geteuid() == 0:
        tmp.chmod(0o755)
    return _start_cluster(tmp)


def schema_url(url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={name}')}"


def start_workers(
    url: str, count: int, concurrency: int, out: Path
) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "FLOWCORE_DATABASE_URL": url, "FLOWCORE_FAULT_SLEEP": "0"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    procs = []
    for i in range(count):
        cmd = [sys.executable, "-m", "flowcore", "worker", "--graphs"]
        cmd += ["bench.queue_fault_graph:build", "--concurrency", str(concurrency)]
        cmd += ["--name", f"throughput-{count}-{i}"]
        with open(out, "ab") as sink:
            procs.append(subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=sink, stderr=sink))
    return procs


def stop_workers(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


async def registered(url: str) -> int:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute("SELECT to_regclass('procrastinate_workers')")
        row = await cur.fetchone()
        if row is None or row[0] is None:
            return 0
        cur = await conn.execute("SELECT count(*) FROM procrastinate_workers")
        found = await cur.fetchone()
        return int(found[0]) if found else 0


async def active(url: str) -> int:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM flowcore_queue_runs WHERE status IN ('queued', 'running')"
        )
        row = await cur.fetchone()
        return int(row[0]) if row else 0


async def outcomes(url: str) -> dict[str, tuple[str, dict[str, object] | None]]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute("SELECT run_id, status, outcome FROM flowcore_queue_runs")
        return {r[0]: (r[1], r[2]) for r in await cur.fetchall()}


async def one(url: str, workers: int, args: argparse.Namespace, out: Path) -> tuple[int, float]:
    """Runs right and wall seconds for ``args.runs`` runs on ``workers`` worker processes."""
    async with QueueExecutor(url) as executor:  # installs the tables before the workers start
        procs = start_workers(url, workers, args.concurrency, out)
        try:
            async with asyncio.timeout(120):
                while await registered(url) < workers:  # noqa: ASYNC110 - other processes
                    await asyncio.sleep(0.2)
            inputs: dict[str, int] = {}
            began = time.perf_counter()
            requests = []
            for i in range(args.runs):
                x = random.randint(0, 1000)
                thread = f"tp-{uuid.uuid4().hex[:10]}"
                requests.append(
                    (
                        x,
                        RunRequest(
                            NAME,
                            {"x": x, "run": thread},
                            Caller(f"tp{i}", f"tp{i}"),
                            RunOptions(thread),
                        ),
                    )
                )

            # Queued from a few tasks at once, as several clients would.
            async def submit(chunk: list[tuple[int, RunRequest]]) -> None:
                for x, request in chunk:
                    inputs[await executor.enqueue(request)] = x

            await asyncio.gather(*(submit(requests[i::4]) for i in range(4)))
            async with asyncio.timeout(args.timeout):
                while await active(url):  # noqa: ASYNC110 - other processes finish them
                    await asyncio.sleep(0.05)
            wall = time.perf_counter() - began
            rows = await outcomes(url)
        finally:
            stop_workers(procs)
    right = 0
    for run_id, x in inputs.items():
        status, outcome = rows[run_id]
        output = (outcome or {}).get("output") or {}
        if (
            status == "completed"
            and all(
                output.get(n) == v
                for n, v in expected(x).items()  # type: ignore[union-attr]
            )
            and set(NODES) <= set(output)
        ):  # type: ignore[arg-type]
            right += 1
    return right, wall


async def main(args: argparse.Namespace) -> int:
    tmp = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="flowcore-throughput-"))
    url, stop = (args.url, []) if args.url else await asyncio.to_thread(start_cluster, tmp)
    rows = []
    try:
        for workers in args.workers:
            name = f"tp_{workers}_{uuid.uuid4().hex[:8]}"
            scoped = await asyncio.to_thread(schema_url, url, name)
            right, wall = await one(scoped, workers, args, tmp / "workers.log")
            rows.append((workers, right, wall))
    finally:
        if stop:
            await asyncio.to_thread(subprocess.run, stop, capture_output=True, timeout=60, cwd=tmp)
    print("| worker processes | runs | runs right | wall time | runs/s |")
    print("|---|---|---|---|---|")
    for workers, right, wall in rows:
        print(f"| {workers} | {args.runs} | {right} | {wall:.2f} s | {args.runs / wall:.1f} |")
    ok = all(right == args.runs for _, right, _ in rows)
    if ok:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"FAILED: some runs did not complete right; worker logs in {tmp}")
    return 0 if ok else 1


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="runs per worker count")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--concurrency", type=int, default=4, help="runs per worker at once")
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--url", help="use this Postgres instead of a throwaway cluster")
    return parser.parse_args(argv)


if __name__ == "__main__":
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    sys.exit(asyncio.run(main(parse())))
