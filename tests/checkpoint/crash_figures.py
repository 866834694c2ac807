"""The figures the crash tests collect, and how pytest's summary prints them."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import pytest


@dataclass
class Figures:
    kills: int = 0
    resumes: int = 0
    lost: int = 0
    duplicates: int = 0
    in_flight: int = 0
    latencies_ms: list[float] = field(default_factory=list)


CRASH_FIGURES = pytest.StashKey[dict[str, Figures]]()


def merge(into: Figures, more: Figures) -> None:
    into.kills += more.kills
    into.resumes += more.resumes
    into.lost += more.lost
    into.duplicates += more.duplicates
    into.in_flight += more.in_flight
    into.latencies_ms.extend(more.latencies_ms)


def summary_lines(table: dict[str, Figures]) -> list[str]:
    lines = [
        "crash test figures (SIGKILL + resume, 30-superstep graph, SqliteCheckpointer)",
        "durability | kills | resumes | lost results | duplicates | in flight at kills "
        "| resume latency p50 / p95 ms",
    ]
    for label, f in sorted(table.items()):
        lat = sorted(f.latencies_ms) or [0.0]
        p50 = statistics.median(lat)
        p95 = lat[min(len(lat) - 1, round(0.95 * (len(lat) - 1)))]
        lines.append(
            f"{label} | {f.kills} | {f.resumes} | {f.lost} | {f.duplicates} | {f.in_flight} "
            f"| {p50:.1f} / {p95:.1f}"
        )
    total = sum(f.kills for f in table.values())
    lines.append(f"total kills: {total}")
    return lines
