"""Spec: each stage validates the model's answer and repairs it with the problems fed back.

These specs script the model's answers one by one (flowcore's ScriptedProvider),
so each shows what the Thinker does with a given answer: what it refuses,
what it sends back, and what it saves.
"""

from __future__ import annotations

import json
from typing import Any

from flowcore.blocks import SqliteBlockStore
from flowcore.llm import ScriptedProvider
from flowcore.llm.offline import OfflineProvider
from flowcore.thinker import Faults, ThinkerModel

from .conftest import MakeThinker

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
COUNT = {
    "type": "object",
    "properties": {"word_count": {"type": "integer"}},
    "required": ["word_count"],
}
GOOD_SOURCE = (
    "async def execute(inputs, context):\n    return {'word_count': len(inputs['text'].split())}\n"
)


def _decompose(execution_type: str = "python") -> str:
    return json.dumps(
        {
            "required_blocks": [
                {
                    "suggested_id": "tally_words",
                    "description": "Tally the tokens of a sentence",
                    "execution_type": execution_type,
                    "depends_on": [],
                    "input_schema": TEXT,
                    "output_schema": COUNT,
                }
            ]
        }
    )


def _create(source: str, block_id: str = "tally_words") -> str:
    block = {
        "id": block_id,
        "name": "Tally words",
        "description": "Tally the tokens of a sentence",
        "kind": "python",
        "input_schema": TEXT,
        "output_schema": COUNT,
        "source_code": source,
    }
    return json.dumps({"block": block, "sample_inputs": {"text": "a b c"}})


def _wire(reference: str = "<<input.text>>", block_id: str = "tally_words") -> str:
    node = {"id": "n1", "block_id": block_id, "inputs": {"text": reference}}
    return json.dumps({"pipeline": {"id": "tally", "name": "Tally", "nodes": [node]}})


def _prompts(model: ScriptedProvider) -> list[str]:
    return [r.messages[-1].content for r in model.requests]


async def test_decompose_feeds_validation_errors_back_once(make_thinker: MakeThinker) -> None:
    model = ScriptedProvider([_decompose("code"), _decompose(), _create(GOOD_SOURCE), _wire()])
    result = await make_thinker(model).create("Tally the words of a sentence")
    assert result.status == "complete", result.log
    repair = _prompts(model)[1]
    assert "THINKER STAGE: decompose" in repair
    assert "required_blocks.0.execution_type: Input should be 'llm' or 'python'" in repair
    assert '"execution_type": "code"' in repair  # the answer that failed, shown back


async def test_decompose_gets_one_repair_round_only(make_thinker: MakeThinker) -> None:
    model = ScriptedProvider([_decompose("code"), _decompose("code")])
    result = await make_thinker(model).create("Tally the words of a sentence")
    assert result.status == "failed"
    assert result.pipeline_json is None
    assert any(line.startswith("decompose failed") for line in result.log)
    assert model.remaining == 0
    assert len(model.requests) == 2


async def test_a_created_block_is_tested_in_the_sandbox_and_saved_only_once_it_passes(
    make_thinker: MakeThinker, registry: SqliteBlockStore
) -> None:
    crash = "async def execute(inputs, context):\n    return {'word_count': 1 // 0}\n"
    model = ScriptedProvider([_decompose(), _create(crash), _create(GOOD_SOURCE), _wire()])
    result = await make_thinker(model).create("Tally the words of a sentence")
    assert result.status == "complete", result.log
    kinds = [e["type"] for e in result.events]
    failed = kinds.index("block_test_failed")
    assert failed < kinds.index("block_test_passed") < kinds.index("block_created")
    test_failure = result.events[failed]
    assert test_failure["stage"] == "test"
    assert "ZeroDivisionError" in test_failure["problems"][0]  # raised inside the jail
    assert "ZeroDivisionError" in _prompts(model)[2]  # and told to the model
    saved = await registry.get("tally_words")
    assert (saved.created_by, saved.version, saved.source_code) == ("thinker", 1, GOOD_SOURCE)


