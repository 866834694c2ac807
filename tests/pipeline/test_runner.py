"""Spec: PipelineRunner checks inputs, honours the failure policy, records runs, resumes threads."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore
from flowcore.checkpoint import SqliteCheckpointer
from flowcore.errors import InvalidInputError
from flowcore.history import SqliteRunHistory
from flowcore.llm import ProviderError, ProviderRegistry, ScriptedProvider
from flowcore.memory import MemoryManager, SqliteStore
from flowcore.pipeline import Pipeline, PipelineRunner, TaskPlan

WRITE = BlockDefinition(
    id="write",
    name="Write",
    description="Write a line about a topic",
    kind="llm",
    input_keys=["topic"],
    output_keys=["line"],
    prompt_template="One line about {{ topic }}",
)
# Its model refuses every call with an error that retrying cannot fix.
BROKEN = WRITE.model_copy(update={"id": "broken_write", "provider": "broken"})
ASK = BlockDefinition(
    id="ask",
    name="Ask",
    description="Ask for a title",
    kind="human",
    output_keys=["title"],
    prompt_template="What title should the post have?",
)


def fan(on_error: str) -> Pipeline:
    """Two independent lines, and a join that needs the first one."""
    return Pipeline.from_data(
        {
            "id": "fan",
            "name": "Fan",
            "on_error": on_error,
            "nodes": [
                {"id": "a", "block_id": "broken_write", "inputs": {"topic": "<<input.topic>>"}},
                {"id": "b", "block_id": "write", "inputs": {"topic": "ducks"}},
                {"id": "c", "block_id": "write", "inputs": {"topic": "<<a.line>>"}},
            ],
        }
    )


class Bench:
    """A runner on one database file, rebuilt on demand as a new process would."""

    def __init__(self, db: Path) -> None:
        self.db = db

    async def runner(self, script: list[Any]) -> tuple[PipelineRunner, AsyncExitStack]:
        stores = AsyncExitStack()
        checkpoints = await stores.enter_async_context(SqliteCheckpointer(self.db))
        blocks = await stores.enter_async_context(SqliteBlockStore(self.db))
        memory = await stores.enter_async_context(SqliteStore(self.db))
        history = await stores.enter_async_context(SqliteRunHistory(self.db))
        for block in (WRITE, BROKEN, ASK):
            await blocks.save(block)
        refusing = ScriptedProvider([ProviderError("bad key", provider="broken", kind="auth")])
        models = ProviderRegistry(
            {"scripted": ScriptedProvider(script), "broken": refusing}, default="scripted"
        )
        runner = PipelineRunner(
            blocks=blocks,
            executor=BlockExecutor(providers=models),
            memory=MemoryManager(memory),
            checkpointer=checkpoints,
            history=history,
        )
        return runner, stores


async def close(stores: AsyncExitStack) -> None:
    await stores.aclose()


async def test_missing_and_unknown_inputs_are_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    runner, stores = await Bench(tmp_path / "f.db").runner([])
    try:
        with pytest.raises(InvalidInputError) as refused:
            await runner.run(fan("fail_fast"), {"topc": "geese"})
        assert "input 'topic' is missing (read by node a)" in str(refused.value)
        assert "input 'topc' is not read by pipeline 'fan' (it reads: topic)" in str(refused.value)
        assert await runner.history.list() == []  # type: ignore[union-attr]
    finally:
        await close(stores)


@pytest.mark.parametrize(
    ("policy", "ran"),
    # fail_fast may or may not let "b" (running beside "a") finish; nothing after runs.
    [("skip_dependents", {"b"}), ("fail_fast", set())],
)
async def test_the_pipeline_failure_policy_decides_what_else_runs(
    tmp_path: Path, policy: str, ran: set[str]
) -> None:
    script: list[Any] = ['{"line": "Ducks quack."}']
    runner, stores = await Bench(tmp_path / "f.db").runner(script)
    try:
        result = await runner.run(fan(policy), {"topic": "geese"})
        record = (await runner.history.list())[0]  # type: ignore[union-attr]
    finally:
        await close(stores)

    assert result.status == "failed"
    completed = {r.node for r in result.node_runs if r.status == "completed"}
    assert ran <= completed
    assert not completed & {"a", "c", "save_memory"}
    assert record.status == "failed"
    assert record.errors
    assert "bad key" in record.errors[0]
    if policy == "skip_dependents":
        assert {n.node: n.skip_reason for n in record.nodes if n.status == "skipped"} == {
            "c": "upstream_failed",
            "save_memory": "upstream_failed",
        }


async def test_a_paused_run_is_resumed_by_a_new_runner_from_its_thread_id_alone(
    tmp_path: Path,
) -> None:
    plan = TaskPlan.from_data(
        {
            "plan_id": "post",
            "entry_step_id": "draft",
            "steps": [
                {"step_id": "draft", "block_id": "write", "inputs": {"topic": "<<input.topic>>"}},
                {"step_id": "title", "block_id": "ask", "depends_on": ["draft"]},
            ],
        }
    )
    bench = Bench(tmp_path / "f.db")
    first, stores = await bench.runner(['{"line": "Geese honk at dawn."}'])
    try:
        paused = await first.run(plan, {"topic": "geese"}, user_id="ada")
    finally:
        await close(stores)
    assert paused.status == "interrupted"
    assert paused.thread_id is not None
    assert paused.thread_id.startswith("post-")

    second, stores = await bench.runner([])  # the model is not asked again
    try:
        done = await second.resume(paused.thread_id, "Dawn chorus")
        records = await second.history.list(thread_id=paused.thread_id)  # type: ignore[union-attr]
    finally:
        await close(stores)

    assert done.status == "completed"
    assert done.state["results"]["title"] == {"title": "Dawn chorus"}
    assert done.state["results"]["draft"] == {"line": "Geese honk at dawn."}
    assert [(r.status, r.user_id) for r in records] == [
        ("completed", "ada"),
        ("interrupted", "ada"),
    ]
    assert records[0].source == records[1].source
    assert records[1].source is not None
    assert records[1].source["plan_id"] == "post"
