"""Stage 3, Create: the model writes a missing block; only a tested block is saved.

For each required block the registry lacks, the model answers a block
definition and sample inputs. The draft must then pass, in order:

1. flowcore's block definition checks (a Python block's source parses and
   defines ``execute``; an LLM block's template parses), ``compile()``;
2. the block's IO must fit the spec (no extra required input, every output);
3. for Python, the sandbox's policy check (allowed imports, no escapes);
4. a test run on ``sample_inputs`` through the block executor: Python runs
   in the real sandbox jail, an LLM block makes one sample model call, and
   the outputs are checked against the block's ``output_schema``.

The first failing check's problems go back to the model, up to
:data:`CREATE_REPAIRS` times. A block that passes is saved to the registry
with ``created_by: thinker``; one that never passes is reported
(``block_create_failed``) and nothing is saved.
"""

from __future__ import annotations

import asyncio
from typing import Any

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.executor import BlockExecutor
from flowcore.blocks.store import BlockNotFoundError, BlockStore
from flowcore.errors import BlockDefinitionError, FlowcoreError
from flowcore.llm.errors import ProviderError
from flowcore.sandbox import SandboxError, check_policy
from flowcore.scheduler.context import NodeContext
from flowcore.search.matching import io_compatible
from flowcore.thinker.events import emit
from flowcore.thinker.models import CreatedBlockDraft, RequiredBlock
from flowcore.thinker.stage import StageFailedError, ask_stage

__all__ = ["CREATE_REPAIRS", "check_draft", "create_block"]

CREATE_REPAIRS = 3


def _code_problems(source: str, network: bool) -> list[str]:
    """What stops ``source`` before it runs: a compile error, else the sandbox policy's refusals."""
    try:
        compile(source, "<block>", "exec")
    except SyntaxError as exc:
        return [f"block.source_code: line {exc.lineno}: {exc.msg}"]
    return [f"sandbox policy: {p}" for p in check_policy(source, network=network)]


async def check_draft(
    draft: CreatedBlockDraft, spec: RequiredBlock, store: BlockStore
) -> tuple[BlockDefinition | None, list[str]]:
    """The draft as a block, or the problems that stop it before any test runs.

    Example:
        >>> # block, problems = await check_draft(draft, spec, store)
    """
    data: dict[str, Any] = {**draft.block, "created_by": "thinker", "version": 1}
    if "id" not in data and "block_id" not in data:
        data["id"] = spec.suggested_id
    try:
        block = BlockDefinition.from_data(data)
    except BlockDefinitionError as exc:
        return None, [f"block.{p}" for p in exc.problems] or [str(exc)]
    if block.kind not in ("python", "llm"):
        return None, [f"block.kind: {block.kind!r} cannot be created here; use 'python' or 'llm'"]
    try:
        taken = await store.get(block.id)
    except BlockNotFoundError:
        taken = None
    if taken is not None:
        return None, [
            f"block.id: {block.id!r} is already a stored block that does something else; "
            "pick another id"
        ]
    wanted = {"input_schema": spec.input_schema, "output_schema": spec.output_schema}
    have = {"input_schema": block.input_schema, "output_schema": block.output_schema}
    fits = io_compatible(wanted, have)
    if not fits:
        return None, [f"block IO: {p}" for p in fits.problems]
    if block.source_code is not None:
        try:
            # Compiling and the policy's walk of the tree are CPU work: off the event loop.
            problems = await asyncio.to_thread(_code_problems, block.source_code, block.network)
        except SandboxError as exc:
            return None, [f"sandbox: {exc}"]
        if problems:
            return None, problems
    return block, []


async def _test(
    executor: BlockExecutor,
    block: BlockDefinition,
    sample: dict[str, Any],
    ctx: NodeContext,
) -> list[str]:
    # One attempt: a retry would hide a flaky block from its test.
    trial = block.model_copy(update={"max_retries": 0})
    try:
        outcome = await executor.execute(trial, sample, ctx)
    except (FlowcoreError, ProviderError) as exc:
        return [f"test on sample_inputs {sample!r} failed: {exc}"]
    if not outcome.outputs:
        return [f"test on sample_inputs {sample!r} returned no outputs"]
    return []


async def create_block(
    executor: BlockExecutor,
    prompt: BlockDefinition,
    spec: RequiredBlock,
    store: BlockStore,
    ctx: NodeContext,
    *,
    repairs: int = CREATE_REPAIRS,
) -> BlockDefinition | None:
    """Create, test and save the block ``spec`` asks for; None if every round failed.

    Example:
        >>> # block = await create_block(executor, blocks["create"], spec, store, ctx)
    """
    emit(ctx, "creating_block", suggested_id=spec.suggested_id, description=spec.description)
    passed: list[BlockDefinition] = []

    async def check(draft: CreatedBlockDraft) -> list[str]:
        block, problems = await check_draft(draft, spec, store)
        if block is None:
            emit(
                ctx,
                "block_test_failed",
                suggested_id=spec.suggested_id,
                stage="check",
                problems=problems,
            )
            return problems
        problems = await _test(executor, block, dict(draft.sample_inputs), ctx)
        if problems:
            emit(
                ctx,
                "block_test_failed",
                suggested_id=spec.suggested_id,
                block_id=block.id,
                stage="test",
                problems=problems,
            )
            return problems
        emit(ctx, "block_test_passed", suggested_id=spec.suggested_id, block_id=block.id)
        passed.append(block)
        return []

    request = {"spec": spec.model_dump()}
    try:
        await ask_stage(
            executor,
            prompt,
            "create",
            request,
            CreatedBlockDraft,
            ctx,
            repairs=repairs,
            check=check,
        )
    except StageFailedError as exc:
        emit(
            ctx,
            "block_create_failed",
            suggested_id=spec.suggested_id,
            attempts=exc.rounds,
            problems=list(exc.problems),
        )
        return None
    saved = await store.save(passed[-1])
    emit(
        ctx,
        "block_created",
        suggested_id=spec.suggested_id,
        block=saved.model_dump(mode="json", exclude_none=True),
    )
    return saved
