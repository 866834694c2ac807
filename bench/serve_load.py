"""Load on ``flowcore serve``: many concurrent streaming runs over HTTP on loopback.

Starts a real ``flowcore serve`` (a subprocess on a free loopback port, a
temporary database, an API key made with ``flowcore keys create``) serving
``bench/serve_load_graph.py``, then starts ``--runs`` runs (``POST
/api/runs``) with at most ``--concurrency`` going at once, each followed
over Server-Sent Events (``GET /api/runs/{id}/events``) by one shared
``httpx.AsyncClient``. The first ``--concurrency`` runs wait inside the
graph (``FLOWCORE_LOAD_HOLD``) until every one of their streams is open
and has its first event; then the bench starts a run of ``load_release``,
which lets them all go at once. So that many streams really are live
together (the bench reports the peak it saw), even on a client slower
than the server.

Each stream is checked against what the server stored for the run (the
same route read again once the run has ended replays the stored log):

* ``seq`` runs 0, 1, 2, ... with no gap, duplicate or reordering;
* events lost: stored events the live stream did not deliver, plus gaps;
* exactly one ``done``, and it is the last event;
* ``GET /api/runs/{id}`` says ``completed``, every node completed.

Prints a Markdown table (runs, concurrency reached, wall time, runs/s,
p50/p99 time from POST to first event, p50/p99 run time, events, events
lost, bad streams, server errors) and exits 1 if any event was lost, any
stream was bad or any request failed (5xx included), printing the tail
of the server's own log.

The per-key rate limit is raised with the server's documented
``--rate-limit`` option to the number of requests the bench sends (four
per run); nothing else about the server is changed.

Usage::

    python bench/serve_load.py                       # 200 runs, 200 at once
    python bench/serve_load.py --runs 400 --concurrency 100
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx

from flowcore.port.sse import parse_sse

__all__ = ["Load", "RunResult", "StreamCheck", "check_stream", "main", "report"]

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = "bench.serve_load_graph:build"
REQUESTS_PER_RUN = 4  # POST, the live stream, the stored replay, the run's record
STARTUP = 60.0  # seconds the server may take to answer /healthz
RELEASE_WAIT = 50.0  # seconds for every held stream to start (the graph lets go at 60)


@dataclass(frozen=True, slots=True)
class StreamCheck:
    """What one stream delivered, compared with the run's stored events.

    Example:
        >>> check_stream([(0, "run_start"), (1, "done")], [(0, "run_start"), (1, "done")]).ok
        True
    """

    received: int
    lost: int
    duplicates: int
    out_of_order: int
    mismatched: int
    dones: int
    done_last: bool
    unstored: int = 0  # events the live stream carried that the stored log lacks

    @property
    def one_done(self) -> bool:
        """Exactly one ``done`` and nothing after it."""
        return self.dones == 1 and self.done_last

    @property
    def ok(self) -> bool:
        """Nothing lost, repeated, reordered or different, and one final ``done``."""
        clean = not (
            self.lost or self.duplicates or self.out_of_order or self.mismatched or self.unstored
        )
        return clean and self.one_done


def check_stream(
    received: Sequence[tuple[int, str]], stored: Sequence[tuple[int, str]]
) -> StreamCheck:
    """Compare a live stream's ``(seq, type)`` pairs with the run's stored ones.

    Lost events are the sequence numbers the live stream should have carried
    (every stored one, and every number up to the highest it did carry) but
    did not: a gap counts even when the store lost the event too. Unstored
    ones are those it carried that the stored log lacks (a later reader,
    or the same route after the run, would miss them).

    Example:
        >>> stored = [(0, "run_start"), (1, "custom"), (2, "done")]
        >>> check_stream([(0, "run_start"), (2, "done")], stored).lost
        1
    """
    seqs = [seq for seq, _ in received]
    highest = max([*seqs, *(seq for seq, _ in stored), -1])
    lost = len(set(range(highest + 1)) - set(seqs))
    duplicates = len(seqs) - len(set(seqs))
    out_of_order = sum(1 for a, b in itertools.pairwise(seqs) if b <= a)
    kinds = dict(stored)
    mismatched = sum(1 for seq, kind in received if seq in kinds and kinds[seq] != kind)
    dones = sum(1 for _, kind in received if kind == "done")
    done_last = bool(received) and received[-1][1] == "done"
    unstored = len(set(seqs) - set(kinds))
    return StreamCheck(
        len(received), lost, duplicates, out_of_order, mismatched, dones, done_last, unstored
    )


@dataclass(slots=True)
class RunResult:
    """One run as the bench saw it."""

    index: int
    run_id: str | None = None
    first_event: float | None = None  # seconds from POST to the first event
    total: float | None = None  # seconds from POST to the end of the stream
    check: StreamCheck | None = None
    status: str | None = None
    failures: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Load:
    """Counters shared by the runs of one bench, and the moment the held runs may go."""

    held: int = 0  # how many runs the graph holds until released
    open_streams: int = 0
    peak: int = 0
    server_errors: int = 0
    settled: int = 0  # held runs whose stream has its first event (or that failed)
    all_streaming: asyncio.Event = field(default_factory=asyncio.Event)
    open_at_release: int = 0
    release_after: float = 0.0  # seconds from the start until the held runs were let go
    started: float = field(default_factory=time.perf_counter)

    def settle(self) -> None:
        self.settled += 1
        if self.settled >= self.held:
            self.all_streaming.set()

    def opened(self) -> None:
        self.open_streams += 1
        self.peak = max(self.peak, self.open_streams)

    def closed(self) -> None:
        self.open_streams -= 1


def _pairs(text: str) -> list[tuple[int, str]]:
    return [(event.seq, event.type) for event in parse_sse(text)]


async def _get(client: httpx.AsyncClient, load: Load, result: RunResult, url: str) -> str | None:
    response = await client.get(url)
    if response.status_code >= 500:
        load.server_errors += 1
    if response.status_code != 200:
        result.failures.append(f"GET {url}: {response.status_code} {response.text[:200]}")
        return None
    return response.text


async def one_run(client: httpx.AsyncClient, load: Load, index: int) -> RunResult:
    """Start run ``index``, follow its stream to the end, then check it against the store."""
    result = RunResult(index)
    began = time.perf_counter()
    held = index < load.held
    try:
        created = await client.post(
            "/api/runs", json={"target": {"graph": "load"}, "input": {"topic": f"run {index}"}}
        )
        if created.status_code >= 500:
            load.server_errors += 1
        if created.status_code != 201:
            result.failures.append(f"POST /api/runs: {created.status_code} {created.text[:200]}")
            return result
        run_id = str(created.json()["run_id"])
        result.run_id = run_id
        chunks: list[str] = []
        async with client.stream("GET", f"/api/runs/{run_id}/events") as response:
            if response.status_code >= 500:
                load.server_errors += 1
            if response.status_code != 200:
                await response.aread()
                result.failures.append(f"GET events: {response.status_code}")
                return result
            load.opened()
            try:
                async for chunk in response.aiter_text():
                    chunks.append(chunk)
                    if result.first_event is None and "data:" in chunk:
                        result.first_event = time.perf_counter() - began
                        if held:
                            held = False
                            load.settle()
            finally:
                load.closed()
        result.total = time.perf_counter() - began
        received = _pairs("".join(chunks))
        # The run has ended (its done was sent after it was recorded): this replays the store.
        replay = await _get(client, load, result, f"/api/runs/{run_id}/events")
        stored = _pairs(replay) if replay is not None else []
        result.check = check_stream(received, stored)
        detail = await _get(client, load, result, f"/api/runs/{run_id}")
        if detail is not None:
            record: dict[str, Any] = json.loads(detail)
            result.status = str(record.get("status"))
            undone = [
                n.get("id") for n in record.get("nodes", []) if n.get("status") != "completed"
            ]
            if result.status != "completed" or undone:
                result.failures.append(f"run {run_id} is {result.status}; nodes not done: {undone}")
    except httpx.HTTPError as exc:
        result.failures.append(f"{type(exc).__name__}: {exc}")
    finally:
        if held:  # it never got a first event: do not keep the others waiting for it
            load.settle()
    return result


async def release_held(client: httpx.AsyncClient, load: Load, limit: float) -> str | None:
    """Once every held run streams, start ``load_release``; a failure as text, else None."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(load.all_streaming.wait(), limit)
    load.open_at_release = load.open_streams
    load.release_after = time.perf_counter() - load.started
    response = await client.post("/api/runs", json={"target": {"graph": "load_release"}})
    if response.status_code >= 500:
        load.server_errors += 1
    if response.status_code != 201:
        return f"POST load_release: {response.status_code} {response.text[:200]}"
    if not load.all_streaming.is_set():
        return f"only {load.settled} of {load.held} held runs streamed within {limit:g} s"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "flowcore", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=STARTUP,
        check=True,
    )
    return done.stdout


