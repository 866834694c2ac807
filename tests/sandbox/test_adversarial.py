"""Spec: each layer holds on its own against the adversarial payloads; nothing escapes either.

Every payload of ``payloads_adversarial.py`` runs twice. With the policy
alone (``isolation="none"``: a plain subprocess of the host's user, no jail
at all) it is refused before it runs or contained by the run-time guards;
with the jail alone (``policy=False``, full builtins, bubblewrap) it is
contained by the operating system. The canaries decide: the secret's token
in the outputs, the listener, files outside the sandbox, the host canary
process, leftover processes, the disk budget. The run ends with the table
of outcomes (``pytest tests/sandbox/test_adversarial.py`` prints it).
"""

from __future__ import annotations

import pytest

from flowcore.sandbox import PythonSandbox, check_policy

from .conftest import LIMITS, OUTCOMES, Canaries, outcome
from .payloads_adversarial import PAYLOADS, STATIC_BLIND


def test_there_are_at_least_thirty_new_payloads() -> None:
    assert len(PAYLOADS) >= 30


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_the_policy_refuses_at_compile_time_what_the_source_shows(name: str) -> None:
    problems = check_policy(PAYLOADS[name])

    # The rest hide behind a renamed value: they compile, and the run-time
    # guards have to stop them (next test).
    assert (problems == []) == (name in STATIC_BLIND), problems


@pytest.mark.parametrize("name", sorted(PAYLOADS))
async def test_the_policy_alone_lets_nothing_out(name: str, canaries: Canaries) -> None:
    policy_alone = PythonSandbox(limits=LIMITS, isolation="none")

    result, why = await outcome(policy_alone, PAYLOADS[name], canaries)

    OUTCOMES.setdefault(name, {})["policy alone"] = result
    assert result == ("contained" if name in STATIC_BLIND else "refused"), why


@pytest.mark.parametrize("name", sorted(PAYLOADS))
async def test_the_jail_alone_lets_nothing_out(name: str, canaries: Canaries) -> None:
    jail_alone = PythonSandbox(limits=LIMITS, policy=False)

    result, why = await outcome(jail_alone, PAYLOADS[name], canaries)

    OUTCOMES.setdefault(name, {})["jail alone"] = result
    assert result == "contained", why
