"""Checking a pipeline or task plan document in one pass, every stage at once.

A definition is checked in stages: its JSON shape (field types, how a plan's
steps fit together), the blocks its nodes name, then the graph against those
blocks (references, inputs, types). Raising at the first stage that fails
makes a user fix problems one round at a time: an unknown block only shows
up after the ``depends_on`` typo is fixed. :func:`validate_definition` runs
every stage it can and returns all their problems together; when the shape
is wrong it still looks up each block that a node or step names. With
``sandbox_policy=True`` it also runs each Python block's source through the
sandbox's policy check, so a block the sandbox would refuse at run time is
reported before anything runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from flowcore._shown import shown
from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.store import BlockNotFoundError, BlockStore
from flowcore.pipeline.compiler import check_pipeline, load_pipeline_blocks
from flowcore.pipeline.model import Pipeline, PipelineError
from flowcore.pipeline.plan import TaskPlan, as_pipeline, load_definition
from flowcore.sandbox import SandboxUnavailableError, check_policy

__all__ = ["load_checked_definition", "validate_definition"]


async def validate_definition(
    data: Any, store: BlockStore, *, sandbox_policy: bool = False
) -> tuple[Pipeline | TaskPlan | None, list[str]]:
    """The definition in ``data`` (None if it cannot be built) and every problem found.

    ``data`` is parsed JSON (or JSON text) of a pipeline or a task plan.
    ``sandbox_policy`` adds the problems the Python sandbox's policy finds
    in each Python block (a missing sandbox extra is one problem too).

    Example:
        >>> # definition, problems = await validate_definition(json.load(f), store)
        >>> # for problem in problems: print(problem)
    """
    try:
        definition = load_definition(data)
    except PipelineError as exc:
        return None, [*exc.problems, *await _named_block_problems(data, store)]
    pipeline = as_pipeline(definition)
    blocks, problems = await load_pipeline_blocks(pipeline, store)
    problems += check_pipeline(pipeline, blocks)
    if sandbox_policy:
        for node in pipeline.nodes:
            if node.id in blocks:
                problems += await _policy_problems(node.id, blocks[node.id])
    return definition, problems


async def _policy_problems(node: str, block: BlockDefinition) -> list[str]:
    """What the sandbox's policy would refuse in ``block``'s Python source, per line."""
    if block.source_code is None:
        return []
    try:
        # Parsing and compiling the source is CPU work: off the event loop.
        found = await asyncio.to_thread(check_policy, block.source_code, network=block.network)
    except SandboxUnavailableError as exc:
        return [f"node {shown(node)}: block {shown(block.id)} runs Python, but {exc}"]
    return [
        f"node {shown(node)}: the Python sandbox would refuse block {shown(block.id)}: {problem}"
        for problem in found
    ]


async def load_checked_definition(data: Any, store: BlockStore) -> Pipeline | TaskPlan:
    """The definition in ``data``, or a :class:`PipelineError` listing every problem of every stage.

    Example:
        >>> # plan = await load_checked_definition(json.load(f), store)
    """
    definition, problems = await validate_definition(data, store)
    if problems or definition is None:
        name = None
        if isinstance(data, Mapping):
            name = data.get("id") or data.get("plan_id")
        raise PipelineError(problems, pipeline=name if isinstance(name, str) else None)
    return definition


async def _named_block_problems(data: Any, store: BlockStore) -> list[str]:
    """A problem per block a malformed definition names that the store does not hold."""
    if not isinstance(data, Mapping):
        return []
    items = data.get("steps") if "steps" in data else data.get("nodes")
    if not isinstance(items, list | tuple):
        return []
    problems: list[str] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        node = item.get("step_id", item.get("id"))
        block = item.get("block_id")
        version = item.get("block_version")
        if not isinstance(block, str) or not block or not _storable_text(block):
            continue  # the shape check reported it
        if version is not None and (type(version) is not int or version < 1):
            version = None  # ditto; the latest version still tells whether the block exists
        try:
            await store.get(block, version)
        except BlockNotFoundError as exc:
            problems.append(f"node {shown(node)}: {exc}")
    return problems


def _storable_text(text: str) -> bool:
    """Whether ``text`` can be looked up at all (a lone surrogate cannot be encoded)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
