"""The template payload results the limits tests collect, and how pytest's summary prints them."""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class PayloadResult:
    payload: str
    outcome: str
    elapsed: float
    longest_tick_gap: float
    timeout: float


# A render that ends later than this after its block's timeout counts as late.
LATE = 0.5

TEMPLATE_FIGURES = pytest.StashKey[list[PayloadResult]]()


def summary_lines(results: list[PayloadResult]) -> list[str]:
    width = max(len(r.payload) for r in results)
    lines = [
        "template payloads through BlockExecutor "
        f"(timeout_seconds={'/'.join(f'{t:g}' for t in sorted({r.timeout for r in results}))}, "
        "max_retries=0)",
        f"{'payload':<{width}} | {'raised':<20} | elapsed s | longest event-loop gap s",
    ]
    lines += [
        f"{r.payload:<{width}} | {r.outcome:<20} | {r.elapsed:9.3f} | {r.longest_tick_gap:.3f}"
        for r in results
    ]
    refused = sum(r.outcome == "BlockInputError" for r in results)
    stopped = sum(r.outcome == "BlockTimeoutError" for r in results)
    late = sum(r.elapsed > r.timeout + LATE for r in results)
    lines.append(
        f"{len(results)} payloads: {refused} refused (BlockInputError), {stopped} stopped at "
        f"the timeout (BlockTimeoutError), {late} still running {LATE} s past the timeout"
    )
    return lines
