"""Spec: seed 000's memory round trip, run 1 -> pause -> resume -> run 2, with no extras.

Run 1 has no preference, asks the user (a pause), and saves the answer as a
preference when it is resumed; run 2 reads it. The runner that resumes may
have no run history and its caller may not name the user again: the thread's
checkpoint keeps who the run is for and which keys it remembers.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore
from flowcore.checkpoint import SqliteCheckpointer
from flowcore.history import SqliteRunHistory
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.memory import MemoryManager, SqliteStore
from flowcore.pipeline import PipelineRunner, TaskPlan

# Seed 000's own spelling: block_id, block_type, {placeholder} templates, tools_required.
ASK_RESTAURANT = BlockDefinition.from_data(
    {
        "block_id": "ask_restaurant",
        "name": "Ask restaurant",
        "description": "Ask the user where to order lunch from",
        "input_keys": [],
        "output_keys": ["fav_restaurant"],
        "prompt_template": "Where should lunch come from?",
        "block_type": "human",
    }
)
ORDER = BlockDefinition.from_data(
    {
        "block_id": "place_order",
        "name": "Place order",
        "description": "Order lunch from the user's restaurant",
        "input_keys": ["fav_restaurant"],
        "output_keys": ["order_id"],
        "template_format": "f-string",
        "prompt_template": "Order the usual from {fav_restaurant}.",
        "tools_required": [],
        "block_type": "action",
    }
)
FIRST_RUN = TaskPlan.from_data(
    {
        "plan_id": "lunch",
        "entry_step_id": "ask",
        "memory_keys": ["fav_restaurant"],
        "steps": [
            {"step_id": "ask", "block_id": "ask_restaurant"},
            {"step_id": "order", "block_id": "place_order", "depends_on": ["ask"]},
        ],
    }
)
# Run 2 knows the preference: place_order's input comes from memory.
SECOND_RUN = TaskPlan.from_data(
    {
        "plan_id": "lunch_again",
        "entry_step_id": "order",
        "memory_keys": ["fav_restaurant"],
        "steps": [{"step_id": "order", "block_id": "place_order"}],
    }
)


async def _runner(
    db: Path, model: ScriptedProvider, stack: AsyncExitStack, *, with_history: bool
) -> tuple[PipelineRunner, MemoryManager]:
    blocks = await stack.enter_async_context(SqliteBlockStore(db))
    for block in (ASK_RESTAURANT, ORDER):
        await blocks.save(block)
    memory = MemoryManager(await stack.enter_async_context(SqliteStore(db)))
    history = await stack.enter_async_context(SqliteRunHistory(db)) if with_history else None
    runner = PipelineRunner(
        blocks=blocks,
        executor=BlockExecutor(providers=ProviderRegistry.single(model)),
        memory=memory,
        checkpointer=await stack.enter_async_context(SqliteCheckpointer(db)),
        history=history,
    )
    return runner, memory


@pytest.mark.parametrize("with_history", [True, False], ids=["history", "no-history"])
async def test_a_preference_asked_in_run_1_is_saved_on_resume_and_read_by_run_2(
    tmp_path: Path, with_history: bool
) -> None:
    db = tmp_path / "lunch.db"
    model = ScriptedProvider(['{"order_id": "UE-1"}', '{"order_id": "UE-2"}'])
    async with AsyncExitStack() as stack:
        runner, _ = await _runner(db, model, stack, with_history=with_history)
        paused = await runner.run(FIRST_RUN, user_id="ada")
    assert paused.status == "interrupted"
    assert paused.thread_id is not None

    # A new process resumes by thread id; without a history it passes the plan, not the user.
    async with AsyncExitStack() as stack:
        runner, memory = await _runner(db, model, stack, with_history=with_history)
        extra: dict[str, Any] = {} if with_history else {"definition": FIRST_RUN}
        done = await runner.resume(paused.thread_id, {"fav_restaurant": "Chipotle"}, **extra)
        assert done.status == "completed"
        assert await memory.preferences("ada") == {"fav_restaurant": "Chipotle"}
        [summary] = await memory.history("ada", "lunch")
        assert summary["remembered"] == {"fav_restaurant": "Chipotle"}

        again = await runner.run(SECOND_RUN, user_id="ada")
    assert again.status == "completed"
    assert again.state["results"]["order"] == {"order_id": "UE-2"}
    # The f-string template was filled from the remembered preference.
    assert model.requests[-1].messages[0].content == "Order the usual from Chipotle."
