"""Spec: MemoryManager keeps a user's preferences and each agent's run history across runs."""

from __future__ import annotations

from pathlib import Path

from flowcore.memory import MemoryManager, SqliteStore


async def test_preferences_are_merged_and_survive_a_new_process_opening_the_file(
    tmp_path: Path,
) -> None:
    async with SqliteStore(tmp_path / "memory.db") as store:
        memory = MemoryManager(store)
        await memory.update_preferences("ada", {"food": "tacos", "time": "12:30"})
        await memory.update_preferences("ada", {"food": "sushi"})
    async with SqliteStore(tmp_path / "memory.db") as reopened:
        prefs = await MemoryManager(reopened).preferences("ada")
        other = await MemoryManager(reopened).preferences("bob")

    assert prefs == {"food": "sushi", "time": "12:30"}
    assert other == {}


async def test_run_history_is_per_user_and_agent_newest_first(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "memory.db") as store:
        memory = MemoryManager(store)
        await memory.record_run("ada", "lunch", "run-1", {"ordered": "burrito"})
        await memory.record_run("ada", "lunch", "run-2", {"ordered": "salad"})
        await memory.record_run("ada", "travel", "run-3", {"booked": "train"})
        await memory.record_run("bob", "lunch", "run-4", {"ordered": "pizza"})

        lunch = await memory.history("ada", "lunch")
        latest = await memory.history("ada", "lunch", limit=1)

    assert [r["run_id"] for r in lunch] == ["run-2", "run-1"]
    assert [r["ordered"] for r in lunch] == ["salad", "burrito"]
    assert latest == lunch[:1]
