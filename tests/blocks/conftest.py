"""Prints the template payload table at the end of the run."""

from __future__ import annotations

import pytest

from .template_figures import TEMPLATE_FIGURES, summary_lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    results = terminalreporter.config.stash.get(TEMPLATE_FIGURES, None)
    if results:
        terminalreporter.section("template payload results (tests/blocks)")
        for line in summary_lines(sorted(results, key=lambda r: r.payload)):
            terminalreporter.write_line(line)
