"""Spec: definitions and run inputs that no store can hold are refused before anything runs.

A pipeline document nested too deeply to read, or holding NaN, lone
surrogates or ints too long for text, is a ``PipelineError``; such a run
input (or user id) is an ``InvalidInputError`` naming its key path, and the
run leaves no checkpoint and no history record. A run whose block produced
such a value is still recorded.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore
from flowcore.checkpoint import SqliteCheckpointer
from flowcore.errors import InvalidInputError
from flowcore.history import SqliteRunHistory
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.pipeline import Pipeline, PipelineError, PipelineRunner, TaskPlan, load_definition

WRITE = BlockDefinition(
    id="write",
    name="Write",
    description="Write a line about a topic",
    kind="llm",
    input_keys=["topic"],
    output_keys=["line"],
    prompt_template="One line about {{ topic }}",
)
LINE = Pipeline.from_data(
    {
        "id": "line",
        "name": "Line",
        "nodes": [{"id": "n1", "block_id": "write", "inputs": {"topic": "<<input.topic>>"}}],
    }
)


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"id": "p", "name": "P", "nodes": ' + "[" * 5000 + "]" * 5000 + "}", "nests deeper"),
        ('{"id": "p", "name": "P", "nodes": [], "version": ' + "1" * 5000 + "}", "4300"),
        (b'{"id": "p", "name": "P", "nodes": []}\xff', "not valid JSON"),
        ('{"id": "p", "name": "P", "nodes": [], "user_prompt": NaN}', "NaN"),
        ('{"id": "p\\ud800", "name": "P", "nodes": []}', "lone surrogate"),
    ],
    ids=["deep", "huge int", "bad utf-8", "nan", "surrogate"],
)
def test_a_document_no_store_can_hold_is_a_pipeline_error(text: str | bytes, words: str) -> None:
    for load in (Pipeline.from_json, TaskPlan.from_json, load_definition):
        with pytest.raises(PipelineError, match=words):
            load(text)


@pytest.mark.parametrize("data", [None, 42, ["id"]])
def test_json_text_must_be_text(data: Any) -> None:
    with pytest.raises(PipelineError, match="read from JSON text"):
        Pipeline.from_json(data)


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[tuple[Any, Any, Any]]:
    db = tmp_path / "flowcore.db"
    async with (
        SqliteBlockStore(db) as blocks,
        SqliteCheckpointer(db) as checkpoints,
        SqliteRunHistory(db) as history,
    ):
        await blocks.save(WRITE)
        yield blocks, checkpoints, history


def runner_for(stores: tuple[Any, Any, Any], answers: list[str]) -> PipelineRunner:
    blocks, checkpoints, history = stores
    return PipelineRunner(
        blocks=blocks,
        executor=BlockExecutor(
            providers=ProviderRegistry.single(ScriptedProvider(answers)), retry_wait=0
        ),
        checkpointer=checkpoints,
        history=history,
    )


@pytest.mark.parametrize(
    ("inputs", "user", "words"),
    [
        ({"topic": math.nan}, "ada", "input.topic"),
        ({"topic": ["ok", "caf\udce9"]}, "ada", r"input\.topic\[1\]"),
        ({"topic": {"deep": nested(120)}}, "ada", "levels deep"),
        ({"topic": object()}, "ada", "not JSON data"),
        ({"topic": "ducks"}, "ad\udce9", "user_id"),
        ({"topic": "ducks"}, 7, "user_id must be a non-empty string"),
    ],
    ids=["nan", "surrogate", "deep", "object", "surrogate user", "int user"],
)
async def test_a_run_input_no_store_can_hold_is_refused_and_leaves_nothing(
    stores: tuple[Any, Any, Any], inputs: dict[str, Any], user: Any, words: str
) -> None:
    _, checkpoints, history = stores
    with pytest.raises(InvalidInputError, match=words):
        await runner_for(stores, ['{"line": "x"}']).run(
            LINE, inputs, user_id=user, thread_id="line-1"
        )
    assert await checkpoints.get("line-1") is None
    assert await history.list() == []


async def test_a_run_whose_block_produced_an_unstorable_value_is_still_recorded(
    stores: tuple[Any, Any, Any],
) -> None:
    _, _, history = stores
    # The answer is valid JSON, and its escape decodes to a lone surrogate.
    result = await runner_for(stores, ['{"line": "\\ud800"}']).run(
        LINE, {"topic": "ducks"}, user_id="ada"
    )
    assert result.status == "failed"
    (record,) = await history.list()
    assert record.run_id == result.run_id
    assert record.status == "failed"
    assert any("lone surrogate" in error for error in record.errors)
