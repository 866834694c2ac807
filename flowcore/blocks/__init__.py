"""Blocks as data: definitions that one generic executor runs."""

from flowcore.blocks.builtins import builtin_blocks
from flowcore.blocks.definition import BlockDefinition, BlockExample, BlockKind
from flowcore.blocks.jsonschema import schema_problems
from flowcore.blocks.store import BlockNotFoundError, BlockStore, BlockStoreError, SqliteBlockStore

__all__ = [
    "BlockDefinition",
    "BlockExample",
    "BlockKind",
    "BlockNotFoundError",
    "BlockStore",
    "BlockStoreError",
    "SqliteBlockStore",
    "builtin_blocks",
    "schema_problems",
]
