"""How much of a per-step durable run is fsync: bench/compare.py's (k) and (l) under strace.

Run from the repository root on Linux with ``strace`` installed::

    python bench/fsync_share.py            # (k) and (l), every backend, 3 runs each
    python bench/fsync_share.py --only l --runs 5
    python bench/fsync_share.py --smoke    # tiny sizes, one run (the test suite runs this)

For each workload and backend a child process opens the workload's store
(exactly as bench/compare.py sets it up), runs it once to warm up, then
``--runs`` times, timed; ``strace -f -T`` logs its ``fsync`` and
``fdatasync`` calls made during the timed runs (setup and warm-up left out)
and their wall-clock time. The share is the time in those calls over the timed
runs' wall time. strace stops the process at the traced calls only
(``--seccomp-bpf``), so the rest of a run is not slowed.

This is a measurement, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare  # bench/ is not a package: found through sys.path

BACKENDS = ("langgraph", "compat", "native")
SYSCALLS = ("fsync", "fdatasync")
MARK = "getppid"  # a call nothing else in the run makes: marks the timed runs


async def _child(key: str, backend: str, runs: int, sizes: compare.Sizes) -> None:
    """Set up workload ``key`` on ``backend``, warm it up, time ``runs`` runs; print the ms."""
    work = {w.key: w for w in compare.WORKLOADS}[key]
    async with AsyncExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        if backend == "native":
            assert work.native is not None
            prepared = await work.native(sizes)(stack, tmp)
        else:
            ns = compare.langgraph_backend() if backend == "langgraph" else compare.compat_backend()
            prepared = await work.lg(ns, sizes)(stack, tmp)
        await prepared.run()
        os.getppid()
        started = time.perf_counter()
        for _ in range(runs):
            compare.EXECUTIONS.n = 0
            await prepared.run()
            if compare.EXECUTIONS.n != work.executions(sizes):
                raise SystemExit(f"({key}) {backend}: {compare.EXECUTIONS.n} node executions")
        elapsed = time.perf_counter() - started
        os.getppid()
        print(f"timed-ms {elapsed * 1000:.3f}")


def _traced(key: str, backend: str, runs: int, sizes: str) -> tuple[int, float, float]:
    """Calls, seconds in them, and timed ms of the timed runs of one child under strace.

    The child calls ``getppid`` right before and after its timed runs: only the
    calls between those two marks count (setup and warm-up are left out).
    """
    with tempfile.NamedTemporaryFile(suffix=".strace") as out:
        command = [
            "strace", "-f", "-T", "--seccomp-bpf",
            "-e", f"trace={','.join((*SYSCALLS, MARK))}", "-o", out.name,
            sys.executable, __file__, "--child", key, backend, str(runs), sizes,
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        timed = float(done.stdout.split("timed-ms")[-1])
        calls, seconds, marks = 0, 0.0, 0
        for line in Path(out.name).read_text().splitlines():
            # "<pid> fdatasync(5) = 0 <0.000412>"; a call another thread interrupted is
            # logged as "<unfinished ...>" then "<... fdatasync resumed>", with the time.
            if f"{MARK}()" in line:
                marks += 1
            elif marks == 1 and line.endswith(">") and "unfinished" not in line and _synced(line):
                calls += 1
                seconds += float(line.rsplit("<", 1)[1].rstrip(">"))
    return calls, seconds, timed


def _synced(line: str) -> bool:
    """Whether a finished call logged on ``line`` is one of :data:`SYSCALLS`."""
    return any(f"{name}(" in line or f"{name} resumed" in line for name in SYSCALLS)


def main(argv: list[str]) -> int:
    """Print one table row per workload and backend."""
    if argv[:1] == ["--child"]:
        sizes = compare.SMOKE if argv[4] == "smoke" else compare.FULL
        asyncio.run(_child(argv[1], argv[2], int(argv[3]), sizes))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="k,l", help="workloads, e.g. k,l")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per backend")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one timed run")
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs = 1
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {args.runs} timed runs each")
    print("| workload | backend | syncs per run | ms in them per run | ms per run | share |")
    print("|---|---|--:|--:|--:|--:|")
    for key in args.only.split(","):
        for backend in BACKENDS:
            calls, seconds, timed = _traced(
                key, backend, args.runs, "smoke" if args.smoke else "full"
            )
            per_run_ms = timed / args.runs
            sync_ms = seconds * 1000 / args.runs
            print(
                f"| ({key}) | {backend} | {calls / args.runs:.0f} | {sync_ms:.1f} | "
                f"{per_run_ms:.1f} | {100 * sync_ms / per_run_ms:.0f}% |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
