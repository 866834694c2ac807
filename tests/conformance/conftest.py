"""Prints how many LangGraph conformance scenarios match at the end of the run."""

from typing import Any

import pytest

from .harness import REGISTRY, RESULTS


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """One line with the match count, then the scenarios that do not match yet."""
    if not RESULTS:
        return
    total = len(REGISTRY)
    matched = sorted(sid for sid, outcome in RESULTS.items() if outcome == "match")
    mismatched = sorted(sid for sid, outcome in RESULTS.items() if outcome == "mismatch")
    skipped = sorted(sid for sid, outcome in RESULTS.items() if outcome.startswith("skipped"))
    terminalreporter.section("LangGraph conformance")
    checked = len(matched) + len(mismatched)
    line = f"LangGraph conformance: {len(matched)} of {checked} scenarios match"
    if checked < total:
        line += f" ({total - checked} of {total} registered scenarios not compared)"
    terminalreporter.write_line(line)
    if mismatched:
        terminalreporter.write_line("mismatching: " + ", ".join(mismatched))
    if skipped:
        reasons = sorted({RESULTS[sid] for sid in skipped})
        terminalreporter.write_line(f"skipped: {len(skipped)} ({'; '.join(reasons)})")
