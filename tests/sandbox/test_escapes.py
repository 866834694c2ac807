"""Spec: every escape payload is refused by the policy layer, and contained by the jail alone.

The jail-alone run switches the policy layer off and hands the payload full
builtins, as if the policy had been bypassed; the canaries then show whether
anything got out: the secret file's token, the loopback listener, files
outside the temp dir, the environment, and processes left behind.
"""

from __future__ import annotations

import contextlib
import os

import pytest

from flowcore.sandbox import (
    PythonSandbox,
    SandboxError,
    SandboxViolation,
    check_policy,
)

from .conftest import Canaries
from .payloads import PAYLOADS

# What the policy cannot see in the source: these run and are stopped by the jail.
RUNTIME_ONLY = {"infinite loop", "memory bomb", "huge output"}
# Allowed by design (seed 003's "os (env vars only)"): the jail holds only listed variables.
POLICY_ALLOWS = {"read environment variables"}


def test_there_are_at_least_twenty_payloads() -> None:
    assert len(PAYLOADS) >= 20


@pytest.mark.parametrize("name", sorted(set(PAYLOADS) - RUNTIME_ONLY - POLICY_ALLOWS))
def test_the_policy_layer_refuses_the_payload_before_it_runs(name: str) -> None:
    assert check_policy(PAYLOADS[name]) != []


@pytest.mark.parametrize("name", sorted(set(PAYLOADS) - POLICY_ALLOWS))
async def test_with_the_policy_layer_nothing_gets_out(
    name: str, canaries: Canaries, sandbox: PythonSandbox
) -> None:
    with pytest.raises(SandboxError) as stopped:
        await sandbox.run(PAYLOADS[name], canaries.inputs(), {}, timeout=3)

    if name not in RUNTIME_ONLY:
        assert isinstance(stopped.value, SandboxViolation)
        assert stopped.value.layer == "policy"
    outputs = None  # nothing ran to completion
    assert canaries.harm(outputs) == []


@pytest.mark.parametrize("name", sorted(PAYLOADS))
async def test_the_jail_alone_contains_the_payload(
    name: str, canaries: Canaries, jail_only: PythonSandbox
) -> None:
    outputs: object = None
    # Contained: a violation, resource limit, timeout or the block's own error...
    with contextlib.suppress(SandboxError):
        outputs = (await jail_only.run(PAYLOADS[name], canaries.inputs(), {}, timeout=3)).outputs
    # ...or it finished, and the canaries show it got nothing out.
    assert canaries.harm(outputs) == []
    assert os.getpid() > 0  # the host process is still here and running this line


async def test_the_jail_hides_the_host_environment(
    canaries: Canaries, jail_only: PythonSandbox
) -> None:
    result = await jail_only.run(PAYLOADS["read environment variables"], canaries.inputs(), {})

    assert result.outputs["got"] is None
    assert canaries.env not in result.outputs["all"]
    assert set(result.outputs["all"]) <= {
        "PYTHONDONTWRITEBYTECODE",
        "LC_ALL",
        "HOME",
        "PWD",
        "LC_CTYPE",
    }


async def test_the_jail_reports_why_it_stopped_a_payload(
    canaries: Canaries, jail_only: PythonSandbox
) -> None:
    with pytest.raises(SandboxViolation) as refused:
        await jail_only.run(PAYLOADS["write outside the temp dir"], canaries.inputs(), {})
    assert refused.value.layer == "jail"


async def test_a_block_reads_only_the_environment_it_was_given(
    canaries: Canaries, sandbox: PythonSandbox
) -> None:
    source = PAYLOADS["read environment variables"]

    result = await sandbox.run(source, canaries.inputs(), {}, env={"CITY": "Lyon"})

    assert result.outputs == {"got": None, "all": {"CITY": "Lyon"}}
    assert canaries.harm(result.outputs) == []
