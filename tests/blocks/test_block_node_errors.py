"""Spec: a block node's error says how often the block ran, not only the node's one attempt.

The block executor retries inside a single node attempt (``max_retries``),
and each attempt may ask the model twice (the answer, then one repair). A
node that called the model six times must not read "failed after 1 attempt"
alone.
"""

from __future__ import annotations

from flowcore.blocks import BlockDefinition, BlockExecutor
from flowcore.errors import BlockOutputError, NodeError
from flowcore.llm import ProviderRegistry, ScriptedProvider

from .harness import run_block

STUBBORN = BlockDefinition(
    id="stubborn",
    name="Stubborn",
    description="Answer with a number",
    kind="llm",
    input_keys=["question"],
    output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    prompt_template="{{ question }}",
    max_retries=2,
)


async def test_the_node_error_counts_the_block_attempts_behind_one_node_attempt() -> None:
    model = ScriptedProvider(["not json"] * 6)
    executor = BlockExecutor(providers=ProviderRegistry.single(model), retry_wait=0)

    run = await run_block(STUBBORN, executor, inputs={"question": "How many?"})

    assert run.result.status == "failed"
    assert len(model.requests) == 6  # 3 block attempts, each with one repair request
    error = run.result.errors[0]
    assert isinstance(error, NodeError)
    assert isinstance(error.cause, BlockOutputError)
    assert error.cause.attempts == 3
    assert "node 'step' failed after 1 attempt (its block tried 3 times)" in str(error)
