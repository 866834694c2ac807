"""pytest plugin for both runs of LangGraph's suite (``-p langgraph_suite.plugin``).

Set by ``run.py`` through the environment:

* ``LANGGRAPH_SUITE_MODE``: ``langgraph`` (the baseline, nothing redirected) or
  ``flowcore`` (the import hook of ``redirect.py`` installed as this plugin
  loads, before the suite's conftest imports anything, and
  ``flowcore.compat.langgraph._loop.Run.execute`` wrapped to count runs);
* ``LANGGRAPH_SUITE_OUT``: the JSON-lines file each test's record is appended to
  (by the controlling process only, under pytest-xdist too).

A record holds the test's outcome, how many flowcore runs it started, which real
LangGraph runtime modules were loaded (none, in the flowcore run), the missing
LangGraph names its code or its fixtures' code reads (``redirect.named_missing``),
and for a failure the first error line with its cause (``classify.py``; a
failure of a test that names a missing name is charged to that name).

Example:
    >>> # LANGGRAPH_SUITE_MODE=flowcore python -m pytest -p langgraph_suite.plugin tests
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
from typing import Any

import pytest

from langgraph_suite.classify import classify_chain, first_line, last_error_in
from langgraph_suite.table import is_internal

__all__ = ["MODE", "runs_started"]

MODE = os.environ.get("LANGGRAPH_SUITE_MODE", "langgraph")
_OUT = os.environ.get("LANGGRAPH_SUITE_OUT", "")

_runs = 0
# Whether a function of flowcore's ran during the current test (its setup and call).
_flowcore_ran = False
_FLOWCORE_DIR = ""
# The missing LangGraph names the current test's fixtures' code reads, and those
# its own code reads too: a failure in setup is charged to the former only.
_named_by_fixtures: list[str] = []
_named: list[str] = []
_config: pytest.Config | None = None
_phases: dict[str, dict[str, Any]] = {}


def runs_started() -> int:
    """How many flowcore runs the current test has started so far.

    Example:
        >>> runs_started() >= 0
        True
    """
    return _runs


def _count_runs() -> None:
    from flowcore.compat.langgraph import _loop

    original = _loop.Run.execute

    @functools.wraps(original)
    async def execute(self: Any) -> None:
        global _runs
        _runs += 1
        await original(self)

    setattr(_loop.Run, "execute", execute)  # noqa: B010


# Frames that run while a name is looked up or a module loads, not flowcore's work.
_NOT_WORK = frozenset({"<module>", "__getattr__", "__dir__"})


def _watch(frame: Any, event: str, arg: Any) -> None:
    global _flowcore_ran
    if (
        event == "call"
        and frame.f_code.co_filename.startswith(_FLOWCORE_DIR)
        and frame.f_code.co_name not in _NOT_WORK
    ):
        _flowcore_ran = True
        # One call is proof enough; the hook costs every call after it otherwise.
        sys.setprofile(None)


def _start_watching() -> None:
    global _flowcore_ran
    _flowcore_ran = False
    if MODE == "flowcore":
        sys.setprofile(_watch)
        threading.setprofile(_watch)


def _stop_watching() -> None:
    sys.setprofile(None)
    threading.setprofile(None)  # type: ignore[arg-type]


if MODE == "flowcore":
    import flowcore

    _FLOWCORE_DIR = os.path.dirname(os.path.abspath(flowcore.__file__)) + os.sep
    # At import, not in a hook: -p plugins load before the initial conftests, and the
    # hook must be in place before the suite's conftest imports its first langgraph name.
    from langgraph_suite import redirect

    redirect.install()
    _count_runs()


def _chain(exc: BaseException) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(found) < 10:
        seen.add(id(current))
        found.append((type(current).__name__, str(current)))
        current = current.__cause__ or current.__context__
    return found


def pytest_configure(config: pytest.Config) -> None:
    global _config
    _config = config


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    global _runs, _named, _named_by_fixtures
    _runs = 0
    _named = _named_by_fixtures = []
    if MODE == "flowcore":
        from langgraph_suite.redirect import named_missing

        fixtures: list[Any] = []
        fixtureinfo = getattr(item, "_fixtureinfo", None)
        if fixtureinfo is not None:
            for defs in fixtureinfo.name2fixturedefs.values():
                fixtures.extend(d.func for d in defs)
        _named_by_fixtures = named_missing(fixtures)
        function = getattr(item, "function", None)
        own = named_missing([function]) if function is not None else []
        _named = sorted(set(_named_by_fixtures) | set(own))
    _start_watching()


def _charge(named: list[str]) -> tuple[str, str]:
    # A private name outweighs a public one: the test drives LangGraph's internals.
    internal = [n for n in named if is_internal(n)]
    return ("internals", internal[0]) if internal else ("missing", named[0])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    props: dict[str, Any] = {"runs": _runs, "named": _named, "flowcore_ran": _flowcore_ran}
    if call.when == "call":
        _stop_watching()
    if MODE == "flowcore" and call.when == "teardown":
        _stop_watching()
        from langgraph_suite.redirect import real_runtime_modules

        props["built"] = real_runtime_modules()
    if report.failed and call.excinfo is not None:
        chain = _chain(call.excinfo.value)
        cause, name = classify_chain(chain)
        named = _named_by_fixtures if call.when == "setup" else _named
        if cause not in ("missing", "internals") and named:
            cause, name = _charge(named)
        props["error"] = {
            "line": first_line(*chain[0]),
            "cause": cause,
            "name": name,
            "when": call.when,
        }
    report.user_properties.append(("langgraph_suite", props))
    return report


def _write(record: dict[str, Any]) -> None:
    if not _OUT:
        return
    with open(_OUT, "a", encoding="utf-8") as out:
        out.write(json.dumps(record, sort_keys=True) + "\n")


def _is_worker() -> bool:
    return _config is not None and hasattr(_config, "workerinput")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _is_worker():
        return
    entry = _phases.setdefault(
        report.nodeid,
        {
            "outcome": "passed",
            "runs": 0,
            "flowcore_ran": False,
            "built": [],
            "named": [],
            "error": None,
            "skip": "",
            "duration": 0.0,
        },
    )
    props: dict[str, Any] = {}
    for key, value in report.user_properties:
        if key == "langgraph_suite" and isinstance(value, dict):
            props = value
    entry["runs"] = max(entry["runs"], int(props.get("runs", 0)))
    entry["flowcore_ran"] = entry["flowcore_ran"] or bool(props.get("flowcore_ran"))
    entry["duration"] = round(entry["duration"] + report.duration, 3)
    entry["built"] = sorted(set(entry["built"]) | set(props.get("built", [])))
    entry["named"] = sorted(set(entry["named"]) | set(props.get("named", [])))
    if report.failed:
        if entry["outcome"] != "failed":
            entry["outcome"] = "failed"
            entry["error"] = props.get("error") or _error_from_text(report.longreprtext)
    elif report.skipped and entry["outcome"] == "passed":
        entry["outcome"] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        longrepr = report.longrepr
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            entry["skip"] = str(longrepr[2])
    if report.when == "teardown":
        del _phases[report.nodeid]
        _write({"kind": "test", "nodeid": report.nodeid, **entry})


def _error_from_text(text: str) -> dict[str, Any]:
    exc_type, message = last_error_in(text)
    cause, name = classify_chain([(exc_type, message)])
    # A worker that died takes its test with it; the text says so, not an exception line.
    if "worker" in text and "crashed" in text:
        cause = "behaviour"
    return {"line": first_line(exc_type, message), "cause": cause, "name": name, "when": "?"}


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if _is_worker() or not report.failed:
        return
    _write(
        {"kind": "collect", "nodeid": report.nodeid, "error": _error_from_text(report.longreprtext)}
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _is_worker():
        return
    # Tests whose teardown never reported (a crashed worker): write what is known.
    for nodeid, entry in list(_phases.items()):
        _write({"kind": "test", "nodeid": nodeid, **entry})
    _phases.clear()
