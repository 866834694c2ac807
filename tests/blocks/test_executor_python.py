"""Spec: Python blocks from the registry run in the sandbox through the generic executor."""

from __future__ import annotations

from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore
from flowcore.errors import BlockOutputError, BlockTimeoutError
from flowcore.sandbox import PythonSandbox, SandboxLimits, SandboxViolation

from .harness import run_block

SCORE = """
import re

def execute(inputs, context):
    words = re.findall(r"[a-z]+", inputs["text"].lower())
    return {"score": sum(1 for w in words if w in ("refund", "broken")), "node": context["node"]}
"""


def python_block(source: str, **fields: object) -> BlockDefinition:
    data: dict[str, object] = {
        "id": "score",
        "name": "Score",
        "description": "Score a text",
        "kind": "python",
        "source_code": source,
        "input_keys": ["text"],
        "output_schema": {
            "type": "object",
            "properties": {"score": {"type": "integer"}, "node": {"type": "string"}},
            "required": ["score"],
        },
        "max_retries": 0,
    }
    data.update(fields)
    return BlockDefinition.from_data(data)


def executor() -> BlockExecutor:
    return BlockExecutor(sandbox=PythonSandbox(limits=SandboxLimits(cpu_seconds=1)), retry_wait=0)


async def test_a_python_block_runs_in_the_sandbox_and_records_its_isolation(
    block_store: SqliteBlockStore,
) -> None:
    block = await block_store.save(python_block(SCORE))

    run = await run_block(block, executor(), inputs={"text": "Broken! I want a refund."})

    assert run.outputs == {"score": 2, "node": "step"}
    (end,) = run.of_type("block_end")
    assert end.metadata["isolation"] == "bubblewrap"
    assert run.result.state["block_runs"][0]["metadata"]["isolation"] == "bubblewrap"


async def test_a_python_block_refused_by_the_policy_fails_its_node_with_the_reason(
    block_store: SqliteBlockStore,
) -> None:
    source = "import os\ndef execute(inputs, context):\n    return {'score': len(os.listdir('/'))}"
    block = await block_store.save(python_block(source))

    run = await run_block(block, executor(), inputs={"text": "x"})

    error = run.result.errors[0].cause
    assert isinstance(error, SandboxViolation)
    assert "os.listdir is not available in a sandboxed block" in str(error)


async def test_a_python_block_output_is_checked_against_its_schema(
    block_store: SqliteBlockStore,
) -> None:
    source = "def execute(inputs, context):\n    return {'score': 'high'}"
    block = await block_store.save(python_block(source))

    run = await run_block(block, executor(), inputs={"text": "x"})

    error = run.result.errors[0].cause
    assert isinstance(error, BlockOutputError)
    assert error.problems == ("output.score: expected integer, got string",)


async def test_a_python_block_that_runs_too_long_is_a_block_timeout(
    block_store: SqliteBlockStore,
) -> None:
    spin = "def execute(inputs, context):\n    while True:\n        pass\n"
    slow = python_block(spin, timeout_seconds=0.5)
    block = await block_store.save(slow)
    roomy = BlockExecutor(sandbox=PythonSandbox(limits=SandboxLimits(cpu_seconds=30)))

    run = await run_block(block, roomy, inputs={"text": "x"})

    error = run.result.errors[0].cause
    assert isinstance(error, BlockTimeoutError)
    assert error.seconds == 0.5


async def test_a_decision_block_may_pick_its_branch_in_python(
    block_store: SqliteBlockStore,
) -> None:
    block = await block_store.save(
        BlockDefinition(
            id="route_by_length",
            name="Route by length",
            description="Long texts go to review",
            kind="decision",
            input_keys=["text"],
            branches={"long": "review", "short": "reply"},
            source_code="def execute(inputs, context):\n"
            "    return {'branch': 'long' if len(inputs['text']) > 10 else 'short'}\n",
        )
    )

    outcome = await executor().execute(block, {"text": "a rather long message"})

    assert outcome.outputs == {"branch": "long"}
    assert outcome.branch == "long"
