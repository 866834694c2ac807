"""Blocks as data: definitions that one generic executor runs."""

from flowcore.blocks.builtins import builtin_blocks
from flowcore.blocks.definition import BlockDefinition, BlockExample, BlockKind
from flowcore.blocks.executor import BlockExecutor, BlockOutcome, CodeRunResult, CodeSandbox
from flowcore.blocks.jsonschema import schema_problems
from flowcore.blocks.node import BlockState, add_block, block_node, block_outputs, branch_router
from flowcore.blocks.prompting import parse_json_object, render_prompt
from flowcore.blocks.store import BlockNotFoundError, BlockStore, BlockStoreError, SqliteBlockStore

__all__ = [
    "BlockDefinition",
    "BlockExample",
    "BlockExecutor",
    "BlockKind",
    "BlockNotFoundError",
    "BlockOutcome",
    "BlockState",
    "BlockStore",
    "BlockStoreError",
    "CodeRunResult",
    "CodeSandbox",
    "SqliteBlockStore",
    "add_block",
    "block_node",
    "block_outputs",
    "branch_router",
    "builtin_blocks",
    "parse_json_object",
    "render_prompt",
    "schema_problems",
]
