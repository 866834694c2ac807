"""Spec: ``record_from_result`` turns what a real run returned into its history record.

Per node: status, timings, attempts, outputs (a block node's outputs, any
other node's update), errors as ``"<Type>: <message>"``, skip reasons, and the
tokens its block used. A block node's tokens come from the ``block_runs``
record inside that execution's own update, so on a resumed thread the records
earlier runs left in ``state["block_runs"]`` are never counted again.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from flowcore import (
    END,
    START,
    Graph,
    InMemoryCheckpointer,
    NodeRun,
    Resume,
    RetryPolicy,
    RunResult,
    append,
    interrupt,
)
from flowcore.blocks import BlockDefinition, BlockExecutor, BlockState, SqliteBlockStore, add_block
from flowcore.history import NodeRecord, error_text, record_from_result
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.llm.types import LLMRequest

STARTED = 1_700_000_000.0


class State(TypedDict, total=False):
    log: Annotated[list[str], append]
    x: str


class DocState(BlockState, total=False):
    text: str
    answer: str


class Boom(Exception):
    pass


TRANSLATE = BlockDefinition(
    id="translate",
    name="Translate",
    description="Translate a text",
    kind="llm",
    input_keys=["summary", "language"],
    output_keys=["translation"],
    prompt_template="Translate into {{ language }}: {{ summary }}",
)


def prompt_words(request: LLMRequest) -> int:
    """The input tokens ScriptedProvider reports for a request (its word count)."""
    return sum(len(m.content.split()) for m in request.messages)


def reply_words(text: str) -> int:
    """The output tokens ScriptedProvider reports for a reply (its word count)."""
    return len(text.split())


def record(result: RunResult, **overrides: Any) -> Any:
    fields: dict[str, Any] = {
        "pipeline_id": "p",
        "pipeline_version": 1,
        "user_id": "ada",
        "started_at": STARTED,
        "inputs": {},
    }
    fields.update(overrides)
    return record_from_result(result, **fields)


# --------------------------------------------------------------------------- plain nodes


def mixed_graph() -> Graph:
    """fetch completes; bad fails; after depends on bad and is skipped."""

    async def fetch(state: Any) -> dict[str, Any]:
        return {"x": "fetched", "log": ["fetch"]}

    async def bad(state: Any) -> dict[str, Any]:
        raise Boom("disk on fire")

    async def after(state: Any) -> dict[str, Any]:
        return {"log": ["after"]}

    graph = Graph(State, name="mixed")
    graph.add_node("fetch", fetch).add_node("bad", bad).add_node("after", after)
    graph.add_edge(START, "fetch").add_edge(START, "bad").add_edge("bad", "after")
    return graph


async def test_the_run_fields_come_from_the_result_and_the_caller() -> None:
    result = await mixed_graph().compile().run({"x": "start"}, on_error="skip_dependents")

    rec = record(
        result,
        pipeline_id="mixed",
        pipeline_version="v3",
        user_id="ada",
        inputs={"x": "start"},
        source={"id": "mixed", "nodes": []},
    )

    assert rec.run_id == result.run_id
    assert (rec.pipeline_id, rec.pipeline_version, rec.user_id) == ("mixed", "v3", "ada")
    assert rec.status == "failed"
    assert rec.started_at == STARTED
    assert rec.duration == result.duration > 0
    assert rec.thread_id is None
    assert rec.inputs == {"x": "start"}
    assert rec.source == {"id": "mixed", "nodes": []}
    assert rec.final_state == dict(result.state)
    assert rec.interrupts == ()


async def test_completed_failed_and_skipped_nodes_are_each_recorded() -> None:
    result = await mixed_graph().compile().run({}, on_error="skip_dependents")

    rec = record(result)

    assert [n.node for n in rec.nodes] == [r.node for r in result.node_runs]
    fetch, bad, after = (rec.nodes_by_name[name] for name in ("fetch", "bad", "after"))
    assert fetch.status == "completed"
    assert fetch.outputs == {"x": "fetched", "log": ["fetch"]}
    assert fetch.error is None
    assert fetch.attempts == 1
    assert fetch.duration >= 0
    assert bad.status == "failed"
    assert bad.outputs is None
    assert bad.error is not None
    assert bad.error.startswith("NodeError: node 'bad' failed after 1 attempt: Boom: disk on fire")
    assert after.status == "skipped"
    assert after.skip_reason == "upstream_failed"
    assert after.outputs is None
    assert after.attempts == 0
    assert all(n.input_tokens == n.output_tokens == 0 for n in rec.nodes)
    assert (rec.input_tokens, rec.output_tokens) == (0, 0)


async def test_run_errors_are_written_as_type_and_message() -> None:
    result = await mixed_graph().compile().run({}, on_error="skip_dependents")

    rec = record(result)

    assert rec.errors == (f"NodeError: {result.errors[0]}",)
    assert "Boom: disk on fire" in rec.errors[0]
    assert error_text(ValueError("bad input")) == "ValueError: bad input"


async def test_attempts_and_timings_follow_retries() -> None:
    calls: list[int] = []

    async def flaky(state: Any) -> dict[str, Any]:
        calls.append(1)
        if len(calls) < 3:
            raise Boom("not yet")
        return {"x": "finally"}

    graph = Graph(State).add_node("flaky", flaky, retry=RetryPolicy(initial_interval=0.01))
    graph.add_edge(START, "flaky")

    rec = record(await graph.compile().run({}))

    (flaky_rec,) = rec.nodes
    assert flaky_rec.attempts == 3
    assert flaky_rec.duration >= 0.01 + 0.02  # two backoff waits, included in the duration
    assert flaky_rec.outputs == {"x": "finally"}


async def test_keep_state_false_leaves_the_final_state_out() -> None:
    result = await mixed_graph().compile().run({}, on_error="skip_dependents")

    assert record(result, keep_state=False).final_state is None


# --------------------------------------------------------------------------- block nodes


async def test_a_block_node_records_its_outputs_and_token_usage(
    block_store: SqliteBlockStore,
) -> None:
    reply = '{"summary": "Ducks fly south in winter."}'
    model = ScriptedProvider([reply])
    executor = BlockExecutor(providers=ProviderRegistry.single(model))
    graph = Graph(DocState, name="digest")
    add_block(
        graph, "n1", await block_store.get("summarize"), executor, inputs={"text": "<<state.text>>"}
    )

    async def shout(state: Any) -> dict[str, Any]:
        return {"answer": state["results"]["n1"]["summary"].upper()}

    graph.add_node("shout", shout).add_edge(START, "n1").add_edge("n1", "shout")

    result = await graph.compile().run({"text": "A long text about ducks."})
    rec = record(result)

    assert result.status == "completed"
    n1, plain = rec.nodes_by_name["n1"], rec.nodes_by_name["shout"]
    assert n1.outputs == result.state["results"]["n1"] == {"summary": "Ducks fly south in winter."}
    (usage,) = result.state["block_runs"]
    assert (n1.input_tokens, n1.output_tokens) == (usage["input_tokens"], usage["output_tokens"])
    assert n1.input_tokens == prompt_words(model.requests[0]) > 0
    assert n1.output_tokens == reply_words(reply) == 6
    assert plain.outputs == {"answer": "DUCKS FLY SOUTH IN WINTER."}
    assert (plain.input_tokens, plain.output_tokens) == (0, 0)
    assert (rec.input_tokens, rec.output_tokens) == (n1.input_tokens, 6)


async def test_a_block_node_in_a_loop_gets_one_record_per_pass(
    block_store: SqliteBlockStore,
) -> None:
    replies = ['{"summary": "one"}', '{"summary": "two words here"}']
    model = ScriptedProvider(replies)
    executor = BlockExecutor(providers=ProviderRegistry.single(model))
    graph = Graph(DocState, name="loop")
    add_block(
        graph, "n1", await block_store.get("summarize"), executor, inputs={"text": "<<state.text>>"}
    )
    graph.add_node("check", lambda s: None)
    graph.add_edge(START, "n1").add_edge("n1", "check")
    graph.add_conditional_edges(
        "check",
        lambda s: "again" if len(s["block_runs"]) < 2 else "done",
        {"again": "n1", "done": END},
    )

    result = await graph.compile().run({"text": "Loop text."})
    rec = record(result)

    assert result.status == "completed"
    passes = rec.runs_of("n1")
    assert [p.pass_index for p in passes] == [1, 2]
    assert [p.outputs for p in passes] == [{"summary": "one"}, {"summary": "two words here"}]
    assert [p.output_tokens for p in passes] == [reply_words(r) for r in replies] == [2, 4]
    assert [p.input_tokens for p in passes] == [prompt_words(r) for r in model.requests]
    assert rec.nodes_by_name["n1"] is passes[-1]
    assert rec.output_tokens == 6


async def test_a_resumed_thread_counts_only_the_tokens_of_its_own_run(
    block_store: SqliteBlockStore,
) -> None:
    replies = ['{"summary": "Ducks fly."}', '{"translation": "Enten fliegen."}']
    model = ScriptedProvider(replies)
    executor = BlockExecutor(providers=ProviderRegistry.single(model))
    graph = Graph(DocState, name="approve")
    add_block(
        graph, "n1", await block_store.get("summarize"), executor, inputs={"text": "<<state.text>>"}
    )

    async def ask(state: Any) -> dict[str, Any]:
        return {"answer": interrupt({"question": "Translate?", "summary": "Ducks fly."})}

    graph.add_node("ask", ask)
    add_block(
        graph,
        "n2",
        await block_store.save(TRANSLATE),
        executor,
        inputs={"summary": "<<n1.summary>>", "language": "German"},
    )
    graph.add_edge(START, "n1").add_edge("n1", "ask").add_edge("ask", "n2")
    app = graph.compile(checkpointer=InMemoryCheckpointer())

    paused = await app.run({"text": "About ducks."}, thread_id="t1")
    done = await app.run(Resume("yes"), thread_id="t1")
    first, second = record(paused), record(done)

    assert first.status == "interrupted"
    assert first.thread_id == second.thread_id == "t1"
    assert first.interrupts == ({"question": "Translate?", "summary": "Ducks fly."},)
    assert first.input_tokens == prompt_words(model.requests[0])
    assert first.output_tokens == reply_words(replies[0]) == 3

    assert second.status == "completed"
    assert [r["node"] for r in done.state["block_runs"]] == ["n1", "n2"]  # both runs' records
    assert "n1" not in second.nodes_by_name
    assert second.nodes_by_name["n2"].outputs == {"translation": "Enten fliegen."}
    assert second.input_tokens == prompt_words(model.requests[1])
    assert second.output_tokens == reply_words(replies[1]) == 3
    assert second.interrupts == ()


def test_without_records_in_the_update_the_newest_state_records_are_used() -> None:
    # A node whose update carries no block_runs record: the state's records of
    # that node are used, newest ones only, one per completed execution.
    state = {
        "block_runs": [
            {"node": "n1", "input_tokens": 100, "output_tokens": 100},  # an earlier run's
            {"node": "other", "input_tokens": 7, "output_tokens": 7},
            {"node": "n1", "input_tokens": 3, "output_tokens": 4},
            {"node": "n1", "input_tokens": 5, "output_tokens": 6},
        ],
        "results": {"n1": {"summary": "last"}},
    }
    runs = (
        NodeRun("n1", 0, 0, "completed", None, 0.0, 0.1, 1),
        NodeRun("n1", 1, 1, "completed", None, 0.1, 0.1, 1),
        NodeRun("n2", 1, 2, "failed", None, 0.2, 0.1, 1, Boom("x")),
    )
    result = RunResult(
        run_id="r", graph_name="g", graph_version="1", status="failed", state=state, node_runs=runs
    )

    rec = record(result)

    assert [(n.input_tokens, n.output_tokens) for n in rec.nodes] == [(3, 4), (5, 6), (0, 0)]
    assert (rec.input_tokens, rec.output_tokens) == (8, 10)
    assert [n.outputs for n in rec.nodes] == [None, {"summary": "last"}, None]
    assert rec.nodes[2] == NodeRecord("n2", "failed", 0.2, 0.1, 1, None, "Boom: x", None, 0, 0, 1)
