"""Spec: one SQLite file can hold the block registry, memory and checkpoints side by side."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TypedDict

import pytest

from flowcore import END, START, Graph
from flowcore.blocks import SqliteBlockStore
from flowcore.checkpoint.sqlite import SqliteCheckpointer
from flowcore.errors import CheckpointStoreError
from flowcore.memory import SqliteStore


class Counter(TypedDict):
    n: int


async def test_checkpoints_open_a_file_the_other_flowcore_stores_created(tmp_path: Path) -> None:
    db = tmp_path / "flowcore.db"
    async with SqliteBlockStore(db) as blocks, SqliteStore(db) as memory:
        await memory.put(("users", "ada"), "food", "tacos")
        graph = Graph(Counter, name="g")
        graph.add_node("one", lambda s: {"n": 1})
        graph.add_edge(START, "one").add_edge("one", END)
        async with SqliteCheckpointer(db) as checkpoints:
            result = await graph.compile(checkpointer=checkpoints).run({}, thread_id="t1")
            snapshot = await graph.compile(checkpointer=checkpoints).get_state("t1")
        assert result.status == "completed"
        assert snapshot.values == {"n": 1}
        assert (await memory.get(("users", "ada"), "food")).value == "tacos"  # type: ignore[union-attr]
        assert await blocks.get("summarize")


async def test_a_file_with_tables_of_something_else_is_still_refused(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    before = db.read_bytes()
    with pytest.raises(CheckpointStoreError, match="invoices"):
        async with SqliteCheckpointer(db):
            pass
    assert db.read_bytes() == before
