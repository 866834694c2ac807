"""Spec: a decision step may route back to an earlier node, making a bounded loop."""

from __future__ import annotations

from typing import Any

import pytest

from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.pipeline import Pipeline, PipelineError, compile_pipeline

PLAN = BlockDefinition(
    id="plan",
    name="Plan",
    description="Plan the next attempt",
    kind="llm",
    input_schema={"type": "object", "properties": {"goal": {"type": "string"}}},
    output_keys=["plan"],
    prompt_template="Plan for {{ goal }}",
)
CHECK = BlockDefinition(
    id="check",
    name="Check",
    description="Check the plan",
    kind="decision",
    input_schema={"type": "object", "properties": {"plan": {"type": "string"}}},
    prompt_template="Is this plan good? {{ plan }}",
    branches={"retry": "x", "done": "y"},
)
ANSWER = BlockDefinition(
    id="answer",
    name="Answer",
    description="Write the answer",
    kind="llm",
    output_keys=["answer"],
    prompt_template="Answer now.",
)

LOOP: dict[str, Any] = {
    "id": "loop",
    "name": "Loop",
    "nodes": [
        {"id": "planner", "block_id": "plan", "inputs": {"goal": "<<input.goal>>"}},
        {
            "id": "verifier",
            "block_id": "check",
            "inputs": {"plan": "<<planner.plan>>"},
            "branches": {"retry": "planner", "done": "writer"},
        },
        {"id": "writer", "block_id": "answer"},
    ],
}


async def save_blocks(store: SqliteBlockStore) -> None:
    for block in (PLAN, CHECK, ANSWER):
        await store.save(block)


async def test_a_branch_back_to_an_earlier_node_loops_until_another_branch_is_taken(
    block_store: SqliteBlockStore,
) -> None:
    await save_blocks(block_store)
    model = ScriptedProvider(
        [
            '{"plan": "p1"}',
            '{"branch": "retry"}',
            '{"plan": "p2"}',
            '{"branch": "done"}',
            '{"answer": "42"}',
        ]
    )
    executor = BlockExecutor(providers=ProviderRegistry.single(model))
    graph = await compile_pipeline(Pipeline.from_data(LOOP), block_store, executor)

    result = await graph.run({"goal": "g"})

    assert result.status == "completed"
    ran = [(r.node, r.pass_index) for r in result.node_runs if r.status == "completed"]
    assert ran == [
        ("load_memory", 1),
        ("planner", 1),
        ("verifier", 1),
        ("planner", 2),
        ("verifier", 2),
        ("writer", 2),
        ("save_memory", 2),
    ]
    assert result.state["results"]["planner"] == {"plan": "p2"}
    assert model.requests[3].messages[0].content == "Is this plan good? p2"


async def test_a_loop_that_never_exits_stops_at_the_recursion_limit(
    block_store: SqliteBlockStore,
) -> None:
    await save_blocks(block_store)
    model = ScriptedProvider(['{"plan": "p"}', '{"branch": "retry"}'] * 10)
    executor = BlockExecutor(providers=ProviderRegistry.single(model))
    graph = await compile_pipeline(Pipeline.from_data(LOOP), block_store, executor)

    result = await graph.run({"goal": "g"}, recursion_limit=7)

    assert result.status == "failed"
    assert type(result.errors[0]).__name__ == "GraphRecursionError"


async def test_branches_on_a_step_whose_block_is_not_a_decision_are_refused(
    block_store: SqliteBlockStore,
) -> None:
    await save_blocks(block_store)
    data = {
        **LOOP,
        "nodes": [
            {**LOOP["nodes"][0], "branches": {"again": "writer"}},
            *LOOP["nodes"][1:],
        ],
    }
    with pytest.raises(PipelineError) as refused:
        await compile_pipeline(Pipeline.from_data(data), block_store, BlockExecutor())
    (problem,) = refused.value.problems
    assert problem.startswith("node 'planner': branches only apply to decision blocks")
    assert "'plan' is a 'llm' block" in problem


async def test_a_branch_to_an_unknown_node_names_the_branch_and_the_nodes(
    block_store: SqliteBlockStore,
) -> None:
    await save_blocks(block_store)
    data = {
        **LOOP,
        "nodes": [
            LOOP["nodes"][0],
            {**LOOP["nodes"][1], "branches": {"retry": "planer", "done": "writer"}},
            LOOP["nodes"][2],
        ],
    }
    with pytest.raises(PipelineError) as refused:
        await compile_pipeline(Pipeline.from_data(data), block_store, BlockExecutor())
    (problem,) = refused.value.problems
    assert "decision branch 'retry' leads to unknown node 'planer'" in problem
    assert "nodes: planner, verifier, writer" in problem


async def test_a_branch_target_reading_a_node_before_the_decision_runs_only_when_picked(
    block_store: SqliteBlockStore,
) -> None:
    await save_blocks(block_store)
    data = {
        "id": "pick",
        "name": "Pick",
        "nodes": [
            {"id": "planner", "block_id": "plan", "inputs": {"goal": "<<input.goal>>"}},
            {
                "id": "verifier",
                "block_id": "check",
                "inputs": {"plan": "<<planner.plan>>"},
                "branches": {"retry": "again", "done": "writer"},
            },
            {"id": "again", "block_id": "plan", "inputs": {"goal": "<<planner.plan>>"}},
            {"id": "writer", "block_id": "answer"},
        ],
    }
    model = ScriptedProvider(['{"plan": "p1"}', '{"branch": "done"}', '{"answer": "42"}'])
    executor = BlockExecutor(providers=ProviderRegistry.single(model))
    graph = await compile_pipeline(Pipeline.from_data(data), block_store, executor)

    result = await graph.run({"goal": "g"})

    assert result.status == "completed"
    assert [r.node for r in result.node_runs if r.status == "skipped"] == ["again"]


async def test_a_branch_target_reading_a_node_off_the_decision_path_is_refused(
    block_store: SqliteBlockStore,
) -> None:
    await save_blocks(block_store)
    data = {
        "id": "pick",
        "name": "Pick",
        "nodes": [
            {"id": "side", "block_id": "plan", "inputs": {"goal": "x"}},
            {
                "id": "verifier",
                "block_id": "check",
                "inputs": {"plan": "p"},
                "branches": {"retry": "again", "done": "writer"},
            },
            {"id": "again", "block_id": "plan", "inputs": {"goal": "<<side.plan>>"}},
            {"id": "writer", "block_id": "answer"},
        ],
    }
    with pytest.raises(PipelineError) as refused:
        await compile_pipeline(Pipeline.from_data(data), block_store, BlockExecutor())
    (problem,) = refused.value.problems
    assert problem.startswith("node 'again' runs only when decision 'verifier' picks it")
    assert "add an edge side -> verifier" in problem
