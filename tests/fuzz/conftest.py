"""Prints the fuzz figures at the end of the run: cases, typed errors, untyped, over the limit."""

from __future__ import annotations

import pytest

from .harness import summary_lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = summary_lines()
    if lines:
        terminalreporter.section("fuzz figures (tests/fuzz)")
        for line in lines:
            terminalreporter.write_line(line)
