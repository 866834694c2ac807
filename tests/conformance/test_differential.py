"""Spec: every conformance scenario observes the same behaviour on langgraph and on flowcore.

Each scenario is a LangGraph program written once; it runs on the real langgraph
package and on ``flowcore.compat.langgraph`` and the normalized observations
(final states, stream chunks, interrupts, snapshots, exception types) must be
equal. The suite skips when langgraph is not installed, and each differential
test skips while ``flowcore.compat.langgraph`` cannot be imported.
"""

import pprint
from difflib import unified_diff
from typing import Any

import pytest

pytest.importorskip("langgraph")

from . import scenarios  # registers every scenario
from .harness import (
    REGISTRY,
    RESULTS,
    Run,
    Scenario,
    flowcore_backend,
    langgraph_backend,
    run_scenario,
)

assert scenarios.__all__  # the import above is for its side effect
ALL = list(REGISTRY.values())
IDS = [entry.id for entry in ALL]


def _render(run: Run) -> list[str]:
    lines: list[str] = []
    for label, value in run.observations:
        lines.append(f"{label}:")
        text = pprint.pformat(value, width=96, sort_dicts=True)
        lines.extend("    " + line for line in text.splitlines())
    return lines


def _diff(expected: Run, actual: Run, names: tuple[str, str]) -> str:
    diff = "\n".join(unified_diff(_render(expected), _render(actual), *names, lineterm="", n=4))
    escaped = f"\n\n{names[1]} escaped with:\n{actual.escaped}" if actual.escaped else ""
    return f"observations differ:\n{diff}{escaped}"


def _flowcore() -> Any:
    try:
        return flowcore_backend()
    except ImportError as exc:
        return exc


@pytest.fixture(scope="module")
def langgraph() -> Any:
    return langgraph_backend()


@pytest.fixture(scope="module")
def flowcore() -> Any:
    return _flowcore()


def test_there_are_enough_scenarios() -> None:
    assert len(REGISTRY) >= 65


@pytest.mark.parametrize("entry", ALL, ids=IDS)
def test_scenario_is_deterministic_on_langgraph(entry: Scenario, langgraph: Any) -> None:
    first = run_scenario(entry, langgraph)
    second = run_scenario(entry, langgraph)
    assert first.escaped is None, f"scenario raised on langgraph:\n{first.escaped}"
    assert first.observations, "scenario recorded nothing"
    assert first.observations == second.observations, _diff(
        first, second, ("langgraph run 1", "langgraph run 2")
    )


@pytest.mark.parametrize("entry", ALL, ids=IDS)
def test_flowcore_matches_langgraph(entry: Scenario, langgraph: Any, flowcore: Any) -> None:
    if isinstance(flowcore, ImportError):
        RESULTS[entry.id] = "skipped: flowcore.compat.langgraph is not importable"
        pytest.skip(f"flowcore.compat.langgraph cannot be imported yet: {flowcore}")
    expected = run_scenario(entry, langgraph)
    actual = run_scenario(entry, flowcore)
    RESULTS[entry.id] = "match" if expected.observations == actual.observations else "mismatch"
    assert expected.observations == actual.observations, _diff(
        expected, actual, ("langgraph", "flowcore")
    )
