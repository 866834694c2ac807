"""How every fuzz case is run, timed and judged, and the figures the suite prints.

A case is one call of a public entry point on generated data. It may return
(a documented success) or raise a :class:`~flowcore.errors.FlowcoreError`
subclass (a typed refusal); anything else escaping is a failure of the suite,
and so is a case that takes longer than :data:`CASE_LIMIT` seconds.

Time is measured per case instead of with hypothesis' ``deadline``, which a
slow CI machine would trip on its first cold example. Async cases run under
``asyncio.timeout`` so a hang ends; a watchdog timer (``SIGALRM``) stops CPU
spins that never reach an ``await``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings

from flowcore.errors import FlowcoreError

T = TypeVar("T")

CASE_LIMIT = 2.0
"""Seconds one case may take; generous, it only has to catch hangs and blow-ups."""

_WATCHDOG = 10.0
"""Seconds after which a case that never yields is interrupted outright."""

# One profile per depth: the default run and "deep" (ten times the examples,
# for a .ci/run step or a developer with time: FLOWCORE_FUZZ=deep). Both are
# deterministic, so a CI verdict does not depend on the draw and a failure
# reproduces; FLOWCORE_FUZZ_RANDOM=1 draws fresh cases each run, for a
# developer hunting new defects (a find becomes a fixed regression test).
_DEEP = os.environ.get("FLOWCORE_FUZZ") == "deep"
_RANDOM = os.environ.get("FLOWCORE_FUZZ_RANDOM") == "1"
# FLOWCORE_FUZZ_SURVEY=1 counts untyped errors and slow cases instead of failing on the
# first: how the figures of an older flowcore were measured (see docs/errors.md).
_SURVEY = os.environ.get("FLOWCORE_FUZZ_SURVEY") == "1"
_QUIET = [
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
    HealthCheck.large_base_example,
    HealthCheck.function_scoped_fixture,
]


def fuzz_settings(examples: int) -> settings:
    """Hypothesis settings for one entry point: ``examples`` cases, no deadline, no database.

    Example:
        >>> fuzz_settings(10).max_examples in (10, 100)
        True
    """
    return settings(
        max_examples=examples * 10 if _DEEP else examples,
        deadline=None,
        derandomize=not _RANDOM,
        database=None,
        suppress_health_check=_QUIET,
        print_blob=True,
    )


class CaseHung(BaseException):
    """Raised by the watchdog into a case that has not returned in time.

    A BaseException, so no ``except Exception`` in the code under test can
    swallow it.
    """


@dataclass
class EntryFigures:
    """What the cases of one entry point came to."""

    cases: int = 0
    ok: int = 0
    typed: int = 0
    untyped: int = 0
    over_limit: int = 0
    slowest: float = 0.0
    codes: dict[str, int] = field(default_factory=dict)


FIGURES: dict[str, EntryFigures] = {}


def summary_lines() -> list[str]:
    """The table the terminal summary prints: one row per entry point and a total.

    Example:
        >>> isinstance(summary_lines(), list)
        True
    """
    if not FIGURES:
        return []
    lines = [
        f"per-case limit {CASE_LIMIT:.1f} s; profile {'deep' if _DEEP else 'ci'}",
        "entry point | cases | ok | typed errors | untyped | over the limit | slowest ms",
    ]
    total = EntryFigures()
    for name, f in sorted(FIGURES.items()):
        lines.append(
            f"{name} | {f.cases} | {f.ok} | {f.typed} | {f.untyped} | {f.over_limit} "
            f"| {f.slowest * 1000:.0f}"
        )
        total.cases += f.cases
        total.ok += f.ok
        total.typed += f.typed
        total.untyped += f.untyped
        total.over_limit += f.over_limit
        total.slowest = max(total.slowest, f.slowest)
    lines.append(
        f"total | {total.cases} | {total.ok} | {total.typed} | {total.untyped} "
        f"| {total.over_limit} | {total.slowest * 1000:.0f}"
    )
    if _SURVEY:
        for name, f in sorted(FIGURES.items()):
            kinds = {k: n for k, n in f.codes.items() if k.startswith("untyped")}
            if kinds:
                lines.append(f"{name}: {kinds}")
    lines.append(
        f"fuzz figures: cases {total.cases}, typed errors {total.typed}, "
        f"untyped {total.untyped}, over the limit {total.over_limit}"
    )
    return lines


def _where(exc: BaseException) -> str:
    """`` at flowcore/<file>:<line>``: the innermost flowcore frame the error passed."""
    tb = exc.__traceback__
    found = ""
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if "/flowcore/" in name:
            found = f" at flowcore/{name.rsplit('/flowcore/', 1)[1]}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


@contextmanager
def _watchdog(seconds: float) -> Iterator[None]:
    def fire(signum: int, frame: Any) -> None:
        raise CaseHung(f"the case ran past the {seconds:.0f} s watchdog")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Judge:
    """Runs the cases of one entry point and keeps its figures.

    Example:
        >>> judge = Judge("example")
        >>> judge.call(lambda: 1 + 1)
        2
    """

    def __init__(self, entry: str) -> None:
        self.entry = entry
        self.figures = FIGURES.setdefault(entry, EntryFigures())

    def call(self, case: Callable[[], T]) -> T | None:
        """Run a sync case; return its result, or None when it raised a typed error."""
        started = time.perf_counter()
        try:
            with _watchdog(_WATCHDOG):
                result = case()
        except FlowcoreError as exc:
            self._typed(exc, time.perf_counter() - started)
            return None
        except CaseHung:
            self._ended(time.perf_counter() - started)
            if _SURVEY:
                return None
            raise
        except Exception as exc:
            self._untyped(exc)
            return None
        self._ended(time.perf_counter() - started)
        self.figures.ok += 1
        return result

    async def acall(self, case: Callable[[], Awaitable[T]]) -> T | None:
        """Run an async case under a timeout; as :meth:`call` otherwise."""
        started = time.perf_counter()
        try:
            with _watchdog(_WATCHDOG):
                async with asyncio.timeout(CASE_LIMIT * 3):
                    result = await case()
        except FlowcoreError as exc:
            self._typed(exc, time.perf_counter() - started)
            return None
        except (CaseHung, TimeoutError):
            self._ended(time.perf_counter() - started)
            if _SURVEY:
                return None
            raise
        except Exception as exc:
            self._untyped(exc)
            return None
        self._ended(time.perf_counter() - started)
        self.figures.ok += 1
        return result

    def refused(self, code: str) -> None:
        """Count the last case, which returned, as a typed refusal (a CLI's exit code 2)."""
        self.figures.ok -= 1
        self.figures.typed += 1
        self.figures.codes[code] = self.figures.codes.get(code, 0) + 1

    def _typed(self, exc: FlowcoreError, took: float) -> None:
        self._ended(took)
        self.figures.typed += 1
        self.figures.codes[exc.code] = self.figures.codes.get(exc.code, 0) + 1
        # A typed error still has to say something: an empty message helps no one.
        assert str(exc).strip(), f"{type(exc).__name__} with an empty message"

    def _untyped(self, exc: Exception) -> None:
        self.figures.cases += 1
        self.figures.untyped += 1
        kind = f"untyped {type(exc).__name__}{_where(exc)}"
        self.figures.codes[kind] = self.figures.codes.get(kind, 0) + 1
        if not _SURVEY:
            raise exc

    def _ended(self, took: float) -> None:
        self.figures.cases += 1
        self.figures.slowest = max(self.figures.slowest, took)
        if took > CASE_LIMIT:
            self.figures.over_limit += 1
            if _SURVEY:
                return
            raise AssertionError(
                f"{self.entry}: one case took {took:.2f} s, over the {CASE_LIMIT} s limit"
            )
