"""Run LangGraph's own test suite on LangGraph and on flowcore.compat.langgraph, and compare.

Run from the repository root, in the project's venv (it has ``langgraph==1.2.22``
and flowcore)::

    python bench/langgraph_suite/run.py                       # both runs, ~6 min on 2 cores
    python bench/langgraph_suite/run.py --only test_state.py  # one upstream file
    python bench/langgraph_suite/run.py --only interrupt      # a pytest -k expression
    python bench/langgraph_suite/run.py --floor 500           # exit 1 under 500 passes

What it does:

1. fetches the ``langgraph==1.2.22`` sdist from PyPI into ``.cache/langgraph-suite/``
   (``pip download``, once) and copies its ``tests/`` folder out;
2. makes ``.cache/langgraph-suite/venv``, a venv that sees the project's venv and adds
   what the suite imports beyond it (``requirements.txt``: pytest-mock, syrupy,
   pytest-timeout, pytest-xdist, the Postgres/Redis clients);
3. runs ``tests/`` twice, each in its own pytest process with ``plugin.py``: on real
   LangGraph (which tests pass there), then with LangGraph's imports redirected to
   flowcore (``redirect.py``, ``table.py``);
4. counts a test as passing on flowcore when it passed on LangGraph, passed here,
   started at least one flowcore run, and loaded none of LangGraph's runtime
   modules; sorts every other one by cause (``classify.py``); prints a summary and
   writes ``bench/results/langgraph-suite.json``.

External services are off in both runs the same way: ``NO_DOCKER=true`` drops the
Postgres and Redis parametrizations of the suite's fixtures and skips the modules
that need a LangGraph server; the summary says how many tests that leaves out.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time
from pathlib import Path
from typing import Any

# Run as a script, this file's folder is on sys.path, not the package's parent.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_suite.doc import write_doc
from langgraph_suite.table import is_internal

__all__ = ["LANGGRAPH_VERSION", "main", "summarize"]

LANGGRAPH_VERSION = "1.2.22"

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CACHE = ROOT / ".cache" / "langgraph-suite"
DEFAULT_JSON = ROOT / "bench" / "results" / "langgraph-suite.json"
REQUIREMENTS = HERE / "requirements.txt"

# pytest.ini of the copied suite: upstream's addopts ask for --snapshot-warn-unused and
# --full-trace; neither changes an outcome, and full traces would only slow the report.
PYTEST_INI = "[pytest]\naddopts =\n"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def fetch_sdist(cache: Path) -> Path:
    """The sdist's path in the cache, downloaded with pip when it is not there yet."""
    sdist = cache / f"langgraph-{LANGGRAPH_VERSION}.tar.gz"
    if sdist.exists():
        return sdist
    cache.mkdir(parents=True, exist_ok=True)
    log(f"fetching langgraph=={LANGGRAPH_VERSION} sdist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"langgraph=={LANGGRAPH_VERSION}",
            "-d",
            str(cache),
        ],
        check=True,
    )
    return sdist


def prepare_suite(cache: Path, sdist: Path) -> Path:
    """The sdist's ``tests/`` copied out once (nothing else of it: its ``langgraph/``
    source must not shadow the installed package), with a pytest.ini of its own."""
    suite = cache / f"suite-{LANGGRAPH_VERSION}"
    done = suite / ".complete"
    if done.exists():
        return suite
    if suite.exists():
        shutil.rmtree(suite)
    suite.mkdir(parents=True)
    prefix = f"langgraph-{LANGGRAPH_VERSION}/tests/"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
        for member in members:
            member.name = member.name[len(f"langgraph-{LANGGRAPH_VERSION}/") :]
        tar.extractall(suite, members=members, filter="data")
    (suite / "pytest.ini").write_text(PYTEST_INI)
    done.write_text(sdist.name)
    return suite


def ensure_venv(cache: Path) -> Path:
    """The suite's venv: the project's packages plus ``requirements.txt``; returns its python."""
    venv = cache / "venv"
    python = venv / "bin" / "python"
    stamp = venv / "requirements.sha256"
    wanted = hashlib.sha256(REQUIREMENTS.read_bytes() + sys.executable.encode()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    log("preparing the suite's venv")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    site_dir = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # addsitedir, not a bare path line: the project's own .pth files (flowcore's editable
    # install) must run too.
    project_site = sysconfig.get_paths()["purelib"]
    Path(site_dir, "_project_venv.pth").write_text(
        f"import site; site.addsitedir({project_site!r})\n"
    )
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "-r", str(REQUIREMENTS)],
        check=True,
    )
    stamp.write_text(wanted)
    return python


def check_versions() -> None:
    from importlib.metadata import version

    found = version("langgraph")
    if found != LANGGRAPH_VERSION:
        raise SystemExit(
            f"the suite is langgraph {LANGGRAPH_VERSION}'s; this venv has langgraph {found}"
        )


