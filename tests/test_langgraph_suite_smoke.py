"""Specs of the harness that runs LangGraph's own tests on flowcore (bench/langgraph_suite).

The table and the classifier are checked in-process; the import hook in a child
interpreter, because it replaces ``langgraph`` in ``sys.modules`` and the rest of
this session imports the real one. The end-to-end spec runs both pytest runs on
one upstream file, and is skipped until ``run.py`` has fetched the sdist and
made its venv once on this machine (it needs PyPI for that).
"""

from __future__ import annotations

import json
import operator
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import flowcore.compat.langgraph as compat

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

from langgraph_suite import classify, run, table  # noqa: E402

CACHE = ROOT / ".cache" / "langgraph-suite"


def test_every_redirected_name_is_public_in_flowcore_compat() -> None:
    offered = {name for names in table.REDIRECTS.values() for name in names}
    assert offered <= set(compat.__all__)


@pytest.mark.parametrize(
    ("module", "kind"),
    [
        ("langgraph.graph", "redirect"),
        ("langgraph.checkpoint.memory", "redirect"),
        ("langgraph.pregel", "redirect"),
        ("langgraph.pregel._loop", "missing"),
        ("langgraph.pregel.remote", "redirect"),
        ("langgraph.pregel.protocol", "missing"),
        ("langgraph.channels.last_value", "redirect"),
        ("langgraph.func", "redirect"),
        ("langgraph.checkpoint.serde.jsonplus", "library"),
        ("langgraph.store.memory", "library"),
        ("langgraph.checkpoint", "package"),
        ("langgraph._internal._constants", "data"),
        ("langgraph._internal._config", "missing"),
    ],
)
def test_table_sorts_langgraph_modules(module: str, kind: str) -> None:
    assert table.kind_of(module) == kind


@pytest.mark.parametrize(
    ("exc_type", "message", "cause", "name"),
    [
        (
            "ImportError",
            "cannot import name 'Overwrite' from 'langgraph.types' (unknown location)",
            "missing",
            "langgraph.types.Overwrite",
        ),
        (
            "ModuleNotFoundError",
            "No module named 'langgraph._internal' [flowcore-suite] no counterpart",
            "internals",
            "langgraph._internal",
        ),
        (
            "MissingName",
            "[flowcore-suite] flowcore.compat.langgraph does not provide "
            "langgraph.checkpoint.memory.PersistentDict",
            "missing",
            "langgraph.checkpoint.memory.PersistentDict",
        ),
        (
            "AttributeError",
            "'CompiledStateGraph' object has no attribute 'get_input_jsonschema'",
            "missing",
            "CompiledStateGraph.get_input_jsonschema",
        ),
        (
            "TypeError",
            "InMemorySaver.__init__() got an unexpected keyword argument 'serde'",
            "missing",
            "InMemorySaver.__init__(serde=)",
        ),
        (
            "AttributeError",
            "<module 'langgraph.pregel.remote' (<langgraph_suite.redirect._RedirectLoader "
            "object at 0x…>)> has no attribute '_merge_tracing_headers'",
            "internals",
            "langgraph.pregel.remote._merge_tracing_headers",
        ),
        ("TypeError", "f() got an unexpected keyword argument 'x'", "behaviour", ""),
        ("AttributeError", "'dict' object has no attribute 'foo'", "behaviour", ""),
        ("ModuleNotFoundError", "No module named 'redis'", "environment", "redis"),
        ("Failed", "Timeout (>60.0s) from pytest-timeout.", "timeout", ""),
        ("AssertionError", "assert [1] == [1, 2]", "behaviour", ""),
    ],
)
def test_classify_gives_one_cause_per_error(
    exc_type: str, message: str, cause: str, name: str
) -> None:
    assert classify.classify(exc_type, message) == (cause, name)


def test_a_missing_name_in_the_chain_outweighs_the_error_raised() -> None:
    chain = [("RuntimeError", "setup failed"), ("ImportError", "No module named 'langgraph.func'")]
    assert classify.classify_chain(chain) == ("missing", "langgraph.func")


