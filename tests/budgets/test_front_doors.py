"""Spec: pipelines and the executor port take budgets as data on the run too."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flowcore.blocks import BlockExecutor, SqliteBlockStore
from flowcore.budgets import BudgetExceededError, BudgetGuard
from flowcore.checkpoint import SqliteCheckpointer
from flowcore.errors import InvalidInputError
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.pipeline import Pipeline, PipelineRunner
from flowcore.port import Caller, InProcExecutor, RunOptions, RunRequest

from .graphs import block, reply, two_steps

PIPELINE = Pipeline.from_data(
    {
        "id": "writer",
        "name": "Writer",
        "nodes": [
            {"id": "draft", "block_id": "draft", "inputs": {"topic": "<<input.topic>>"}},
            {"id": "polish", "block_id": "polish", "inputs": {"topic": "<<input.topic>>"}},
        ],
        "edges": [{"from": "draft", "to": "polish"}],
    }
)


async def test_a_pipeline_run_stopped_by_its_budget_resumes_with_a_raised_one(
    tmp_path: Path,
) -> None:
    model = ScriptedProvider([reply('{"text": "draft"}'), reply('{"text": "polished"}')])
    async with (
        SqliteBlockStore(tmp_path / "b.db") as blocks,
        SqliteCheckpointer(tmp_path / "c.db") as saver,
    ):
        for name in ("draft", "polish"):
            await blocks.save(block(name))
        runner = PipelineRunner(
            blocks=blocks,
            executor=BlockExecutor(providers=ProviderRegistry.single(model), budgets=BudgetGuard()),
            checkpointer=saver,
        )

        stopped = await runner.run(
            PIPELINE, {"topic": "ducks"}, budgets={"thread": {"max_tokens": 150}}
        )
        assert stopped.status == "failed"
        assert isinstance(stopped.errors[0].cause, BudgetExceededError)
        assert model.remaining == 1
        assert stopped.thread_id is not None

        done = await runner.resume(
            stopped.thread_id, definition=PIPELINE, budgets={"thread": {"max_tokens": 1000}}
        )

    assert done.status == "completed", done.errors
    assert done.state["results"]["polish"] == {"text": "polished"}
    assert len(model.requests) == 2


async def test_bad_pipeline_budgets_are_refused_before_anything_runs(tmp_path: Path) -> None:
    async with SqliteBlockStore(tmp_path / "b.db") as blocks:
        runner = PipelineRunner(blocks=blocks, executor=BlockExecutor())
        with pytest.raises(InvalidInputError, match=r"run\.max_tokens"):
            await runner.run(PIPELINE, {"topic": "x"}, budgets={"run": {"max_tokens": -1}})


async def test_the_port_passes_a_requests_budgets_to_the_run() -> None:
    model = ScriptedProvider([reply('{"text": "draft"}'), reply('{"text": "polished"}')])
    graph = two_steps(model, BudgetGuard())
    caller = Caller("req-1", "trace-1")

    async def run(options: RunOptions, inputs: dict[str, str] | None) -> str:
        async with InProcExecutor(graphs={"w": graph}) as executor:
            handle = executor.run(RunRequest("w", inputs, caller, options))
            async with asyncio.timeout(30):
                async for _ in handle:
                    pass
                outcome = await handle.final
        return outcome.status

    tight = RunOptions(thread_id="p1", budgets={"thread": {"max_tokens": 150}})
    assert await run(tight, {"topic": "ducks"}) == "failed"
    assert model.remaining == 1
    raised = RunOptions(thread_id="p1", budgets={"thread": {"max_tokens": 1000}})
    assert await run(raised, None) == "completed"
    assert model.remaining == 0
