"""Spec: block nodes wire into graphs: references read outputs, shared_context is the bus."""

from __future__ import annotations

from flowcore import END, START, Graph
from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore, add_block
from flowcore.llm import ProviderRegistry, ScriptedProvider

from .harness import DocState


def translate_block() -> BlockDefinition:
    return BlockDefinition(
        id="translate",
        name="Translate",
        description="Translate a text",
        kind="llm",
        input_keys=["summary", "language"],
        output_keys=["translation"],
        prompt_template="Translate into {{ language }}: {{ summary }}",
    )


async def test_a_reference_to_a_block_node_reads_its_outputs(
    block_store: SqliteBlockStore,
) -> None:
    model = ScriptedProvider(
        ['{"summary": "Ducks fly."}', '{"translation": "Les canards volent."}']
    )
    executor = BlockExecutor(providers=ProviderRegistry.single(model))
    graph = Graph(DocState, name="chain")
    add_block(
        graph, "n1", await block_store.get("summarize"), executor, inputs={"text": "<<state.text>>"}
    )
    add_block(
        graph,
        "n2",
        await block_store.save(translate_block()),
        executor,
        inputs={"summary": "<<n1.summary>>", "language": "French"},
    )
    graph.add_edge(START, "n1").add_edge("n1", "n2").add_edge("n2", END)

    result = await graph.compile().run({"text": "A long text about ducks."})

    assert result.status == "completed"
    assert model.requests[1].messages[0].content == "Translate into French: Ducks fly."
    assert result.state["results"] == {
        "n1": {"summary": "Ducks fly."},
        "n2": {"translation": "Les canards volent."},
    }
    assert [r["node"] for r in result.state["block_runs"]] == ["n1", "n2"]


async def test_inputs_not_wired_explicitly_are_read_from_shared_context(
    block_store: SqliteBlockStore,
) -> None:
    model = ScriptedProvider(['{"summary": "S"}', '{"translation": "T"}'])
    executor = BlockExecutor(providers=ProviderRegistry.single(model))
    graph = Graph(DocState, name="bus")
    add_block(graph, "n1", await block_store.get("summarize"), executor)
    add_block(
        graph,
        "n2",
        await block_store.save(translate_block()),
        executor,
        inputs={"language": "German"},
    )
    graph.add_edge(START, "n1").add_edge("n1", "n2")

    result = await graph.compile().run({"shared_context": {"text": "Original."}})

    assert model.requests[0].messages[0].content.endswith("Original.")
    assert model.requests[1].messages[0].content == "Translate into German: S"
    assert result.state["shared_context"] == {
        "text": "Original.",
        "summary": "S",
        "translation": "T",
    }


async def test_parallel_block_nodes_run_in_one_superstep_and_merge_deterministically(
    block_store: SqliteBlockStore,
) -> None:
    summarize = await block_store.get("summarize")
    model = ScriptedProvider(['{"summary": "first"}', '{"summary": "second"}'])
    executor = BlockExecutor(providers=ProviderRegistry.single(model))
    graph = Graph(DocState, name="fan-out")
    add_block(graph, "a", summarize, executor, inputs={"text": "A"})
    add_block(graph, "b", summarize, executor, inputs={"text": "B"})
    graph.add_edge(START, "a").add_edge(START, "b")

    result = await graph.compile().run({})

    assert result.supersteps == 1
    assert set(result.state["results"]) == {"a", "b"}
    # Both wrote 'summary' into the bus; the later-declared node's write wins.
    assert result.state["shared_context"]["summary"] == result.state["results"]["b"]["summary"]
