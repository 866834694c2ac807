"""Spec: a pipeline that cannot run is refused with every problem named at once."""

from __future__ import annotations

from typing import Any

import pytest

from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore
from flowcore.pipeline import Pipeline, PipelineError, compile_pipeline

COUNT = BlockDefinition(
    id="count",
    name="Count",
    description="Count words",
    kind="python",
    source_code="def execute(inputs, context):\n    return {'n': len(inputs['text'].split())}\n",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
    output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
)


async def problems_of(
    store: SqliteBlockStore, nodes: list[dict[str, Any]], **extra: Any
) -> tuple[str, ...]:
    await store.save(COUNT)
    pipeline = Pipeline.from_data({"id": "p", "name": "P", "nodes": nodes, **extra})
    with pytest.raises(PipelineError) as refused:
        await compile_pipeline(pipeline, store, BlockExecutor())
    assert str(refused.value).startswith("pipeline 'p' has")
    return refused.value.problems


async def test_an_unknown_block_is_named(block_store: SqliteBlockStore) -> None:
    (problem,) = await problems_of(block_store, [{"id": "n1", "block_id": "sumarize"}])
    assert problem.startswith("node 'n1': ")
    assert "sumarize" in problem


async def test_an_unknown_version_is_named(block_store: SqliteBlockStore) -> None:
    (problem,) = await problems_of(
        block_store,
        [{"id": "n1", "block_id": "count", "block_version": 7, "inputs": {"text": "x"}}],
    )
    assert problem.startswith("node 'n1': ")
    assert "7" in problem


async def test_a_cycle_is_refused_and_its_path_shown(block_store: SqliteBlockStore) -> None:
    nodes = [
        {"id": "a", "block_id": "count", "inputs": {"text": "x"}},
        {"id": "b", "block_id": "count", "inputs": {"text": "x"}},
    ]
    (problem,) = await problems_of(
        block_store, nodes, edges=[{"from": "a", "to": "b"}, {"from": "b", "to": "a"}]
    )
    assert problem.startswith("the pipeline has a cycle: ")
    assert "a -> b" in problem or "b -> a" in problem
    assert problem.endswith("(a loop is allowed only through a decision branch that leads back)")


async def test_a_reference_to_a_node_that_runs_later_is_named(
    block_store: SqliteBlockStore,
) -> None:
    nodes = [
        {"id": "a", "block_id": "count", "inputs": {"text": "<<b.n>>"}},
        {"id": "b", "block_id": "count", "inputs": {"text": "x"}},
    ]
    (problem,) = await problems_of(block_store, nodes, edges=[{"from": "a", "to": "b"}])
    assert "made by the reference <<b.n>> in node 'a', to a node that runs later" in problem


async def test_a_reference_to_an_unknown_node_lists_the_nodes(
    block_store: SqliteBlockStore,
) -> None:
    (problem,) = await problems_of(
        block_store, [{"id": "a", "block_id": "count", "inputs": {"text": "<<ghost.n>>"}}]
    )
    assert problem == (
        "node 'a': <<ghost.n>> refers to unknown node 'ghost' (nodes: a; or use input., "
        "state., memory., user.)"
    )


async def test_an_edge_to_an_unknown_node_is_named(block_store: SqliteBlockStore) -> None:
    (problem,) = await problems_of(
        block_store,
        [{"id": "a", "block_id": "count", "inputs": {"text": "x"}}],
        edges=[{"from": "a", "to": "z"}],
    )
    assert problem == "edge a -> z: unknown node 'z' (nodes: a)"


async def test_a_required_input_without_a_source_says_how_to_wire_it(
    block_store: SqliteBlockStore,
) -> None:
    (problem,) = await problems_of(block_store, [{"id": "a", "block_id": "count"}])
    assert problem == (
        "node 'a': required input 'text' of block 'count' has no source; wire it in inputs "
        '(e.g. "text": "<<input.text>>") or produce it upstream'
    )


async def test_an_input_fed_by_an_output_of_another_type_is_a_mismatch(
    block_store: SqliteBlockStore,
) -> None:
    nodes = [
        {"id": "a", "block_id": "count", "inputs": {"text": "x"}},
        {"id": "b", "block_id": "count", "inputs": {"text": "<<a.n>>"}},
    ]
    (problem,) = await problems_of(block_store, nodes)
    assert problem == (
        "node 'b': input 'text' expects string but <<a.n>> is integer (output of block 'count')"
    )


async def test_a_reference_to_an_output_the_block_does_not_produce_is_named(
    block_store: SqliteBlockStore,
) -> None:
    nodes = [
        {"id": "a", "block_id": "count", "inputs": {"text": "x"}},
        {"id": "b", "block_id": "count", "inputs": {"text": "<<a.words>>"}},
    ]
    (problem,) = await problems_of(block_store, nodes)
    assert problem == (
        "node 'b': <<a.words>> reads output 'words', which block 'count' does not produce "
        "(outputs: n)"
    )


async def test_every_problem_is_reported_at_once(block_store: SqliteBlockStore) -> None:
    problems = await problems_of(
        block_store,
        [
            {"id": "a", "block_id": "nope"},
            {"id": "b", "block_id": "count"},
            {"id": "c", "block_id": "count", "inputs": {"text": "<<ghost.x>>"}},
        ],
    )
    assert len(problems) == 3


def test_a_malformed_pipeline_document_names_each_field() -> None:
    with pytest.raises(PipelineError) as refused:
        Pipeline.from_data({"id": "p", "nodes": [{"id": "1bad", "block_id": "x"}]})
    problems = refused.value.problems
    assert any(p.startswith("name: ") for p in problems)
    assert any(
        p.startswith("nodes.0.id: node id '1bad' must start with a letter") for p in problems
    )
