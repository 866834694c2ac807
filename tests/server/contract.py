"""The API tested from its own contract: schemathesis requests against a live ``flowcore serve``.

Every operation of the served OpenAPI document gets generated requests,
valid ones and (with ``negative``) invalid ones, sent with a valid API key;
each response is checked by schemathesis' checks (status code declared,
content type, headers, body against the response schema, no server error).
The Thinker routes are fuzzed like the others: the server runs on the
offline provider, so each request is answered by the Thinker's offline model.

    python -m tests.server.contract --examples 50   # what CI runs; prints the figures

The spec ``tests/server/test_contract.py`` runs a short version.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hypothesis
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    negative_data_rejection,
)
from schemathesis.config import SchemathesisConfig
from schemathesis.core.failures import FailureGroup

from tests.server.live import ROOT, Served, new_key

# schemathesis' "positive data acceptance" check expects a schema-valid request to succeed.
# Some rules are not expressible in the schema (a pipeline document's blocks must exist,
# its references must resolve, a run must be interrupted to be resumed), so 400 and 422 for
# those are right answers too, as 404 and 409 already are by default.
CONFIG = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429"]
"""


@dataclass
class Report:
    """What a contract run found."""

    requests: int = 0
    server_errors: int = 0
    violations: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        codes = ", ".join(f"{code}: {n}" for code, n in sorted(self.statuses.items()))
        return (
            f"schemathesis: {self.requests} generated requests, {self.server_errors} server "
            f"errors (5xx), {self.violations} schema violations; statuses {codes}"
        )


def _unsent_query(case: schemathesis.Case) -> bool:
    """Whether the case's query holds a parameter that is never sent (no value, no name)."""
    query = case.query or {}
    return any(not name or value is None or value == [] for name, value in query.items())


def _fuzz(
    operation: Any,
    mode: GenerationMode,
    base_url: str,
    headers: dict[str, str],
    examples: int,
    report: Report,
) -> None:
    """Send ``examples`` generated requests of one kind to one operation, checking each answer."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def probe(case: schemathesis.Case) -> None:
        response = case.call(base_url=base_url, headers=headers, timeout=30)
        report.requests += 1
        report.statuses[response.status_code] += 1
        if response.status_code >= 500:
            report.server_errors += 1
            report.failures.append(
                f"{case.method} {case.formatted_path} -> {response.status_code}: "
                f"{response.text[:300]}"
            )
            return
        excluded = []
        if _unsent_query(case):
            # The "invalid" part was a query parameter without a value, which the HTTP
            # client leaves out: the server received a valid request and rightly served it.
            excluded.append(negative_data_rejection)
        try:
            case.validate_response(response, headers=headers, excluded_checks=excluded or None)
        except (FailureGroup, Exception) as exc:  # a check failed: one violation
            report.violations += 1
            report.failures.append(
                f"{case.method} {case.formatted_path} ({mode.value}) -> "
                f"{response.status_code}: {str(exc)[:600]}"
            )

    with contextlib.suppress(hypothesis.errors.Unsatisfiable):
        probe()


def run_contract(base_url: str, token: str, *, examples: int, negative: bool = True) -> Report:
    """Send generated requests to every operation of the live server; count what went wrong.

    Example:
        >>> # report = run_contract("http://127.0.0.1:8321", key, examples=5)
    """
    config = SchemathesisConfig.from_str(CONFIG)
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json", config=config)
    headers = {"Authorization": f"Bearer {token}"}
    report = Report()
    modes = [GenerationMode.POSITIVE, *([GenerationMode.NEGATIVE] if negative else [])]
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in modes:
            _fuzz(operation, mode, base_url, headers, examples, report)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=50, help="requests per operation and mode")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "contract.db"
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "FLOWCORE_PROVIDER": "offline",
            "FLOWCORE_TEST_TRACE": str(Path(tmp) / "trace.txt"),
        }
        token = new_key(env, db, "contract")
        started: list[Served] = []
        server = Served(db, env, Path(tmp) / "server.log", started, "--rate-limit", "100000000")
        try:
            report = run_contract(server.base, token, examples=args.examples)
        finally:
            server.stop()
    print(report.summary())
    if os.environ.get("FLOWCORE_CONTRACT_VERBOSE"):
        print("\n\n".join(report.failures))
    for failure in report.failures[:20]:
        print("  " + failure.splitlines()[0])
        print(
            "    " + " / ".join(line.strip() for line in failure.splitlines()[1:8] if line.strip())
        )
    if report.server_errors or report.violations:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