def test_summary_counts_only_tests_that_ran_flowcore_without_langgraph() -> None:
    base = {f"tests/t.py::{n}": {"outcome": "passed"} for n in "abcdef"}
    base["tests/t.py::skipped_there"] = {"outcome": "skipped"}
    base["tests/u.py::x"] = {"outcome": "passed"}
    flow = {
        "tests/t.py::a": {"outcome": "passed", "runs": 2, "built": []},
        "tests/t.py::b": {"outcome": "passed", "runs": 0, "built": []},
        # No graph run, but flowcore's own code did the test's work (a reducer, a channel).
        "tests/t.py::f": {"outcome": "passed", "runs": 0, "flowcore_ran": True, "built": []},
        "tests/t.py::c": {"outcome": "passed", "runs": 1, "built": ["langgraph.pregel"]},
        "tests/t.py::d": {
            "outcome": "failed",
            "runs": 1,
            "built": [],
            "error": {"cause": "behaviour", "line": "AssertionError: x"},
        },
        "tests/t.py::e": {"outcome": "skipped", "runs": 0, "built": [], "skip": "why"},
    }
    collect = {
        "tests/u.py": {"error": {"cause": "missing", "line": "ImportError: cannot import name"}}
    }
    summary = run.summarize(base, flow, collect)
    assert (summary["langgraph_passed"], summary["flowcore_passed"]) == (7, 2)
    assert summary["flowcore_passed_with_graph_run"] == 1
    assert summary["causes"] == {
        "no_flowcore_run": 1,
        "langgraph_built": 1,
        "behaviour": 1,
        "skipped": 1,
        "missing": 1,
    }
    assert [row["file"] for row in summary["files"]] == ["tests/t.py", "tests/u.py"]


HOOK_SCRIPT = textwrap.dedent(
    """
    import json
    from langgraph_suite import redirect
    redirect.install()
    out = {}
    from langgraph.graph import StateGraph
    from langgraph.checkpoint.memory import InMemorySaver
    out["graph"] = StateGraph.__module__
    out["saver"] = InMemorySaver.__module__
    try:
        import langgraph.pregel.protocol
    except ModuleNotFoundError as exc:
        out["pregel"] = str(exc)
    try:
        # A name of langgraph.types that flowcore does not provide (the loop's own task).
        from langgraph.types import PregelExecutableTask
    except ImportError as exc:
        out["missing_name"] = type(exc).__name__
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    out["serde"] = JsonPlusSerializer.__module__
    suite = {"__name__": "tests.test_fake"}
    exec(
        "from langgraph.pregel.protocol import StreamProtocol\\n"
        "from langgraph.types import PregelExecutableTask\\n"
        "def test_uses():\\n    return StreamProtocol()\\n"
        "def test_does_not():\\n    return 1\\n",
        suite,
    )
    try:
        suite["test_uses"]()
    except redirect.MissingName as exc:
        out["in_suite"] = exc.dotted
    out["named"] = redirect.named_missing([suite["test_uses"], suite["test_does_not"]])
    from langgraph._internal._constants import PULL
    out["pull"] = PULL
    out["built"] = redirect.real_runtime_modules()
    print(json.dumps(out))
    """
)