def _percentile(values: Sequence[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[rank]


def report(
    results: Sequence[RunResult], load: Load, wall: float, concurrency: int
) -> dict[str, Any]:
    """The figures of one bench, as a dict (printed as a table by :func:`main`).

    Example:
        >>> report([], Load(), 1.0, 0)["runs"]
        0
    """
    firsts = [r.first_event * 1000 for r in results if r.first_event is not None]
    totals = [r.total * 1000 for r in results if r.total is not None]
    checks = [r.check for r in results if r.check is not None]
    completed = sum(1 for r in results if r.status == "completed")
    return {
        "runs": len(results),
        "completed": completed,
        "concurrency": concurrency,
        "peak_open_streams": load.peak,
        "open_at_release": load.open_at_release,
        "wall_s": round(wall, 3),
        "release_s": round(load.release_after, 3),
        "runs_per_s": round(completed / wall, 1) if wall > 0 else 0.0,
        "first_event_p50_ms": round(_percentile(firsts, 0.50), 1),
        "first_event_p99_ms": round(_percentile(firsts, 0.99), 1),
        "run_p50_ms": round(_percentile(totals, 0.50), 1),
        "run_p99_ms": round(_percentile(totals, 0.99), 1),
        "events": sum(c.received for c in checks),
        "events_lost": sum(c.lost for c in checks),
        "events_not_stored": sum(c.unstored for c in checks),
        "bad_streams": sum(1 for c in checks if not c.ok) + (len(results) - len(checks)),
        "streams_without_one_done": sum(1 for c in checks if not c.one_done)
        + (len(results) - len(checks)),
        "server_errors": load.server_errors,
        "failed_runs": sum(1 for r in results if r.failures),
        "median_events_per_stream": statistics.median([c.received for c in checks] or [0]),
    }


def _table(figures: dict[str, Any]) -> str:
    rows = [
        ("runs (completed)", f"{figures['runs']} ({figures['completed']})"),
        (
            "concurrent streams reached / asked (open at release)",
            f"{figures['peak_open_streams']} / {figures['concurrency']}"
            f" ({figures['open_at_release']})",
        ),
        (
            "wall time (s) (all held streams live after)",
            f"{figures['wall_s']} ({figures['release_s']})",
        ),
        ("runs/s", figures["runs_per_s"]),
        ("CPU s: server / bench client", f"{figures['server_cpu_s']} / {figures['client_cpu_s']}"),
        (
            "first event p50 / p99 (ms)",
            f"{figures['first_event_p50_ms']} / {figures['first_event_p99_ms']}",
        ),
        ("run p50 / p99 (ms)", f"{figures['run_p50_ms']} / {figures['run_p99_ms']}"),
        (
            "events (median per stream)",
            f"{figures['events']} ({figures['median_events_per_stream']})",
        ),
        ("events lost (live stream)", figures["events_lost"]),
        ("events missing from the stored log", figures["events_not_stored"]),
        ("streams without exactly one done", figures["streams_without_one_done"]),
        ("bad streams (lost, repeated, reordered, different)", figures["bad_streams"]),
        ("server errors (5xx)", figures["server_errors"]),
        ("runs with a failed request or check", figures["failed_runs"]),
    ]
    lines = ["| figure | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines)


async def _drive(
    base: str, key: str, runs: int, concurrency: int
) -> tuple[list[RunResult], Load, float]:
    load = Load(held=min(runs, concurrency))
    gate = asyncio.Semaphore(concurrency)
    # One connection per run in flight, plus room for the checks that follow a stream. Few
    # idle ones: httpcore 1.0.9's pool rescans every connection for each idle one on each
    # request (encode/httpcore#1035), which with 200 kept alive cost the client 4x the
    # server's CPU and halved the runs/s; new loopback connections are cheap.
    limits = httpx.Limits(max_connections=concurrency + 16, max_keepalive_connections=20)
    timeout = httpx.Timeout(120.0, connect=30.0, pool=120.0)
    async with httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {key}"}, limits=limits, timeout=timeout
    ) as client:

        async def gated(index: int) -> RunResult:
            async with gate:
                return await one_run(client, load, index)

        began = load.started = time.perf_counter()
        releasing = asyncio.ensure_future(release_held(client, load, RELEASE_WAIT))
        try:
            results = await asyncio.gather(*(gated(i) for i in range(runs)))
        finally:
            trouble = await releasing
        wall = time.perf_counter() - began
    if trouble is not None:
        results[0].failures.append(trouble)
    return list(results), load, wall


def _wait_healthy(proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("flowcore serve exited at start:\n" + log.read_text()[-4000:])
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"flowcore serve did not answer /healthz within {STARTUP:g} s")


def _cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of process ``pid`` so far (Linux ``/proc``; else None)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def run_bench(
    runs: int, concurrency: int, out: TextIO = sys.stdout
) -> tuple[dict[str, Any], list[RunResult]]:
    """Start a server, load it, stop it; the figures and each run's result.

    Example:
        >>> # figures, results = run_bench(20, 20)
    """
    with tempfile.TemporaryDirectory(prefix="flowcore-load-") as tmp:
        db = Path(tmp) / "flowcore.db"
        log = Path(tmp) / "serve.log"
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        env["FLOWCORE_LOAD_HOLD"] = str(min(runs, concurrency))
        created = json.loads(
            _cli(env, "keys", "create", "--user", "load", "--db", str(db), "--json")
        )
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        command = [
            sys.executable, "-m", "flowcore", "serve", "--db", str(db), "--port", str(port),
            "--graphs", GRAPHS, "--rate-limit", str(runs * REQUESTS_PER_RUN + 100),
        ]  # fmt: skip
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT
            )
            try:
                _wait_healthy(proc, base, log)
                server_before = _cpu_seconds(proc.pid)
                client_before = time.process_time()
                results, load, wall = asyncio.run(
                    _drive(base, str(created["key"]), runs, concurrency)
                )
                client_cpu = time.process_time() - client_before
                server_after = _cpu_seconds(proc.pid)
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        figures = report(results, load, wall, concurrency)
        # Which side was busy: the bench's client or the server (or neither: the machine was).
        figures["client_cpu_s"] = round(client_cpu, 2)
        figures["server_cpu_s"] = (
            None
            if server_before is None or server_after is None
            else round(server_after - server_before, 2)
        )
        figures["server_exit"] = proc.returncode
        figures["server_log_tail"] = _tail(log)
    return figures, results


def failed(figures: dict[str, Any]) -> bool:
    """Whether the figures break a promise: lost events, bad streams, 5xx or failed runs.

    Example:
        >>> failed({"events_lost": 0, "events_not_stored": 0, "bad_streams": 0,
        ...         "server_errors": 1, "failed_runs": 0})
        True
    """
    keys = ("events_lost", "events_not_stored", "bad_streams", "server_errors", "failed_runs")
    return any(figures[k] for k in keys)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bench, print the table; 1 when a check failed.

    Example:
        >>> # main(["--runs", "20", "--concurrency", "20"])
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="how many runs (default 200)")
    parser.add_argument(
        "--concurrency", type=int, default=200, help="runs streaming at once (default 200)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.concurrency < 1:
        parser.error("--runs and --concurrency must be at least 1")
    figures, results = run_bench(args.runs, args.concurrency)
    print(_table(figures))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2))
    if failed(figures):
        shown = [r for r in results if r.failures or (r.check is not None and not r.check.ok)]
        for result in shown[:10]:
            print(f"run {result.index} ({result.run_id}): {result.failures} {result.check}")
        print("--- flowcore serve log (tail) ---")
        print(figures["server_log_tail"])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