async def test_a_block_that_never_passes_is_reported_after_three_repairs_and_not_saved(
    make_thinker: MakeThinker, registry: SqliteBlockStore
) -> None:
    escape = "import subprocess\n" + GOOD_SOURCE
    model = ScriptedProvider([_decompose(), *[_create(escape)] * 4])
    result = await make_thinker(model).create("Tally the words of a sentence")
    assert result.status == "failed"
    assert result.failed == ("tally_words",)
    failure = next(e for e in result.events if e["type"] == "block_create_failed")
    assert failure["attempts"] == 4
    assert "import of 'subprocess' is not allowed" in failure["problems"][0]
    assert "tally_words" not in {b.id for b in await registry.list_blocks()}
    assert model.remaining == 0  # no wiring of a pipeline that lacks a block


async def test_a_draft_may_not_take_the_id_of_a_stored_block(make_thinker: MakeThinker) -> None:
    model = ScriptedProvider(
        [
            _decompose(),
            _create(GOOD_SOURCE, block_id="summarize"),
            _create(GOOD_SOURCE),
            _wire(),
        ]
    )
    result = await make_thinker(model).create("Tally the words of a sentence")
    assert result.created == ("tally_words",)
    assert "'summarize' is already a stored block" in _prompts(model)[2]


async def test_wire_repairs_what_flowcores_validator_lists(
    make_thinker: MakeThinker,
) -> None:
    model = ScriptedProvider(
        [
            _decompose(),
            _create(GOOD_SOURCE),
            _wire("{{input.text}}"),
            _wire(block_id="no_such_block"),
            _wire(),
        ]
    )
    result = await make_thinker(model).create("Tally the words of a sentence")
    assert result.status == "complete"
    prompts = _prompts(model)
    assert "seed 003's reference spelling" in prompts[3]
    assert "<<input.text>>" in prompts[3]
    assert "unknown block" in prompts[4] or "no block 'no_such_block'" in prompts[4]
    assert result.pipeline_json is not None
    assert result.pipeline_json["nodes"][0]["inputs"] == {"text": "<<input.text>>"}


async def test_wire_gives_up_after_three_repairs(make_thinker: MakeThinker) -> None:
    model = ScriptedProvider([_decompose(), _create(GOOD_SOURCE), *[_wire("{{input.text}}")] * 4])
    result = await make_thinker(model).create("Tally the words of a sentence")
    assert result.status == "failed"
    assert result.pipeline_json is None
    assert sum(1 for e in result.events if e["type"] == "wire_problems") == 4


async def test_an_existing_block_is_reused_when_search_finds_it_and_its_io_fits(
    make_thinker: MakeThinker,
) -> None:
    spec: dict[str, Any] = json.loads(_decompose("llm"))
    spec["required_blocks"][0].update(
        suggested_id="short_version",
        description="Summarize a text in a few sentences",
        output_schema={"type": "object", "properties": {"summary": {"type": "string"}}},
    )
    wired = _wire(block_id="summarize")
    model = ScriptedProvider([json.dumps(spec), wired])
    result = await make_thinker(model).create("Summarize a text")
    assert result.reused == ("summarize",)
    assert result.created == ()
    found = next(e for e in result.events if e["type"] == "search_found")
    assert (found["suggested_id"], found["block_id"]) == ("short_version", "summarize")


async def test_the_offline_model_only_corrects_itself_when_told_the_problems(
    make_thinker: MakeThinker,
) -> None:
    # Without the repair rounds' feedback every fault below would stand.
    model = ThinkerModel(
        fallback=OfflineProvider(), faults=Faults(decompose=1, create_bug=1, wire=1)
    )
    result = await make_thinker(model).create("Extract the numbers from a text, sort them")
    assert result.status == "complete", result.log
    refused = [e["stage"] for e in result.events if e["type"] == "validation" and not e["ok"]]
    assert refused == ["decompose", "create", "wire"]