def test_import_hook_answers_langgraph_names_from_flowcore_and_nothing_falls_through() -> None:
    # Outside the suite a missing module or name raises; inside it (a module of the
    # `tests` package) it binds to a placeholder that raises when used, and a test
    # function that reads it is found by named_missing.
    proc = subprocess.run(
        [sys.executable, "-c", HOOK_SCRIPT],
        env={"PYTHONPATH": str(BENCH), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(proc.stdout)
    assert out["graph"].startswith("flowcore.compat.langgraph")
    assert out["saver"].startswith("flowcore.compat.langgraph")
    assert "[flowcore-suite]" in out["pregel"]
    assert out["missing_name"] == "ImportError"
    assert out["serde"] == "langgraph.checkpoint.serde.jsonplus"
    assert out["in_suite"] == "langgraph.pregel.protocol.StreamProtocol"
    assert out["named"] == ["langgraph.pregel.protocol.StreamProtocol"]
    # A data module is LangGraph's own, loaded for real, and is not its runtime.
    assert out["pull"] == "__pregel_pull"
    assert out["built"] == []


def test_a_placeholder_read_as_a_number_is_charged_to_the_name_it_stands_for() -> None:
    # `int(DEFAULT_RECURSION_LIMIT)` at a test module's top: the error names the private
    # name (internals), not a TypeError that would count as flowcore behaving differently.
    from langgraph_suite import redirect

    dotted = "langgraph._internal._config.DEFAULT_RECURSION_LIMIT"
    for read in (int, float, operator.index):
        with pytest.raises(redirect.MissingName) as caught:
            read(redirect.Placeholder(dotted))
        assert classify.classify("MissingName", str(caught.value)) == ("internals", dotted)


DATA_CHECK_SCRIPT = textwrap.dedent(
    """
    import json, types
    from langgraph_suite import redirect
    out = {}
    code_module = types.ModuleType("langgraph._internal._fake")
    exec("def helper():\\n    return 1\\n", code_module.__dict__)
    try:
        redirect.check_data_module(code_module, set())
    except ImportError as exc:
        out["code"] = str(exc)
    data_module = types.ModuleType("langgraph._internal._fake2")
    exec("from typing import cast\\nA = 'x'\\nB = frozenset({'y'})\\n", data_module.__dict__)
    redirect.check_data_module(data_module, set())
    out["data"] = "accepted"
    print(json.dumps(out))
    """
)


def test_a_data_module_with_code_of_its_own_is_refused() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", DATA_CHECK_SCRIPT],
        env={"PYTHONPATH": str(BENCH), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(proc.stdout)
    assert "helper is not a literal value" in out["code"]
    assert out["data"] == "accepted"


@pytest.mark.skipif(
    not (CACHE / "venv" / "bin" / "python").exists()
    or not (CACHE / f"langgraph-{run.LANGGRAPH_VERSION}.tar.gz").exists(),
    reason="run bench/langgraph_suite/run.py once to fetch the sdist and make its venv",
)
def test_both_runs_of_one_upstream_file_are_counted(tmp_path: Path) -> None:
    out = tmp_path / "suite.json"
    code = run.main(
        [
            "--only",
            "test_managed_values.py",
            "--jobs",
            "0",
            "--no-service-count",
            "--out-dir",
            str(tmp_path),
            "--json",
            str(out),
        ]
    )
    assert code == 0
    summary = json.loads(out.read_text())["summary"]
    assert summary["langgraph_passed"] > 0
    counted = summary["flowcore_passed"] + sum(summary["causes"].values())
    assert counted == summary["langgraph_passed"]
    assert [row["file"] for row in summary["files"]] == ["tests/test_managed_values.py"]


def test_the_guide_section_is_rewritten_from_a_runs_figures(tmp_path: Path) -> None:
    from langgraph_suite.doc import END, START, write_doc

    guide = tmp_path / "guide.md"
    guide.write_text(f"# Guide\n\n{START}\nstale figures\n{END}\n\n## After\n")
    result = {
        "meta": {
            "date": "2026-11-25T09:00:00+00:00",
            "command": "python bench/langgraph_suite/run.py",
            "langgraph_sdist": "langgraph==1.2.22",
            "python": "3.11.7",
        },
        "summary": {
            "langgraph_passed": 10,
            "flowcore_passed": 7,
            "percent": 70.0,
            "causes": {"behaviour": 2, "internals": 1},
            "files": [
                {
                    "file": "tests/test_a.py",
                    "langgraph_passed": 10,
                    "flowcore_passed": 7,
                    "behaviour": 2,
                    "internals": 1,
                },
            ],
            "clusters": [
                {"count": 1, "cause": "internals", "key": "lacks langgraph._internal.X"},
                {"count": 2, "cause": "behaviour", "key": "AssertionError: a | b"},
            ],
        },
    }

    write_doc(guide, result)

    text = guide.read_text()
    assert "stale figures" not in text
    assert text.startswith("# Guide\n")
    assert text.endswith("## After\n")
    section = text[text.index(START) : text.index(END)]
    assert "**7 of the 10 tests that pass on LangGraph pass on flowcore (70.0 %)**" in section
    assert "| tests/test_a.py | 10 | 7 |" in section
    # Internals are explained, not listed as groups to fix; a | in an error is escaped.
    assert "lacks langgraph._internal.X" not in section
    assert "AssertionError: a \\| b" in section


def test_a_guide_without_the_markers_is_refused(tmp_path: Path) -> None:
    from langgraph_suite.doc import write_doc

    guide = tmp_path / "guide.md"
    guide.write_text("# Guide\n")
    with pytest.raises(ValueError, match="no section to write"):
        write_doc(guide, {"summary": {}, "meta": {}})
