"""How much of a per-step durable run (bench/compare.py's (k) and (l)) is spent in fsync.

Run from the repository root on Linux with ``strace`` installed::

    python bench/fsync_profile.py            # (k) and (l), every backend
    python bench/fsync_profile.py --only k   # one workload

For each workload and backend, one child process sets the workload up
exactly as bench/compare.py does, runs it once to warm up, then runs it once
more between two time marks; the child runs under ``strace -f -ttt -T -e
trace=fsync,fdatasync``, so every fsync of every thread (aiosqlite's
included) is logged with its start time and duration. Only the calls inside
the timed run count. The table gives the number of fsyncs per run, the time
spent inside them, and that time's share of the run's wall time.

This is a profile, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare  # bench/compare.py, next to this file

BACKENDS = ("langgraph", "compat", "native")
_MARK = "fsync-profile-window"
_CALL = re.compile(
    r"^(?:\[pid\s+\d+\]\s+|\d+\s+)?(\d+\.\d+)\s+(fsync|fdatasync)\(.*<(\d+\.\d+)>\s*$"
)


async def _child(key: str, backend: str) -> None:
    """Set up one workload on one backend, warm it up, and run it once between marks."""
    workload = next(w for w in compare.WORKLOADS if w.key == key)
    sizes = compare.FULL
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncExitStack() as stack:
            if backend == "native":
                assert workload.native is not None
                setup = workload.native(sizes)
            else:
                ns = (
                    compare.langgraph_backend()
                    if backend == "langgraph"
                    else compare.compat_backend()
                )
                setup = workload.lg(ns, sizes)
            prepared = await setup(stack, Path(tmp))
            await prepared.run()
            start = time.time()
            await prepared.run()
            end = time.time()
    print(f"{_MARK} {start:.6f} {end:.6f}", file=sys.stderr, flush=True)


def _profile(key: str, backend: str, strace: str) -> tuple[int, float, float]:
    """(fsyncs, seconds inside them, wall seconds) of one timed run, from strace's log."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "strace.log"
        cmd = [
            strace,
            "-f",
            "--seccomp-bpf",
            "-ttt",
            "-T",
            "-e",
            "trace=fsync,fdatasync",
            "-o",
            str(log),
        ]
        cmd += [sys.executable, __file__, "--child", key, backend]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        window = next(line for line in done.stderr.splitlines() if line.startswith(_MARK))
        start, end = (float(x) for x in window.split()[1:])
        count, inside = 0, 0.0
        for line in log.read_text().splitlines():
            found = _CALL.match(line)
            if found is None:
                continue
            at, _, took = found.groups()
            if start <= float(at) <= end:
                count += 1
                inside += float(took)
    return count, inside, end - start


def main(argv: list[str]) -> int:
    """Print the fsync profile of (k) and (l) (or the ``--only`` ones)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="k,l", help="workloads, e.g. k or k,l")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        asyncio.run(_child(*args.child))
        return 0
    strace = shutil.which("strace")
    if strace is None:
        print("strace is not installed: apt-get install strace", file=sys.stderr)
        return 1
    print("| workload | backend | fsyncs per run | ms in fsync | run ms | fsync share |")
    print("|---|---|--:|--:|--:|--:|")
    for key in args.only.split(","):
        title = next(w.title for w in compare.WORKLOADS if w.key == key)
        for backend in BACKENDS:
            count, inside, wall = _profile(key, backend, strace)
            print(
                f"| ({key}) {title} | {backend} | {count} | {inside * 1e3:.1f} "
                f"| {wall * 1e3:.1f} | {inside / wall:.0%} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
