"""Spec: PythonSandbox runs a block's execute(inputs, context) in a jailed worker and says how."""

from __future__ import annotations

import logging

import pytest

from flowcore.sandbox import (
    PythonSandbox,
    SandboxExecutionError,
    SandboxResourceError,
    SandboxViolation,
    available_isolation,
    check_policy,
)
from flowcore.sandbox import jail as jail_module

from .conftest import LIMITS

WORD_COUNT = """
import json, re
from collections import Counter

async def execute(inputs, context):
    words = re.findall(r"[a-z]+", inputs["text"].lower())
    counts = Counter(words)
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
    total = 0
    for word in words:
        total += len(word)
    return {"top": [w for w, _ in top], "letters": total, "run": context["run_id"],
            "echo": json.loads(json.dumps({"ok": True}))}
"""


async def test_a_block_computes_on_its_inputs_and_context(sandbox: PythonSandbox) -> None:
    result = await sandbox.run(WORD_COUNT, {"text": "the cat and the hat"}, {"run_id": "r7"})

    assert result.outputs == {
        "top": ["the", "and"],
        "letters": 15,
        "run": "r7",
        "echo": {"ok": True},
    }
    assert result.isolation == available_isolation()
    assert result.duration > 0


def test_the_machine_running_the_tests_has_the_full_jail() -> None:
    # CI installs bubblewrap (.ci/run); a weaker jail here would leave the
    # escape suite testing less than it claims.
    assert available_isolation() == "bubblewrap"


async def test_async_execute_may_await_and_use_async_for(sandbox: PythonSandbox) -> None:
    source = (
        "async def pairs(n):\n"
        "    for i in range(n):\n"
        "        yield i, i * i\n"
        "async def execute(inputs, context):\n"
        "    total = 0\n"
        "    async for i, square in pairs(3):\n"
        "        total += square\n"
        "    return {'total': await helper(total)}\n"
        "async def helper(x):\n"
        "    return x\n"
    )
    assert check_policy(source) == []
    assert (await sandbox.run(source, {}, {})).outputs == {"total": 5}
    problems = check_policy("async def execute(i, c):\n    return {'x': [a async for a in i]}")
    assert any("async comprehensions are not allowed" in p for p in problems)


def test_an_import_outside_the_allowlist_names_the_module_and_the_allowlist() -> None:
    (problem,) = check_policy("import subprocess\ndef execute(inputs, context):\n    return {}")
    assert problem == (
        "line 1: import of 'subprocess' is not allowed; allowed: collections, datetime, "
        "functools, itertools, json, math, os, random, re, statistics"
    )


def test_httpx_is_allowed_only_for_blocks_that_declare_network_access() -> None:
    source = "import httpx\ndef execute(inputs, context):\n    return {}"
    assert "declare network=True" in check_policy(source)[0]
    assert check_policy(source, network=True) == []


async def test_a_refused_block_never_starts_a_worker(sandbox: PythonSandbox) -> None:
    with pytest.raises(SandboxViolation) as refused:
        await sandbox.run("def execute(inputs, context):\n    return open('/etc/passwd')", {}, {})

    assert refused.value.layer == "policy"
    assert "'open' is not available" in str(refused.value)


async def test_module_names_outside_the_allowlist_are_refused(sandbox: PythonSandbox) -> None:
    # json imports codecs; json.codecs.open would be a file opener.
    source = "import json\ndef execute(inputs, context):\n    return {'codecs': json.codecs}"

    with pytest.raises(SandboxViolation) as refused:
        await sandbox.run(source, {}, {})

    assert refused.value.problems == (
        "line 3: json.codecs is not available in a sandboxed block; "
        "json offers: JSONDecodeError, dumps, loads",
    )


async def test_an_exception_in_the_block_is_reported_with_its_type(
    sandbox: PythonSandbox,
) -> None:
    source = "def execute(inputs, context):\n    return {'x': inputs['missing']}"

    with pytest.raises(SandboxExecutionError) as failed:
        await sandbox.run(source, {}, {})

    assert failed.value.exc_type == "KeyError"
    assert "missing" in failed.value.detail


async def test_a_block_must_return_a_dict(sandbox: PythonSandbox) -> None:
    with pytest.raises(SandboxExecutionError, match="must return a dict, got list"):
        await sandbox.run("def execute(inputs, context):\n    return [1]", {}, {})


async def test_inputs_must_be_json_values(sandbox: PythonSandbox) -> None:
    with pytest.raises(SandboxExecutionError, match="JSON values"):
        await sandbox.run(WORD_COUNT, {"text": object()}, {})


async def test_a_memory_hungry_block_hits_the_memory_limit(sandbox: PythonSandbox) -> None:
    source = "def execute(inputs, context):\n    return {'x': len('a' * (2 * 10**9))}"

    # Roomy: on a busy machine the jail's start-up must not turn this into a timeout.
    with pytest.raises(SandboxResourceError) as hit:
        await sandbox.run(source, {}, {}, timeout=30)

    assert hit.value.kind == "memory"


async def test_the_rlimits_fallback_warns_once_and_is_recorded(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jail_module, "_WARNED", set())
    caplog.set_level(logging.WARNING, logger="flowcore.sandbox")
    weak = PythonSandbox(limits=LIMITS, isolation="rlimits")
    other = PythonSandbox(limits=LIMITS, isolation="rlimits")

    first = await weak.run(WORD_COUNT, {"text": "a b"}, {"run_id": "r"})
    await other.run(WORD_COUNT, {"text": "a b"}, {"run_id": "r"})

    assert first.isolation == "rlimits"
    warnings = [r for r in caplog.records if "WITHOUT bubblewrap" in r.getMessage()]
    assert len(warnings) == 1
    assert "rlimits isolation only" in warnings[0].getMessage()
