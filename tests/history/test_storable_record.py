"""Spec: a record with parts no store can hold is refused typed, or made storable with a note.

``check_record`` (used by every history's ``save``) names a text field with a
lone surrogate as a ``SerializationError`` before anything is written;
``storable_record`` turns a record into one every store takes, replacing
each unstorable part by ``{"unstorable": "<why>"}`` and adding a line per
replaced part to ``errors``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from flowcore.errors import SerializationError
from flowcore.history import (
    InMemoryRunHistory,
    NodeRecord,
    RunRecord,
    SqliteRunHistory,
    storable_record,
)


def record(**changes: object) -> RunRecord:
    base = RunRecord(
        "r1", "digest", 1, "ada", None, "completed", 1700000000.0, 0.5,
        {"doc": "text"}, (NodeRecord("n1", "completed", 0.0, 0.1, 1, {"summary": "s"},
                                     None, None, 3, 2),),
        (), (), 3, 2,
    )  # fmt: skip
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_a_storable_record_comes_back_unchanged() -> None:
    plain = record()
    assert storable_record(plain) is plain


async def test_a_surrogate_in_a_text_column_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    bad = record(user_id="ad\udce9")
    async with SqliteRunHistory(tmp_path / "h.db") as history:
        with pytest.raises(SerializationError, match="user_id"):
            await history.save(bad)
        assert await history.list() == []


@pytest.mark.parametrize("history_kind", ["memory", "sqlite"])
async def test_a_record_made_storable_is_saved_and_says_what_was_left_out(
    tmp_path: Path, history_kind: str
) -> None:
    deep: object = "leaf"
    for _ in range(200):
        deep = [deep]
    bad = record(
        inputs={"doc": "caf\udce9"},
        errors=("NodeError: node 'n1' said \ud800",),
        nodes=(NodeRecord("n1", "completed", 0.0, 0.1, 1, {"tree": deep}, None, None, 0, 0),),
    )
    fixed = storable_record(bad)
    history = InMemoryRunHistory() if history_kind == "memory" else None
    if history is not None:
        await history.save(fixed)
        stored = await history.get("r1")
    else:
        async with SqliteRunHistory(tmp_path / "h.db") as sqlite_history:
            await sqlite_history.save(fixed)
            stored = await sqlite_history.get("r1")
    assert set(stored.inputs) == {"unstorable"}
    assert "lone surrogate" in stored.inputs["unstorable"]
    assert stored.nodes[0].outputs is not None
    assert "levels deep" in stored.nodes[0].outputs["unstorable"]
    assert stored.errors[0] == "NodeError: node 'n1' said \\ud800"
    assert [e.split(":")[1].strip() for e in stored.errors[1:]] == [
        "nodes[0].outputs was not stored",
        "inputs was not stored",
    ]
