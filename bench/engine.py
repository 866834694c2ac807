"""Engine overhead benchmark: what flowcore itself costs per node, with trivial node bodies.

Run from the repository root::

    python bench/engine.py                      # full run, about 30 s on 2 cores
    python bench/engine.py --quick              # fewer rounds
    python bench/engine.py --smoke              # every workload once, small sizes (~1 s)
    python bench/engine.py --json bench/results/engine.json
    python bench/engine.py --profile fanout-1000 --profile-mode dataflow

Every workload runs in both scheduling modes (``supersteps`` and ``dataflow``)
through the public API only (``Graph``, ``START``, ``END``, reducers). Node
bodies do nothing, so the figures are the engine's own overhead. Each figure
is timed with ``time.perf_counter`` over a warm-up run plus several rounds;
the number of rounds adapts to how long one run takes. The median and the
minimum are reported; per-node overhead is wall time / node executions.

This is a benchmark, not a test: nothing here asserts a time. It does check
that every run completed and computed what it should, so the figures always
measure real work. See bench/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import gc
import json
import operator
import os
import platform
import pstats
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypedDict

import flowcore
from flowcore import END, START, CompiledGraph, Graph, RunResult, append

US = "\N{MICRO SIGN}s"
MODES: tuple[str, ...] = ("supersteps", "dataflow")
LONG_CHAIN = 1_000  # chains longer than this are timed last
TABLE_HEADER = "| workload | mode | node runs | rounds | median ms | min ms | {us}/node median |"


# ------------------------------------------------------------------ settings
@dataclass(frozen=True)
class Settings:
    """Sizes and round policy of one benchmark invocation."""

    label: str
    chain_sizes: tuple[int, ...] = (100, 1_000, 10_000)
    fanout: int = 1_000
    loop: int = 200
    sleepers: int = 100
    sleep_s: float = 0.050
    compile_sizes: tuple[int, ...] = (100, 1_000, 10_000)
    taskgroup: int = 1_000
    # Rounds: enough to fill `budget` seconds, within [min_rounds, max_rounds],
    # but never more than `cap` seconds; 0 rounds means the warm-up run is the sample.
    budget: float = 0.6
    cap: float = 2.5
    min_rounds: int = 7
    max_rounds: int = 20


FULL = Settings("full")
QUICK = Settings("quick", budget=0.15, cap=0.6, min_rounds=3, max_rounds=5)
SMOKE = Settings(
    "smoke",
    chain_sizes=(10, 100),
    fanout=50,
    loop=20,
    sleepers=10,
    sleep_s=0.010,
    compile_sizes=(100,),
    taskgroup=50,
    budget=0.0,
    cap=0.0,
    min_rounds=0,
    max_rounds=0,
)


# ----------------------------------------------------------------- workloads
class ChainState(TypedDict):
    x: int


class FanState(TypedDict):
    total: Annotated[int, operator.add]
    items: Annotated[list[int], append]


class LoopState(TypedDict):
    i: int


async def _noop(state: Any) -> None:
    return None


async def _add_one(state: Any) -> dict[str, Any]:
    return {"total": 1}


async def _append_one(state: Any) -> dict[str, Any]:
    return {"items": [1]}


FAN_BODIES: dict[str, Callable[[Any], Awaitable[Any]]] = {
    "none": _noop,
    "add": _add_one,
    "append": _append_one,
}


def chain_graph(size: int) -> Graph:
    """START -> n0 -> n1 -> ... -> n{size-1} -> END, every body a no-op."""
    g = Graph(ChainState, name=f"chain-{size}")
    for i in range(size):
        g.add_node(f"n{i}", _noop)
    g.add_edge(START, "n0")
    for i in range(size - 1):
        g.add_edge(f"n{i}", f"n{i + 1}")
    g.add_edge(f"n{size - 1}", END)
    return g


def fanout_graph(width: int, writes: str) -> Graph:
    """START -> src -> w0..w{width-1} (parallel) -> sink -> END.

    ``writes`` picks the workers' body: ``none`` returns None, ``add`` writes
    1 to an ``operator.add`` key, ``append`` writes [1] to an ``append`` key.
    """
    g = Graph(FanState, name=f"fanout-{width}-{writes}")
    g.add_node("src", _noop)
    body = FAN_BODIES[writes]
    for i in range(width):
        g.add_node(f"w{i}", body)
    g.add_node("sink", _noop)
    g.add_edge(START, "src")
    for i in range(width):
        g.add_edge("src", f"w{i}")
        g.add_edge(f"w{i}", "sink")
    g.add_edge("sink", END)
    return g


def loop_graph(iterations: int) -> Graph:
    """One node that increments a counter, looping back through a router until it hits N."""

    async def step(state: Any) -> dict[str, Any]:
        return {"i": state["i"] + 1}

    def route(state: Any) -> str:
        return "done" if state["i"] >= iterations else "again"

    g = Graph(LoopState, name=f"loop-{iterations}")
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", route, {"again": "step", "done": END})
    return g


def sleep_graph(width: int, seconds: float) -> Graph:
    """START -> s0..s{width-1} (one superstep), each awaiting asyncio.sleep(seconds)."""

    async def nap(state: Any) -> None:
        await asyncio.sleep(seconds)

    g = Graph(ChainState, name=f"sleep-{width}")
    for i in range(width):
        g.add_node(f"s{i}", nap)
        g.add_edge(START, f"s{i}")
        g.add_edge(f"s{i}", END)
    return g


# ------------------------------------------------------------------- timing
@dataclass
class Timing:
    """Wall times of one workload; ``rounds == 0`` means only the warm-up run was timed."""

    times: list[float]
    rounds: int

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def best(self) -> float:
        return min(self.times)


def _rounds_for(first: float, s: Settings) -> int:
    if s.max_rounds == 0:
        return 0
    if first <= 0:
        return s.max_rounds
    n = min(max(int(s.budget / first), s.min_rounds), s.max_rounds)
    return max(0, min(n, int(s.cap / first)))


async def time_async(
    run: Callable[[], Awaitable[object]], s: Settings, first: float | None = None
) -> Timing:
    """Warm up once (unless ``first`` says how long a warm-up already took), then time rounds."""
    if first is None:
        gc.collect()
        t0 = time.perf_counter()
        await run()
        first = time.perf_counter() - t0
    rounds = _rounds_for(first, s)
    if rounds == 0:
        return Timing([first], 0)
    times = []
    for _ in range(rounds):
        gc.collect()
        t0 = time.perf_counter()
        await run()
        times.append(time.perf_counter() - t0)
    return Timing(times, rounds)


def time_sync(run: Callable[[], object], s: Settings) -> Timing:
    """Synchronous twin of :func:`time_async` (for compile times)."""
    gc.collect()
    t0 = time.perf_counter()
    run()
    first = time.perf_counter() - t0
    rounds = _rounds_for(first, s)
    if rounds == 0:
        return Timing([first], 0)
    times = []
    for _ in range(rounds):
        gc.collect()
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return Timing(times, rounds)


# ------------------------------------------------------------------ records
@dataclass
class Row:
    """One timed workload in one mode."""

    workload: str
    mode: str
    node_runs: int
    rounds: int
    median_ms: float
    min_ms: float
    us_per_node_median: float
    us_per_node_min: float
    times_ms: list[float] = field(repr=False)

    @classmethod
    def of(cls, workload: str, mode: str, node_runs: int, t: Timing) -> Row:
        return cls(
            workload=workload,
            mode=mode,
            node_runs=node_runs,
            rounds=t.rounds,
            median_ms=t.median * 1e3,
            min_ms=t.best * 1e3,
            us_per_node_median=t.median / node_runs * 1e6,
            us_per_node_min=t.best / node_runs * 1e6,
            times_ms=[x * 1e3 for x in t.times],
        )


@dataclass
class Report:
    settings: Settings
    overhead: list[Row] = field(default_factory=list)
    sleep: list[dict[str, Any]] = field(default_factory=list)
    compile: list[dict[str, Any]] = field(default_factory=list)
    memory: list[dict[str, Any]] = field(default_factory=list)
    ratios: list[dict[str, Any]] = field(default_factory=list)


def _completed_runs(result: RunResult) -> int:
    return sum(1 for r in result.node_runs if r.status == "completed")


def _check(result: RunResult, what: str, expected_runs: int) -> None:
    # Not a timing assert: a run that failed or did less work would make the figure a lie.
    if result.status != "completed":
        raise SystemExit(f"{what}: run ended {result.status}: {result.errors!r}")
    got = _completed_runs(result)
    if got != expected_runs:
        raise SystemExit(f"{what}: expected {expected_runs} node runs, got {got}")


async def _run_graph(compiled: CompiledGraph, mode: str, inp: dict[str, Any]) -> RunResult:
    return await compiled.run(inp, mode=mode)  # type: ignore[arg-type]


async def bench_graph(
    report: Report,
    name: str,
    compiled: CompiledGraph,
    expected_runs: int,
    inp: dict[str, Any] | None = None,
    verify: Callable[[RunResult], bool] | None = None,
) -> dict[str, Row]:
    """Time ``compiled`` in both modes; check once that it did the expected work."""
    inp = inp or {}
    rows: dict[str, Row] = {}
    for mode in MODES:
        # The checked run doubles as the warm-up.
        gc.collect()
        t0 = time.perf_counter()
        result = await _run_graph(compiled, mode, inp)
        first = time.perf_counter() - t0
        _check(result, f"{name} [{mode}]", expected_runs)
        if verify is not None and not verify(result):
            raise SystemExit(f"{name} [{mode}]: wrong final state {dict(result.state)!r}")
        t = await time_async(
            functools.partial(_run_graph, compiled, mode, inp), report.settings, first
        )
        row = Row.of(name, mode, expected_runs, t)
        report.overhead.append(row)
        rows[mode] = row
        _progress(f"{name} [{mode}] {row.us_per_node_median:.1f} {US}/node")
    return rows


async def _trivial_task() -> None:
    return None


async def taskgroup_trivial(n: int) -> None:
    async with asyncio.TaskGroup() as tg:
        for _ in range(n):
            tg.create_task(_trivial_task())


async def taskgroup_sleep(n: int, seconds: float) -> None:
    async with asyncio.TaskGroup() as tg:
        for _ in range(n):
            tg.create_task(asyncio.sleep(seconds))


async def peak_memory(run: Callable[[], Awaitable[object]]) -> int:
    """Peak bytes allocated (and still held at the peak) during one run."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        await run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def _progress(msg: str) -> None:
    print(f"  .. {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ the run
async def run_all(s: Settings) -> Report:
    report = Report(s)

    # Chains of increasing length: per-node overhead should stay flat. Long
    # chains run last so that their garbage does not disturb the other figures.
    chain_rows: dict[int, dict[str, Row]] = {}

    async def chains(sizes: Sequence[int]) -> None:
        for size in sizes:
            compiled = chain_graph(size).compile()
            chain_rows[size] = await bench_graph(report, f"chain-{size}", compiled, size)

    await chains([n for n in s.chain_sizes if n <= LONG_CHAIN])

    # 1 -> N -> 1 fan-out/fan-in, without and with reducer writes.
    width = s.fanout
    fan_runs = width + 2
    fan_compiled = {w: fanout_graph(width, w).compile() for w in FAN_BODIES}
    verifiers: dict[str, Callable[[RunResult], bool]] = {
        "none": lambda r: r.state["total"] == 0 and r.state["items"] == [],
        "add": lambda r: r.state["total"] == width,
        "append": lambda r: len(r.state["items"]) == width,
    }
    fan_rows: dict[str, dict[str, Row]] = {}
    for writes, compiled in fan_compiled.items():
        fan_rows[writes] = await bench_graph(
            report, _fan_label(width, writes), compiled, fan_runs, verify=verifiers[writes]
        )

    # The floor for the fan-out: a bare TaskGroup running N trivial tasks.
    tg = await time_async(lambda: taskgroup_trivial(s.taskgroup), s)
    tg_row = Row.of(f"TaskGroup x{s.taskgroup} (baseline)", "-", s.taskgroup, tg)
    report.overhead.append(tg_row)

    # A loop: one node, a router back edge, N passes.
    loop_compiled = loop_graph(s.loop).compile()
    await bench_graph(
        report,
        f"loop-{s.loop}",
        loop_compiled,
        s.loop,
        inp={"i": 0},
        verify=lambda r: r.state["i"] == s.loop,
    )

    # N nodes each sleeping in one superstep, against the sleep floor.
    sleep_compiled = sleep_graph(s.sleepers, s.sleep_s).compile()
    floor_ms = s.sleep_s * 1e3
    for mode in MODES:
        result = await _run_graph(sleep_compiled, mode, {})
        _check(result, f"sleep [{mode}]", s.sleepers)
        t = await time_async(functools.partial(_run_graph, sleep_compiled, mode, {}), s)
        report.sleep.append(_sleep_record(f"{s.sleepers} nodes x sleep", mode, t, floor_ms))
    t = await time_async(lambda: taskgroup_sleep(s.sleepers, s.sleep_s), s)
    report.sleep.append(
        _sleep_record(f"TaskGroup x{s.sleepers} sleep (baseline)", "-", t, floor_ms)
    )
    _progress("sleep workload")

    # Compile time of chains (build the Graph once, time compile() only).
    for size in s.compile_sizes:
        builder = chain_graph(size)
        t = time_sync(builder.compile, s)
        report.compile.append(
            {
                "workload": f"compile chain-{size}",
                "nodes": size,
                "rounds": t.rounds,
                "median_ms": t.median * 1e3,
                "min_ms": t.best * 1e3,
                "us_per_node_median": t.median / size * 1e6,
            }
        )
        _progress(f"compile chain-{size}")

    # Peak memory of one fan-out run (tracemalloc slows it; not timed).
    for writes in ("none", "add"):
        compiled = fan_compiled[writes]
        for mode in MODES:
            peak = await peak_memory(functools.partial(_run_graph, compiled, mode, {}))
            report.memory.append(
                {
                    "workload": _fan_label(width, writes),
                    "mode": mode,
                    "peak_kib": peak / 1024,
                    "bytes_per_node": peak / fan_runs,
                }
            )
    peak = await peak_memory(lambda: taskgroup_trivial(s.taskgroup))
    report.memory.append(
        {
            "workload": f"TaskGroup x{s.taskgroup} (baseline)",
            "mode": "-",
            "peak_kib": peak / 1024,
            "bytes_per_node": peak / s.taskgroup,
        }
    )
    _progress("peak memory")

    await chains([n for n in s.chain_sizes if n > LONG_CHAIN])
    chain_first = sorted(
        (r for r in report.overhead if r.workload.startswith("chain-")),
        key=lambda r: r.node_runs,
    )
    firsts = {id(r) for r in chain_first}
    report.overhead[:] = chain_first + [r for r in report.overhead if id(r) not in firsts]

    # Derived ratios.
    tg_us = tg_row.us_per_node_median
    for writes, rows in fan_rows.items():
        report.ratios.append(
            {
                "figure": f"{_fan_label(width, writes)} {US}/node / TaskGroup {US}/task",
                **{m: rows[m].us_per_node_median / tg_us for m in MODES},
            }
        )
    if len(s.chain_sizes) > 1:
        lo, hi = min(s.chain_sizes), max(s.chain_sizes)
        report.ratios.append(
            {
                "figure": f"chain flatness: {US}/node chain-{hi} / chain-{lo}",
                **{
                    m: chain_rows[hi][m].us_per_node_median / chain_rows[lo][m].us_per_node_median
                    for m in MODES
                },
            }
        )
    return report


def _fan_label(width: int, writes: str) -> str:
    return f"fanout-{width}" if writes == "none" else f"fanout-{width} ({writes})"


def _sleep_record(workload: str, mode: str, t: Timing, floor_ms: float) -> dict[str, Any]:
    return {
        "workload": workload,
        "mode": mode,
        "rounds": t.rounds,
        "floor_ms": floor_ms,
        "median_ms": t.median * 1e3,
        "min_ms": t.best * 1e3,
        "overhead_median_ms": t.median * 1e3 - floor_ms,
        "overhead_min_ms": t.best * 1e3 - floor_ms,
    }


# ------------------------------------------------------------------- output
def meta(s: Settings) -> dict[str, Any]:
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "flowcore": flowcore.__version__,
        "settings": s.label,
    }


