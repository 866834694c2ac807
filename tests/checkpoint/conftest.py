"""Prints the crash-test figures at the end of the run."""

from __future__ import annotations

import pytest

from .crash_figures import CRASH_FIGURES, summary_lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    table = terminalreporter.config.stash.get(CRASH_FIGURES, None)
    if table:
        terminalreporter.section("crash test figures")
        for line in summary_lines(table):
            terminalreporter.write_line(line)
