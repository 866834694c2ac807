"""Spec: every kind of block but Python runs through the same generic executor.

Decision, tool, memory, human and wait blocks are stored in a real SQLite
block store, run as nodes of real graphs, and report what they do as events.
(Python blocks, which need the sandbox, have their own spec file.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flowcore import END, START, Graph, Resume
from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore, add_block
from flowcore.checkpoint import SqliteCheckpointer
from flowcore.errors import BlockConfigurationError, BlockOutputError, ToolCallError
from flowcore.llm import LLMResponse, ProviderRegistry, ScriptedProvider, ToolCall
from flowcore.memory import InMemoryStore
from flowcore.tools import Tool, ToolRunner

from .harness import DocState, run_block

# ------------------------------------------------------------------ decision


def triage_graph(classify: BlockDefinition, executor: BlockExecutor) -> Graph[Any]:
    graph = Graph(DocState, name="triage")
    add_block(
        graph,
        "triage",
        classify,
        executor,
        inputs={"text": "<<state.text>>"},
        branches={"yes": "answer", "no": "skip"},
    )
    graph.add_node("answer", lambda s: {"shared_context": {"handled_by": "answer"}})
    graph.add_node("skip", lambda s: {"shared_context": {"handled_by": "skip"}})
    graph.add_edge(START, "triage").add_edge("answer", END).add_edge("skip", END)
    return graph


async def test_a_decision_block_routes_the_graph_on_its_branch_key(
    block_store: SqliteBlockStore,
) -> None:
    classify = await block_store.get("classify")
    for answer, taken in (('{"branch": "yes"}', "answer"), ('{"branch": "no"}', "skip")):
        model = ScriptedProvider([answer])
        executor = BlockExecutor(providers=ProviderRegistry.single(model))

        result = await triage_graph(classify, executor).compile().run({"text": "Help?"})

        assert result.status == "completed"
        assert result.state["shared_context"]["handled_by"] == taken
        assert result.state["results"]["triage"] == {"branch": answer[12:-2]}
        assert [r.node for r in result.node_runs if r.status == "completed"] == ["triage", taken]


async def test_a_decision_must_pick_one_of_its_branches(block_store: SqliteBlockStore) -> None:
    classify = (await block_store.get("classify")).model_copy(update={"max_retries": 0})
    model = ScriptedProvider(['{"branch": "maybe"}', '{"branch": "perhaps"}'])
    executor = BlockExecutor(providers=ProviderRegistry.single(model))

    result = await triage_graph(classify, executor).compile().run({"text": "Help?"})

    error = result.errors[0].cause
    assert isinstance(error, BlockOutputError)
    assert "'perhaps' is not one of ['no', 'yes']" in str(error)
    # The repair request told the model which branches exist.
    assert "'maybe' is not one of ['no', 'yes']" in model.requests[1].messages[-1].content
    assert "skip" not in result.state.get("shared_context", {}).get("handled_by", "")


# ---------------------------------------------------------------------- tool


class UrlArgs(BaseModel):
    url: str


class Page(BaseModel):
    status: int
    body: str


def http_tool(fail: bool = False) -> Tool:
    async def fetch(args: UrlArgs) -> Page:
        if fail:
            raise ConnectionError("host unreachable")
        return Page(status=200, body=f"<html>{args.url} secret-cookie</html>")

    return Tool("http_get", "Fetch a URL", UrlArgs, Page, fetch, allowlist={"status"})


async def test_a_tool_block_calls_its_tool_through_the_tool_runner(
    block_store: SqliteBlockStore,
) -> None:
    executor = BlockExecutor(tools=ToolRunner([http_tool()]))

    run = await run_block(
        await block_store.get("http_get"), executor, inputs={"url": "https://example.test/"}
    )

    assert run.outputs == {
        "status": 200,
        "body": "<html>https://example.test/ secret-cookie</html>",
    }
    (start,) = run.of_type("tool_call_start")
    (done,) = run.of_type("tool_call_result")
    assert start.tool_call_id == done.tool_call_id
    assert start.node == done.node == "step"
    assert start.args == {"url": "https://example.test/"}
    # Only allowlisted fields leave the runner in events; state still gets the whole result.
    assert done.result == {"status": 200}
    assert not done.is_error


async def test_a_failing_tool_is_a_tool_call_error_with_a_safe_message(
    block_store: SqliteBlockStore,
) -> None:
    block = (await block_store.get("http_get")).model_copy(update={"max_retries": 1})
    executor = BlockExecutor(tools=ToolRunner([http_tool(fail=True)]), retry_wait=0)

    run = await run_block(block, executor, inputs={"url": "https://example.test/"})

    error = run.result.errors[0].cause
    assert isinstance(error, ToolCallError)
    assert (error.tool, error.error_code) == ("http_get", "execution")
    assert "ConnectionError" in error.safe_message
    assert "example.test" not in str(error)
    # Execution failures are retried: two calls, each closed by its own result event.
    results = run.of_type("tool_call_result")
    assert [r.is_error for r in results] == [True, True]
    assert len({r.tool_call_id for r in results}) == 2


async def test_a_tool_block_whose_tool_is_not_registered_is_a_configuration_error(
    block_store: SqliteBlockStore,
) -> None:
    run = await run_block(
        await block_store.get("http_get"), BlockExecutor(tools=ToolRunner([])), inputs={"url": "u"}
    )

    error = run.result.errors[0].cause
    assert isinstance(error, BlockConfigurationError)
    assert "'http_get'" in str(error)


async def test_an_llm_block_may_call_the_tools_its_metadata_offers(
    block_store: SqliteBlockStore,
) -> None:
    block = await block_store.save(
        BlockDefinition(
            id="page_check",
            name="Page check",
            description="Check whether a page is up",
            kind="llm",
            input_keys=["url"],
            output_keys=["up"],
            prompt_template="Is {{ url }} up?",
            metadata={"tools": ["http_get"]},
        )
    )
    model = ScriptedProvider(
        [
            LLMResponse(tool_calls=(ToolCall("call-1", "http_get", {"url": "https://a.test"}),)),
            '{"up": true}',
        ]
    )
    executor = BlockExecutor(
        providers=ProviderRegistry.single(model), tools=ToolRunner([http_tool()])
    )

    run = await run_block(block, executor, inputs={"url": "https://a.test"})

    assert run.outputs == {"up": True}
    assert [t.name for t in model.requests[0].tools] == ["http_get"]
    tool_message = model.requests[1].messages[-1]
    assert tool_message.role == "tool"
    assert tool_message.tool_call_id == "call-1"
    assert '"status": 200' in tool_message.content
    assert [e.type for e in run.events if e.type.startswith("tool_call")] == [
        "tool_call_start",
        "tool_call_result",
    ]


# -------------------------------------------------------------------- memory


async def test_memory_blocks_save_and_recall_per_user_across_runs(
    block_store: SqliteBlockStore,
) -> None:
    memory = InMemoryStore()
    executor = BlockExecutor(memory=memory)
    save = await block_store.get("save_memory")
    query = await block_store.get("query_memory")

    saved = await run_block(
        save,
        executor,
        config={"user_id": "ada"},
        inputs={"memory_key": "favourite_food", "memory_value": "tacos"},
    )
    recalled = await run_block(
        query, executor, config={"user_id": "ada"}, inputs={"memory_query": "favourite food"}
    )
    stranger = await run_block(
        query, executor, config={"user_id": "bob"}, inputs={"memory_query": "favourite food"}
    )

    assert saved.outputs == {"saved": True}
    hits = recalled.outputs["memory_results"]
    assert [(h["key"], h["value"]) for h in hits] == [("favourite_food", "tacos")]
    assert stranger.outputs == {"memory_results": []}
    assert (await memory.get(("users", "ada", "memory"), "favourite_food")).value == "tacos"


async def test_a_memory_block_without_a_store_is_a_configuration_error(
    block_store: SqliteBlockStore,
) -> None:
    run = await run_block(
        await block_store.get("query_memory"), BlockExecutor(), inputs={"memory_query": "x"}
    )

    error = run.result.errors[0].cause
    assert isinstance(error, BlockConfigurationError)
    assert "InMemoryStore" in str(error)


# --------------------------------------------------------------------- human


async def test_a_human_block_pauses_the_run_and_resumes_with_the_answer(
    block_store: SqliteBlockStore, tmp_path: Path
) -> None:
    approval = await block_store.get("human_approval")
    async with SqliteCheckpointer(tmp_path / "threads.db") as saver:
        first = await run_block(
            approval,
            BlockExecutor(),
            inputs={"question": "Ship it?"},
            checkpointer=saver,
            thread_id="t1",
        )
        assert first.result.status == "interrupted"
        (pending,) = first.result.interrupts
        assert pending.value["question"] == "Ship it?"
        assert pending.value["block_id"] == "human_approval"
        assert first.of_type("block_end") == []  # paused, not ended

        second = await run_block(
            approval,
            BlockExecutor(),
            inputs={"question": "Ship it?"},  # the same graph, resumed
            state=Resume(True),
            checkpointer=saver,
            thread_id="t1",
        )

    assert second.result.status == "completed"
    assert second.outputs == {"approved": True}


async def test_an_answer_that_breaks_the_output_schema_is_asked_again_with_the_problem(
    block_store: SqliteBlockStore, tmp_path: Path
) -> None:
    confirm = await block_store.save(
        BlockDefinition(
            id="confirm",
            name="Confirm",
            description="Ask a person to confirm",
            kind="human",
            input_keys=["question"],
            output_schema={
                "type": "object",
                "properties": {"approved": {"type": "boolean"}},
                "required": ["approved"],
            },
        )
    )
    async with SqliteCheckpointer(tmp_path / "threads.db") as saver:
        options: dict[str, Any] = {
            "checkpointer": saver,
            "thread_id": "t2",
            "inputs": {"question": "Ship?"},
        }
        await run_block(confirm, BlockExecutor(), **options)
        again = await run_block(confirm, BlockExecutor(), state=Resume("maybe"), **options)
        assert again.result.status == "interrupted"
        (pending,) = again.result.interrupts
        assert pending.value["problems"] == ["answer.approved: expected boolean, got string"]

        done = await run_block(confirm, BlockExecutor(), state=Resume(False), **options)

    assert done.outputs == {"approved": False}


# ---------------------------------------------------------------------- wait


async def test_a_wait_block_sleeps_for_its_seconds(block_store: SqliteBlockStore) -> None:
    pause = await block_store.save(
        BlockDefinition(
            id="pause",
            name="Pause",
            description="Wait a moment",
            kind="wait",
            input_keys=["seconds"],
            output_keys=["waited"],
        )
    )

    run = await run_block(pause, BlockExecutor(), inputs={"seconds": 0.01})

    assert run.outputs == {"waited": 0.01}
    assert run.of_type("block_end")[0].duration >= 0.01


async def test_a_wait_block_without_a_duration_waits_for_an_outside_event(
    block_store: SqliteBlockStore, tmp_path: Path
) -> None:
    until = await block_store.save(
        BlockDefinition(
            id="until_paid",
            name="Until paid",
            description="Wait for payment",
            kind="wait",
            output_keys=["payment_id"],
        )
    )
    async with SqliteCheckpointer(tmp_path / "threads.db") as saver:
        options: dict[str, Any] = {"checkpointer": saver, "thread_id": "t3"}
        paused = await run_block(until, BlockExecutor(), inputs={}, **options)
        resumed = await run_block(until, BlockExecutor(), state=Resume("pay_123"), **options)

    assert paused.result.status == "interrupted"
    assert resumed.outputs == {"payment_id": "pay_123"}
