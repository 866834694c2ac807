"""Fuzz spec: malformed block definitions, block files and inputs are refused typed.

``BlockDefinition.from_data`` takes whatever a registry file or a model
wrote; ``SqliteBlockStore.import_json`` takes whatever text a block file
holds (cut short, spliced, nested past any limit, ints of thousands of
digits, lone surrogates, NaN); ``BlockExecutor.execute`` takes whatever
inputs a pipeline wired into the block. Each succeeds or raises a flowcore
error (``BlockDefinitionError``, ``BlockInputError``,
``BlockConfigurationError``, ...) within the limit.
Prompt templates stay plain here: template failures are the prompting
module's to type.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.memory import InMemoryStore

from .harness import Judge, fuzz_settings
from .strategies import (
    ODD_SCALARS,
    ODD_VALUES,
    TEXT,
    WORDS,
    block_documents,
    deep_values,
    document_texts,
)

INPUTS = st.one_of(
    st.dictionaries(WORDS, ODD_VALUES, max_size=3),
    st.fixed_dictionaries({"text": st.one_of(TEXT, ODD_SCALARS, deep_values())}),
    st.dictionaries(st.one_of(TEXT, st.integers()), TEXT, max_size=2),
)
ANSWERS = st.one_of(
    st.just('{"summary": "ok", "branch": "yes", "result": 1}'),
    st.just('{"summary": "\\ud800"}'),
    st.just("not json at all"),
    st.just('{"a": ' + "[" * 3000 + "]" * 3000 + "}"),
    TEXT,
)


def test_blocks_of_any_definition_run_on_any_input_or_are_refused_typed() -> None:
    judge = Judge("BlockDefinition.from_data, BlockExecutor.execute")

    async def check(data: Any, inputs: Any, answer: str) -> None:
        block = judge.call(lambda: BlockDefinition.from_data(data))
        if block is None or block.kind == "python":
            return  # Python blocks run in the sandbox, which has fuzz payloads of its own
        executor = BlockExecutor(
            providers=ProviderRegistry.single(ScriptedProvider([answer] * 4)),
            memory=InMemoryStore(),
            retry_wait=0,
        )
        await judge.acall(lambda: executor.execute(block, inputs))

    with asyncio.Runner() as runner:

        @fuzz_settings(200)
        @given(data=block_documents(), inputs=INPUTS, answer=ANSWERS)
        def each(data: Any, inputs: Any, answer: str) -> None:
            runner.run(check(data, inputs, answer))

        each()


# Valid but for their text, which may hold lone surrogates: some imports must succeed.
PLAIN_BLOCKS = st.builds(
    lambda block_id, version, name, description: {
        "id": block_id,
        "version": version,
        "name": name or "Block",
        "description": description or "does a thing",
        "kind": "tool",
        "tool": "http_get",
    },
    # Mostly fresh ids; a repeated id and version with other content is a typed conflict.
    st.one_of(st.just("fetch"), st.integers(0, 10**6).map(lambda n: f"fetch_{n}")),
    st.integers(1, 3),
    st.one_of(st.just("Fetch"), TEXT),
    st.one_of(st.just("Fetch a page"), TEXT),
)
EXPORTS = st.builds(
    lambda blocks: {"format": "flowcore-blocks", "version": 1, "blocks": blocks},
    st.one_of(
        st.lists(PLAIN_BLOCKS, max_size=3),
        st.lists(st.one_of(PLAIN_BLOCKS, block_documents()), max_size=3),
        ODD_VALUES,
    ),
)
# Raw JSON text no Python value prints as: JSON's own parser must meet it.
HOSTILE_FIELDS = st.sampled_from(
    [
        "1" * 4_301,
        "-" + "9" * 6_000,
        '"\\ud800"',
        "NaN",
        "[" * 150 + "]" * 150,
        '{"a": ' * 3_000 + "{}" + "}" * 3_000,
    ]
)


@st.composite
def block_files(draw: st.DrawFn) -> Any:
    """The text of a block file: an export, whole or mangled, or a field set to hostile JSON."""
    how = draw(st.sampled_from(["export", "mangled", "hostile"]))
    if how == "export":
        return json.dumps({"format": "flowcore-blocks", "blocks": draw(st.lists(PLAIN_BLOCKS))})
    if how == "mangled":
        return draw(document_texts(EXPORTS))
    try:
        block = json.dumps(draw(st.one_of(PLAIN_BLOCKS, block_documents())), default=repr)
    except (ValueError, RecursionError):  # an int of thousands of digits, or a deep value
        block = '{"id": "deep"}'
    field = draw(st.sampled_from(["input_schema", "timeout_seconds", "description", "id", "x"]))
    block = block[:-1] + f', "{field}": {draw(HOSTILE_FIELDS)}}}' if block != "{}" else block
    return '{"format": "flowcore-blocks", "blocks": [' + block + "]}"


def test_block_files_of_any_shape_import_or_are_refused_typed(tmp_path: Path) -> None:
    judge = Judge("SqliteBlockStore.import_json")

    with asyncio.Runner() as runner:
        store = SqliteBlockStore(tmp_path / "blocks.db", seed_builtins=False)
        runner.run(store.open())
        try:

            @fuzz_settings(150)
            @given(text=block_files())
            def each(text: Any) -> None:
                added = runner.run(judge.acall(lambda: store.import_json(text)))
                assert added is None or added >= 0

            each()
        finally:
            runner.run(store.aclose())