def _rounds(n: int) -> str:
    return "1 (warm-up only)" if n == 0 else str(n)


def _md(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown(report: Report, info: dict[str, Any]) -> str:
    s = report.settings
    out = [
        "# flowcore engine benchmark",
        "",
        f"flowcore {info['flowcore']} · Python {info['python']} · {info['platform']} · "
        f"{info['cpu_count']} CPUs · {info['date']} · settings: {s.label}",
        "",
        "## Per-node overhead (trivial async node bodies)",
        "",
        TABLE_HEADER.format(us=US) + f" {US}/node min |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in report.overhead:
        out.append(
            _md(
                r.workload,
                r.mode,
                r.node_runs,
                _rounds(r.rounds),
                f"{r.median_ms:.2f}",
                f"{r.min_ms:.2f}",
                f"{r.us_per_node_median:.1f}",
                f"{r.us_per_node_min:.1f}",
            )
        )
    out += [
        "",
        f"Baseline row: {US} per task, not per node.",
        "",
        f"## {s.sleepers} nodes each awaiting a {s.sleep_s * 1e3:g} ms sleep, one superstep",
        "",
        _md(
            "workload",
            "mode",
            "rounds",
            "median ms",
            "min ms",
            "overhead vs floor, median ms",
            "overhead vs floor, min ms",
        ),
        "|---|---|--:|--:|--:|--:|--:|",
    ]
    for rec in report.sleep:
        out.append(
            _md(
                rec["workload"],
                rec["mode"],
                _rounds(rec["rounds"]),
                f"{rec['median_ms']:.2f}",
                f"{rec['min_ms']:.2f}",
                f"{rec['overhead_median_ms']:+.2f}",
                f"{rec['overhead_min_ms']:+.2f}",
            )
        )
    out += [
        "",
        "## Compile time (Graph already built; `compile()` only)",
        "",
        _md("workload", "rounds", "median ms", "min ms", f"{US}/node median"),
        "|---|--:|--:|--:|--:|",
    ]
    for rec in report.compile:
        out.append(
            _md(
                rec["workload"],
                _rounds(rec["rounds"]),
                f"{rec['median_ms']:.2f}",
                f"{rec['min_ms']:.2f}",
                f"{rec['us_per_node_median']:.1f}",
            )
        )
    out += [
        "",
        "## Peak memory of one fan-out run (tracemalloc)",
        "",
        _md("workload", "mode", "peak KiB", "bytes/node"),
        "|---|---|--:|--:|",
    ]
    for rec in report.memory:
        out.append(
            _md(
                rec["workload"],
                rec["mode"],
                f"{rec['peak_kib']:.0f}",
                f"{rec['bytes_per_node']:.0f}",
            )
        )
    out += ["", "## Ratios", "", _md("figure", *MODES), "|---|--:|--:|"]
    for rec in report.ratios:
        out.append(_md(rec["figure"], *(f"{rec[m]:.2f}" for m in MODES)))
    return "\n".join(out)


def to_json(report: Report, info: dict[str, Any]) -> dict[str, Any]:
    return {
        "meta": info,
        "settings": asdict(report.settings),
        "overhead": [asdict(r) for r in report.overhead],
        "sleep": report.sleep,
        "compile": report.compile,
        "memory": report.memory,
        "ratios": report.ratios,
    }


# ------------------------------------------------------------------ profile
PROFILE_TARGETS = ("chain-100", "fanout-1000", "fanout-1000-add", "loop-200")


async def profile(target: str, mode: str, runs: int, top: int, sort: str) -> None:
    """Run one workload ``runs`` times under cProfile and print the top functions."""
    inp: dict[str, Any] = {}
    if target == "chain-100":
        compiled = chain_graph(100).compile()
    elif target == "fanout-1000":
        compiled = fanout_graph(1_000, "none").compile()
    elif target == "fanout-1000-add":
        compiled = fanout_graph(1_000, "add").compile()
    else:
        compiled, inp = loop_graph(200).compile(), {"i": 0}
    await _run_graph(compiled, mode, inp)  # warm-up outside the profile
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(runs):
        await _run_graph(compiled, mode, inp)
    prof.disable()
    print(f"# cProfile: {target} [{mode}] x{runs}, sorted by {sort}, top {top}\n")
    stats = pstats.Stats(prof, stream=sys.stdout)
    stats.strip_dirs().sort_stats(sort).print_stats(top)


# --------------------------------------------------------------------- main
def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    speed = p.add_mutually_exclusive_group()
    speed.add_argument("--quick", action="store_true", help="full sizes, fewer rounds")
    speed.add_argument(
        "--smoke", action="store_true", help="every workload once, at small sizes (for tests)"
    )
    p.add_argument("--json", metavar="PATH", type=Path, help="also write the figures as JSON")
    p.add_argument(
        "--chain-sizes",
        type=_sizes,
        metavar="N,N,...",
        help="chain lengths to time (default 100,1000,10000)",
    )
    p.add_argument("--profile", choices=PROFILE_TARGETS, help="profile one workload instead")
    p.add_argument("--profile-mode", choices=MODES, default="supersteps")
    p.add_argument("--profile-runs", type=int, default=0, help="runs to profile (default: auto)")
    p.add_argument("--profile-top", type=int, default=25)
    p.add_argument("--profile-sort", default="tottime")
    args = p.parse_args(argv)

    if args.profile:
        runs = args.profile_runs or (200 if args.profile in ("chain-100", "loop-200") else 20)
        asyncio.run(
            profile(args.profile, args.profile_mode, runs, args.profile_top, args.profile_sort)
        )
        return 0

    s = SMOKE if args.smoke else QUICK if args.quick else FULL
    if args.chain_sizes:
        s = Settings(**{**asdict(s), "chain_sizes": args.chain_sizes})
    t0 = time.perf_counter()
    report = asyncio.run(run_all(s))
    info = meta(s)
    info["bench_seconds"] = round(time.perf_counter() - t0, 2)
    print(markdown(report, info))
    print(f"\n(benchmark took {info['bench_seconds']:.1f} s)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(to_json(report, info), indent=2) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
