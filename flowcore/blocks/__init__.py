"""Blocks as data: definitions that one generic executor runs."""

from flowcore.blocks.builtins import builtin_blocks
from flowcore.blocks.definition import BlockDefinition, BlockExample, BlockKind
from flowcore.blocks.executor import BlockExecutor, BlockOutcome, CodeRunResult, CodeSandbox
from flowcore.blocks.jsonschema import schema_problems
from flowcore.blocks.node import BlockState, add_block, block_node, block_outputs, branch_router
from flowcore.blocks.prompting import AnswerParseError, aparse_json_object, parse_json_object
from flowcore.blocks.store import BlockNotFoundError, BlockStore, BlockStoreError, SqliteBlockStore
from flowcore.blocks.templates import (
    TemplateFormat,
    TemplateLimits,
    TemplateRenderError,
    arender_prompt,
    check_template,
    render_prompt,
)

__all__ = [
    "AnswerParseError",
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
    "TemplateFormat",
    "TemplateLimits",
    "TemplateRenderError",
    "add_block",
    "aparse_json_object",
    "arender_prompt",
    "block_node",
    "block_outputs",
    "branch_router",
    "builtin_blocks",
    "check_template",
    "parse_json_object",
    "render_prompt",
    "schema_problems",
]