def selection(only: list[str]) -> list[str]:
    """pytest arguments for ``--only`` values: file names select files, the rest join a -k."""
    files = [o for o in only if o.endswith(".py") or "::" in o or "/" in o]
    words = [o for o in only if o not in files]
    args = [f if f.startswith("tests/") else f"tests/{f}" for f in files] or ["tests"]
    if words:
        args += ["-k", " or ".join(f"({w})" for w in words)]
    return args


def run_pytest(
    python: Path,
    suite: Path,
    mode: str,
    out: Path,
    args: list[str],
    *,
    jobs: int,
    timeout: float,
    run_timeout: float,
    tb: str = "line",
) -> dict[str, Any]:
    """One pytest process over the suite in ``mode``; returns wall time and pytest's last line."""
    out.unlink(missing_ok=True)
    env = dict(os.environ)
    env.update(
        NO_DOCKER="true",
        LANGGRAPH_SUITE_MODE=mode,
        LANGGRAPH_SUITE_OUT=str(out),
        PYTHONPATH=os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        ),
        PYTHONDONTWRITEBYTECODE="1",
    )
    cmd = [
        str(python),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        # Upstream runs its async tests with anyio's plugin; pytest-asyncio (flowcore's
        # test extra) would claim them too.
        "-p",
        "no:asyncio",
        "-p",
        "langgraph_suite.plugin",
        "--continue-on-collection-errors",
        "--timeout",
        str(timeout),
        # Under xdist a hung test's worker is ended and replaced (the test counts as
        # failed): a signal can be swallowed, and a test that loops on invoke() until
        # it sees no interrupt (test_interrupt_state.py, the exit-durability hang of
        # issue 18) then never ends. Without xdist that would end the whole run.
        "--timeout-method",
        "thread" if jobs > 0 else "signal",
        # Long tracebacks of ~2,000 failures cost the flowcore run three quarters of its
        # time; the records keep each failure's first error line either way.
        f"--tb={tb}",
        *(["-n", str(jobs)] if jobs > 0 else []),
        *args,
    ]
    log_path = out.with_suffix(".log")
    log(f"{mode} run: {' '.join(cmd[1:])}")
    start = time.monotonic()
    with log_path.open("w") as sink:
        proc = subprocess.Popen(cmd, cwd=suite, env=env, stdout=sink, stderr=subprocess.STDOUT)
        try:
            code = proc.wait(timeout=run_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
            log(f"{mode} run stopped after {run_timeout:.0f} s")
    wall = time.monotonic() - start
    lines = [line for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    log(f"{mode} run: {wall:.0f} s, {last}")
    return {
        "wall_s": round(wall, 1),
        "exit_code": code,
        "pytest_summary": last,
        "log": str(log_path),
    }


def load(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Test records by node id, collection errors by file, from a plugin's output."""
    tests: dict[str, dict[str, Any]] = {}
    collect: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return tests, collect
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "test":
            tests[record["nodeid"]] = record
        else:
            collect.setdefault(record["nodeid"], record)
    return tests, collect


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def status_on_flowcore(
    nodeid: str, tests: dict[str, dict[str, Any]], collect: dict[str, dict[str, Any]]
) -> tuple[str, str, str]:
    """``(status, first error line, LangGraph name)`` in the flowcore run, of a test that
    passed on LangGraph.

    ``status`` is ``passed`` or a cause: ``missing``, ``behaviour``, ``internals``,
    ``timeout``, ``environment``, ``no_flowcore_run`` (passed, but no function of
    flowcore's ran in it), ``langgraph_built`` (passed, but the real runtime loaded), ``skipped``,
    ``not_run``. A pass of a test whose code names a missing name is not counted.
    """
    record = tests.get(nodeid)
    if record is None:
        error = collect.get(_file_of(nodeid), {}).get("error")
        if error:
            return error["cause"], error["line"], error.get("name", "")
        return "not_run", "", ""
    if record["outcome"] == "passed":
        if record["built"]:
            return "langgraph_built", "loaded " + ", ".join(record["built"][:3]), ""
        named = record.get("named") or []
        if named:
            internal = [n for n in named if is_internal(n)]
            name = (internal or named)[0]
            return ("internals" if internal else "missing"), "passed, naming " + name, name
        if record["runs"] == 0 and not record.get("flowcore_ran"):
            return "no_flowcore_run", "", ""
        return "passed", "", ("graph run" if record["runs"] else "")
    if record["outcome"] in ("skipped", "xfailed"):
        return "skipped", record.get("skip", ""), ""
    error = record.get("error") or {}
    return error.get("cause", "behaviour"), error.get("line", ""), error.get("name", "")


def summarize(
    base_tests: dict[str, dict[str, Any]],
    flow_tests: dict[str, dict[str, Any]],
    flow_collect: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """The figures: totals, causes, failure clusters, and a per-file table.

    A cluster is the tests that lack one LangGraph name (causes ``missing`` and
    ``internals``), or else that failed with one first error line.

    Example:
        >>> base = {"t.py::a": {"outcome": "passed"}, "t.py::b": {"outcome": "passed"}}
        >>> flow = {"t.py::a": {"outcome": "passed", "runs": 1, "built": []}}
        >>> summarize(base, flow, {})["flowcore_passed"]
        1
    """
    baseline = sorted(n for n, r in base_tests.items() if r["outcome"] == "passed")
    statuses = {n: status_on_flowcore(n, flow_tests, flow_collect) for n in baseline}
    causes = collections.Counter(s for s, _, _ in statuses.values() if s != "passed")
    passed = sum(1 for s, _, _ in statuses.values() if s == "passed")
    with_run = sum(1 for s, _, n in statuses.values() if s == "passed" and n == "graph run")
    clusters: collections.Counter[tuple[str, str]] = collections.Counter()
    example: dict[tuple[str, str], str] = {}
    for status, line, name in statuses.values():
        if status == "passed" or not (line or name):
            continue
        key = (status, f"lacks {name}" if name and status in ("missing", "internals") else line)
        clusters[key] += 1
        example.setdefault(key, line)
    files: dict[str, collections.Counter[str]] = {}
    for nodeid, (status, _, _) in statuses.items():
        files.setdefault(_file_of(nodeid), collections.Counter())[status] += 1
    table = [
        {
            "file": name,
            "langgraph_passed": sum(counts.values()),
            "flowcore_passed": counts["passed"],
            **{k: v for k, v in sorted(counts.items()) if k != "passed"},
        }
        for name, counts in sorted(files.items())
    ]
    return {
        "langgraph_passed": len(baseline),
        "flowcore_passed": passed,
        "flowcore_passed_with_graph_run": with_run,
        "percent": round(100 * passed / len(baseline), 1) if baseline else 0.0,
        "causes": dict(causes.most_common()),
        "clusters": [
            {"count": n, "cause": cause, "key": key, "first_line": example[(cause, key)]}
            for (cause, key), n in clusters.most_common()
        ],
        "files": table,
        "tests": {n: list(s) for n, s in statuses.items()},
    }


def skipped_in(tests: dict[str, dict[str, Any]]) -> dict[str, int]:
    reasons = collections.Counter(
        r.get("skip") or "?" for r in tests.values() if r["outcome"] == "skipped"
    )
    return dict(reasons.most_common())


def count_collected(python: Path, suite: Path, args: list[str], *, no_docker: bool) -> int:
    """How many tests the suite collects, with or without its external services."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("NO_DOCKER", None)
    if no_docker:
        env["NO_DOCKER"] = "true"
    cmd = [str(python), "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider"]
    proc = subprocess.run(
        [*cmd, "-p", "no:asyncio", *args],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
    )
    return sum(1 for line in proc.stdout.splitlines() if "::" in line)


def print_summary(result: dict[str, Any]) -> None:
    s = result["summary"]
    runs = result["runs"]
    print(f"LangGraph {LANGGRAPH_VERSION}'s tests/ on flowcore.compat.langgraph")
    print(
        f"passing on LangGraph: {s['langgraph_passed']}   "
        f"of those passing on flowcore: {s['flowcore_passed']} ({s['percent']}%)"
    )
    print(
        f"of those, started a graph run: {s['flowcore_passed_with_graph_run']}; "
        "ran flowcore's channels, reducers, builders or stream parts directly: "
        f"{s['flowcore_passed'] - s['flowcore_passed_with_graph_run']}"
    )
    print("not passing, by cause: " + ", ".join(f"{k} {v}" for k, v in s["causes"].items()))
    services = result.get("services") or {}
    if services:
        print(
            f"left out for external services (Postgres, Redis, a LangGraph server): "
            f"{services.get('dropped_by_no_docker', '?')} parametrizations not collected, "
            f"{sum(services.get('skipped_on_langgraph', {}).values())} skipped"
        )
    print(
        f"wall time: LangGraph run {runs['langgraph']['wall_s']} s, "
        f"flowcore run {runs['flowcore']['wall_s']} s"
    )
    slowest = runs["flowcore"].get("slowest") or []
    if slowest:
        print("slowest on flowcore: " + ", ".join(f"{n} {d:.1f} s" for n, d in slowest[:3]))
    print("\nlargest failure clusters (tests, cause, first error line):")
    for c in s["clusters"][:10]:
        shown = c["key"] if c["key"] == c["first_line"] else f"{c['key']}  (e.g. {c['first_line']})"
        print(f"  {c['count']:5d}  {c['cause']:<10} {shown}")
    print(f"\n| file | LangGraph | flowcore | {' | '.join(CAUSE_COLUMNS)} |")
    print("|---|---:|---:|" + "---:|" * len(CAUSE_COLUMNS))
    for row in s["files"]:
        cells = " | ".join(str(row.get(c, "")) for c in CAUSE_COLUMNS)
        print(f"| {row['file']} | {row['langgraph_passed']} | {row['flowcore_passed']} | {cells} |")
    print(
        f"\nTOTAL: {s['flowcore_passed']} of {s['langgraph_passed']} pass on flowcore "
        f"({s['percent']}%)"
    )


CAUSE_COLUMNS = (
    "missing",
    "behaviour",
    "internals",
    "timeout",
    "environment",
    "no_flowcore_run",
    "langgraph_built",
    "skipped",
    "not_run",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PATTERN",
        help="an upstream test file (test_state.py) or a pytest -k expression; repeatable",
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="pytest-xdist workers per run (0: no xdist)"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per test")
    parser.add_argument(
        "--tb",
        default="line",
        help="pytest's traceback style in the runs' logs (line, short, long)",
    )
    parser.add_argument(
        "--run-timeout", type=float, default=3600.0, help="seconds per pytest process"
    )
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write figures")
    parser.add_argument("--cache", type=Path, default=CACHE, help="sdist, suite copy and venv")
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=None,
        help="where each run's records and log go (default: the cache)",
    )
    parser.add_argument(
        "--reuse-baseline",
        action="store_true",
        help="take the LangGraph run's records from the last run into --out-dir",
    )
    parser.add_argument(
        "--floor", type=int, default=None, help="exit 1 when fewer tests pass on flowcore"
    )
    parser.add_argument(
        "--doc",
        type=Path,
        default=None,
        help="rewrite the figures section of this guide (docs/langgraph-migration.md); "
        "whole runs only",
    )
    parser.add_argument(
        "--no-service-count",
        action="store_true",
        help="skip the two collections that count what NO_DOCKER leaves out",
    )
    options = parser.parse_args(argv)

    check_versions()
    cache = options.cache.resolve()
    sdist = fetch_sdist(cache)
    suite = prepare_suite(cache, sdist)
    python = ensure_venv(cache)
    args = selection(options.only)
    out_dir = (options.out_dir or cache).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)

    runs: dict[str, dict[str, Any]] = {}
    for mode in ("langgraph", "flowcore"):
        records = out_dir / f"{mode}.jsonl"
        if mode == "langgraph" and options.reuse_baseline and records.exists():
            runs[mode] = {"reused": str(records), "wall_s": None}
            continue
        runs[mode] = run_pytest(
            python,
            suite,
            mode,
            out_dir / f"{mode}.jsonl",
            args,
            jobs=options.jobs,
            timeout=options.timeout,
            run_timeout=options.run_timeout,
            tb=options.tb,
        )
    base_tests, base_collect = load(out_dir / "langgraph.jsonl")
    flow_tests, flow_collect = load(out_dir / "flowcore.jsonl")
    summary = summarize(base_tests, flow_tests, flow_collect)
    for mode, records in (("langgraph", base_tests), ("flowcore", flow_tests)):
        slowest = sorted(records.values(), key=lambda r: -float(r.get("duration", 0.0)))[:10]
        runs[mode]["slowest"] = [[r["nodeid"], r.get("duration", 0.0)] for r in slowest]

    services: dict[str, Any] = {"skipped_on_langgraph": skipped_in(base_tests)}
    if not options.no_service_count:
        with_services = count_collected(python, suite, args, no_docker=False)
        without = count_collected(python, suite, args, no_docker=True)
        services["collected_with_services"] = with_services
        services["collected_without"] = without
        services["dropped_by_no_docker"] = with_services - without

    result = {
        "meta": {
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "langgraph_sdist": f"langgraph=={LANGGRAPH_VERSION}",
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "jobs": options.jobs,
            "timeout_per_test_s": options.timeout,
            "only": options.only,
            "command": "python bench/langgraph_suite/run.py " + " ".join(argv or sys.argv[1:]),
            "langgraph_collection_errors": sorted(base_collect),
        },
        "runs": runs,
        "services": services,
        "summary": summary,
    }
    options.json.parent.mkdir(parents=True, exist_ok=True)
    options.json.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    print_summary(result)
    log(f"figures written to {options.json}")
    if options.doc is not None:
        if options.only:
            log("--doc ignored: a run with --only measures part of the suite")
        else:
            write_doc(options.doc, result)
            log(f"figures written into {options.doc}")
    if base_collect:
        log(f"collection errors on LangGraph itself: {sorted(base_collect)}")
    if options.floor is not None and summary["flowcore_passed"] < options.floor:
        log(f"below the floor: {summary['flowcore_passed']} < {options.floor}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
