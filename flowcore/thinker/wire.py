"""Stage 4, Wire: the model assembles the Pipeline JSON; flowcore's validator judges it.

The model gets the intent and every block the pipeline may use (reused and
created), with their IO schemas, and answers ``{"pipeline": {...}}``. The
answer is checked by :func:`~flowcore.pipeline.validate_definition` (shape,
unknown blocks, references, missing inputs, type mismatches, seed 003's
``{{n1.x}}`` spelling, the sandbox policy of Python blocks), must use only
the blocks offered, and must compile to an engine graph. Every problem goes
back to the model, up to :data:`WIRE_REPAIRS` times.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.executor import BlockExecutor
from flowcore.blocks.store import BlockStore
from flowcore.pipeline.compiler import compile_pipeline
from flowcore.pipeline.model import Pipeline, PipelineError
from flowcore.pipeline.plan import as_pipeline
from flowcore.pipeline.validation import validate_definition
from flowcore.scheduler.context import NodeContext
from flowcore.thinker.events import emit
from flowcore.thinker.models import RequiredBlock, WireOutput
from flowcore.thinker.stage import ask_stage

__all__ = ["WIRE_REPAIRS", "block_card", "wire"]

WIRE_REPAIRS = 3


def block_card(block: BlockDefinition, spec: RequiredBlock | None) -> dict[str, Any]:
    """What Wire is told about one block it may use.

    Example:
        >>> from flowcore.blocks import builtin_blocks
        >>> block_card(builtin_blocks()[2], None)["block_id"]
        'summarize'
    """
    card: dict[str, Any] = {
        "block_id": block.id,
        "description": block.description,
        "kind": block.kind,
        "input_schema": block.input_schema,
        "output_schema": block.output_schema,
    }
    if spec is not None:
        card["for_step"] = spec.suggested_id
        card["depends_on"] = list(spec.depends_on)
    return card


async def wire(
    executor: BlockExecutor,
    prompt: BlockDefinition,
    intent: str,
    blocks: Sequence[tuple[RequiredBlock, BlockDefinition]],
    store: BlockStore,
    ctx: NodeContext,
    *,
    repairs: int = WIRE_REPAIRS,
) -> Pipeline:
    """The validated, compiling pipeline of ``blocks`` for ``intent``.

    Raises:
        StageFailedError: Still invalid after ``repairs`` repair rounds.

    Example:
        >>> # pipeline = await wire(executor, prompts["wire"], intent, pairs, store, ctx)
    """
    allowed = {block.id for _, block in blocks}
    built: list[Pipeline] = []

    async def check(answer: WireOutput) -> list[str]:
        definition, problems = await validate_definition(
            answer.pipeline, store, sandbox_policy=True
        )
        if definition is not None:
            pipeline = as_pipeline(definition)
            problems += [
                f"node {node.id!r}: block {node.block_id!r} is not one of the blocks offered "
                f"({', '.join(sorted(allowed))})"
                for node in pipeline.nodes
                if node.block_id not in allowed
            ]
            if not pipeline.nodes:
                problems.append("the pipeline has no nodes; add one per block")
            if not problems:
                try:
                    await compile_pipeline(pipeline, store, executor)
                except PipelineError as exc:
                    problems += list(exc.problems)
            if not problems:
                built.append(pipeline)
        if problems:
            emit(ctx, "wire_problems", problems=problems)
        return problems

    request = {
        "intent": intent,
        "blocks": [block_card(block, spec) for spec, block in blocks],
    }
    await ask_stage(
        executor, prompt, "wire", request, WireOutput, ctx, repairs=repairs, check=check
    )
    return built[-1]
