"""Spec: a Pipeline of stored blocks compiles to one engine graph and runs end to end."""

from __future__ import annotations

from pathlib import Path

from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.memory import MemoryManager, SqliteStore
from flowcore.pipeline import Pipeline, compile_pipeline

TRANSLATE = BlockDefinition(
    id="translate",
    name="Translate",
    description="Translate a text",
    kind="llm",
    input_keys=["summary", "language"],
    output_keys=["translation"],
    prompt_template="Translate into {{ language }}: {{ summary }}",
)

DIGEST = {
    "id": "digest",
    "name": "Digest",
    "nodes": [
        {"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}},
        {
            "id": "n2",
            "block_id": "translate",
            "inputs": {"summary": "<<n1.summary>>", "language": "<<input.language>>"},
        },
    ],
    "memory_keys": ["language"],
}


async def test_references_imply_edges_and_the_pipeline_runs_in_order(
    block_store: SqliteBlockStore,
) -> None:
    await block_store.save(TRANSLATE)
    model = ScriptedProvider(['{"summary": "Ducks fly."}', '{"translation": "Enten fliegen."}'])
    executor = BlockExecutor(providers=ProviderRegistry.single(model))
    graph = await compile_pipeline(Pipeline.from_data(DIGEST), block_store, executor)

    result = await graph.run({"doc": "A long text about ducks.", "language": "German"})

    assert result.status == "completed"
    assert result.state["results"]["n2"] == {"translation": "Enten fliegen."}
    assert model.requests[1].messages[0].content == "Translate into German: Ducks fly."
    ran = [r.node for r in result.node_runs if r.status == "completed"]
    assert ran == ["load_memory", "n1", "n2", "save_memory"]


async def test_a_second_run_for_the_same_user_sees_what_the_first_saved(
    block_store: SqliteBlockStore, tmp_path: Path
) -> None:
    await block_store.save(TRANSLATE)
    pipeline = Pipeline.from_data(
        {
            **DIGEST,
            "nodes": [
                DIGEST["nodes"][0],
                {"id": "n2", "block_id": "translate", "inputs": {"summary": "<<n1.summary>>"}},
            ],
        }
    )
    model = ScriptedProvider(
        ['{"summary": "S1"}', '{"translation": "T1"}', '{"summary": "S2"}', '{"translation": "T2"}']
    )
    executor = BlockExecutor(providers=ProviderRegistry.single(model))
    async with SqliteStore(tmp_path / "memory.db") as store:
        memory = MemoryManager(store)
        await memory.update_preferences("ada", {"language": "Italian"})
        graph = await compile_pipeline(pipeline, block_store, executor, memory=memory)

        first = await graph.run({"doc": "one"}, config={"user_id": "ada"})
        second = await graph.run({"doc": "two"}, config={"user_id": "ada"})
        history = await memory.history("ada", "digest")

    assert first.status == second.status == "completed"
    # The language came from memory: no run input wired it.
    assert model.requests[1].messages[0].content == "Translate into Italian: S1"
    assert second.state["memory"]["history"][0]["run_id"] == first.run_id
    assert second.state["memory"]["history"][0]["remembered"] == {"language": "Italian"}
    assert [h["run_id"] for h in history] == [second.run_id, first.run_id]


async def test_a_decision_step_routes_to_the_node_its_branch_names(
    block_store: SqliteBlockStore,
) -> None:
    await block_store.save(TRANSLATE)
    classify = (await block_store.get("classify")).model_copy(
        update={"branches": {"yes": "answer", "no": "skip"}}
    )
    await block_store.save(classify)
    await block_store.save(
        BlockDefinition(
            id="note",
            name="Note",
            description="Write a note",
            kind="llm",
            output_keys=["note"],
            prompt_template="Write a note.",
        )
    )
    pipeline = Pipeline.from_data(
        {
            "id": "triage",
            "name": "Triage",
            "nodes": [
                {"id": "check", "block_id": "classify", "inputs": {"text": "<<input.doc>>"}},
                {"id": "answer", "block_id": "note"},
                {"id": "skip", "block_id": "note"},
            ],
        }
    )
    model = ScriptedProvider(['{"branch": "no"}', '{"note": "skipped politely"}'])
    graph = await compile_pipeline(
        pipeline, block_store, BlockExecutor(providers=ProviderRegistry.single(model))
    )

    result = await graph.run({"doc": "Just saying hi."})

    assert result.status == "completed"
    assert set(result.state["results"]) == {"check", "skip"}
    assert [r.node for r in result.node_runs if r.status == "skipped"] == ["answer"]


async def test_a_pipeline_id_with_characters_no_class_name_takes_still_compiles(
    block_store: SqliteBlockStore,
) -> None:
    # The state schema is a class named after the id; type() refuses a NUL (deep fuzz find).
    await block_store.save(TRANSLATE)
    pipeline = Pipeline.from_data({**DIGEST, "id": "di\x00gest/v2"})
    model = ScriptedProvider(['{"summary": "S"}', '{"translation": "T"}'])
    executor = BlockExecutor(providers=ProviderRegistry.single(model))

    graph = await compile_pipeline(pipeline, block_store, executor)
    result = await graph.run({"doc": "d", "language": "German"})

    assert result.status == "completed"
    assert result.state["results"]["n2"] == {"translation": "T"}
