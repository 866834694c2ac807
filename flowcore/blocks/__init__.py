"""Blocks as data: definitions that one generic executor runs."""

from flowcore.blocks.definition import BlockDefinition, BlockExample, BlockKind

__all__ = ["BlockDefinition", "BlockExample", "BlockKind"]
