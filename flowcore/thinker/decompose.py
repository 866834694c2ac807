"""Stages 1 and 2: Decompose the intent into required blocks, then Search the registry.

Decompose asks the model for ``required_blocks`` (seed 003's shape),
validated by :class:`~flowcore.thinker.models.DecomposeOutput`, with one
repair round. Search looks each one up with the hybrid
:class:`~flowcore.search.BlockSearch` (words and meaning), keeping a hit
only when it runs the same way (execution type) and fits the IO the spec
asks for (it needs no input the spec does not give, and produces every
output the spec names). Blocks found are reused; the rest go to Create.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.executor import BlockExecutor
from flowcore.blocks.store import BlockStore
from flowcore.errors import FlowcoreError
from flowcore.scheduler.context import NodeContext
from flowcore.search.block_search import BlockSearch
from flowcore.search.matching import execution_type_matches, io_compatible
from flowcore.thinker.events import emit
from flowcore.thinker.models import DecomposeOutput, RequiredBlock
from flowcore.thinker.stage import ask_stage

__all__ = ["SearchOutcome", "decompose", "find_blocks"]

DECOMPOSE_REPAIRS = 1
# Blocks that are part of the Thinker itself are never offered to a pipeline.
_PRIVATE_CATEGORIES = frozenset({"thinker"})


async def decompose(
    executor: BlockExecutor, block: BlockDefinition, intent: str, ctx: NodeContext
) -> list[RequiredBlock]:
    """The blocks the intent needs, validated (one repair round).

    Example:
        >>> # required = await decompose(executor, blocks["decompose"], "Count words", ctx)
    """
    answer = await ask_stage(
        executor,
        block,
        "decompose",
        {"intent": intent},
        DecomposeOutput,
        ctx,
        repairs=DECOMPOSE_REPAIRS,
    )
    required = answer.value.required_blocks
    emit(ctx, "decompose_blocks", blocks=[b.model_dump() for b in required])
    return required


@dataclass(slots=True)
class SearchOutcome:
    """Which required blocks the registry already has (by suggested id) and which it lacks.

    Example:
        >>> SearchOutcome().missing
        []
    """

    matched: dict[str, BlockDefinition] = field(default_factory=dict)
    missing: list[RequiredBlock] = field(default_factory=list)


def _fits(spec: RequiredBlock, block: BlockDefinition) -> bool:
    if block.category in _PRIVATE_CATEGORIES:
        return False
    if not execution_type_matches(spec.execution_type, block.kind):
        return False
    wanted = {"input_schema": spec.input_schema, "output_schema": spec.output_schema}
    have = {"input_schema": block.input_schema, "output_schema": block.output_schema}
    return bool(io_compatible(wanted, have))


async def find_blocks(
    required: list[RequiredBlock],
    store: BlockStore,
    search: BlockSearch | None,
    ctx: NodeContext,
) -> SearchOutcome:
    """Look each required block up; emit ``search_found`` or ``search_missing`` per block.

    Without a ``search`` (or when it fails) the store's own full-text search
    is used, with the same match validation.

    Example:
        >>> # outcome = await find_blocks(required, store, BlockSearch(store), ctx)
    """
    outcome = SearchOutcome()
    for spec in required:
        found = await _best(spec, store, search)
        if found is None:
            outcome.missing.append(spec)
            emit(
                ctx, "search_missing", suggested_id=spec.suggested_id, description=spec.description
            )
        else:
            block, mode = found
            outcome.matched[spec.suggested_id] = block
            emit(
                ctx,
                "search_found",
                suggested_id=spec.suggested_id,
                block_id=block.id,
                block_version=block.version,
                mode=mode,
            )
    return outcome


async def _best(
    spec: RequiredBlock, store: BlockStore, search: BlockSearch | None
) -> tuple[BlockDefinition, str] | None:
    if search is not None:
        try:
            hits = await search.search(
                spec.description,
                execution_type=spec.execution_type,
                inputs=spec.input_schema,
                outputs=spec.output_schema,
                limit=5,
                # No embedder: words alone, without a fallback warning on every Thinker run.
                mode="hybrid" if search.embedder is not None else "text",
            )
        except FlowcoreError:
            hits = []
        else:
            for hit in hits:
                if _fits(spec, hit.block):
                    return hit.block, hit.mode
            return None
    for block in await store.search(spec.description, limit=20):
        if _fits(spec, block):
            return block, "text"
    return None
