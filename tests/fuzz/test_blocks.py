"""Fuzz spec: malformed block definitions and inputs are refused typed by the block executor.

``BlockDefinition.from_data`` takes whatever a registry file or a model
wrote; ``BlockExecutor.execute`` takes whatever inputs a pipeline wired into
the block. Either succeeds or raises a flowcore error (``BlockDefinitionError``,
``BlockInputError``, ``BlockConfigurationError``, ...) within the limit.
Prompt templates stay plain here: template failures are the prompting
module's to type.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from flowcore.blocks import BlockDefinition, BlockExecutor
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.memory import InMemoryStore

from .harness import Judge, fuzz_settings
from .strategies import ODD_SCALARS, ODD_VALUES, TEXT, WORDS, block_documents, deep_values

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
