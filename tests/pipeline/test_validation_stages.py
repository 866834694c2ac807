"""Spec: one check reports the problems of every stage, and seed 003's references are not text.

A definition is checked in stages (its shape, the blocks it names, the graph
against those blocks). A user should see every problem in one report, not
one stage per round; and a reference written ``{{n1.field}}`` (seed 003's
spelling) is a problem naming ``<<n1.field>>``, never text a block receives.
"""

from __future__ import annotations

from typing import Any

import pytest

from flowcore.blocks import BlockExecutor, SqliteBlockStore
from flowcore.pipeline import (
    Pipeline,
    PipelineError,
    compile_pipeline,
    load_checked_definition,
    validate_definition,
)

from .test_validation import COUNT

# Seed 000's plan shape with two mistakes of different stages: a depends_on typo (the
# plan's structure) and a block that is not in the registry.
TWO_STAGES: dict[str, Any] = {
    "plan_id": "lunch",
    "entry_step_id": "step_1",
    "steps": [
        {"step_id": "step_1", "block_id": "count", "inputs": {"text": "<<input.request>>"}},
        {"step_id": "step_2", "block_id": "open_uber_eatz", "depends_on": ["step_l"]},
    ],
}


async def test_a_structure_problem_and_an_unknown_block_are_reported_together(
    block_store: SqliteBlockStore,
) -> None:
    await block_store.save(COUNT)

    definition, problems = await validate_definition(TWO_STAGES, block_store)

    assert definition is None
    assert any("depends_on names unknown step 'step_l'" in p for p in problems)
    assert any(p.startswith("node 'step_2': ") and "open_uber_eatz" in p for p in problems), (
        problems
    )
    with pytest.raises(PipelineError) as refused:
        await load_checked_definition(TWO_STAGES, block_store)
    assert refused.value.problems == tuple(problems)
    assert refused.value.pipeline == "lunch"


async def test_graph_problems_and_unknown_blocks_of_a_well_formed_definition_come_together(
    block_store: SqliteBlockStore,
) -> None:
    await block_store.save(COUNT)
    data = {
        "id": "p",
        "name": "P",
        "nodes": [
            {"id": "n1", "block_id": "count", "inputs": {"text": "<<n9.text>>"}},
            {"id": "n2", "block_id": "nosuch"},
        ],
    }

    definition, problems = await validate_definition(data, block_store)

    assert isinstance(definition, Pipeline)
    assert len(problems) == 2
    assert "nosuch" in problems[0]
    assert "<<n9.text>> refers to unknown node 'n9'" in problems[1]


async def test_a_valid_definition_has_no_problems(block_store: SqliteBlockStore) -> None:
    await block_store.save(COUNT)
    data = {**TWO_STAGES, "steps": TWO_STAGES["steps"][:1]}
    definition = await load_checked_definition(data, block_store)
    assert definition.model_dump()["plan_id"] == "lunch"


@pytest.mark.parametrize(
    ("value", "where", "fix"),
    [
        ("{{n1.n}}", "input 'text'", "<<n1.n>>"),
        ("Count {{ n1.n }} words", "input 'text'", "<<n1.n>>"),
        ({"deep": ["x", "{{input.doc}}"]}, "input 'text.deep.1'", "<<input.doc>>"),
    ],
)
async def test_a_seed_003_reference_is_a_problem_naming_the_flowcore_spelling(
    block_store: SqliteBlockStore, value: Any, where: str, fix: str
) -> None:
    await block_store.save(COUNT)
    pipeline = Pipeline.from_data(
        {
            "id": "p",
            "name": "P",
            "nodes": [
                {"id": "n1", "block_id": "count", "inputs": {"text": "a b"}},
                {"id": "n2", "block_id": "count", "inputs": {"text": value}},
            ],
        }
    )
    with pytest.raises(PipelineError) as refused:
        await compile_pipeline(pipeline, block_store, BlockExecutor())
    (problem,) = refused.value.problems
    assert problem.startswith(f"node 'n2': {where} holds {{{{")
    assert "seed 003's reference spelling" in problem
    assert problem.endswith(f"write {fix}")


async def test_braces_that_are_not_a_reference_stay_text(block_store: SqliteBlockStore) -> None:
    await block_store.save(COUNT)
    pipeline = Pipeline.from_data(
        {
            "id": "p",
            "name": "P",
            "nodes": [{"id": "n1", "block_id": "count", "inputs": {"text": "{{ name }} {x}"}}],
        }
    )
    graph = await compile_pipeline(pipeline, block_store, BlockExecutor())
    assert graph.name == "p"


async def test_a_block_id_that_is_not_text_is_reported_and_not_looked_up(
    block_store: SqliteBlockStore,
) -> None:
    await block_store.save(COUNT)
    bad = {"step_id": "b", "block_id": "\ud800", "depends_on": ["step_1"]}
    data = {**TWO_STAGES, "steps": [TWO_STAGES["steps"][0], bad]}

    definition, problems = await validate_definition(data, block_store)

    assert definition is None
    (problem,) = problems  # the store is never asked for a block it cannot hold
    assert problem.startswith("cannot store task plan.steps[1].block_id: ")
