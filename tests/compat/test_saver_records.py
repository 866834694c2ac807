"""Spec: the records a compat saver builds are exactly what the plain code paths build.

The hot path of ``put`` and ``put_writes`` takes shortcuts (a parsed
timestamp, configs read without the ABC checks, first writes built in
order); each must give what the straightforward code gives, for every input.
"""

from __future__ import annotations

import datetime as dt
from collections import UserDict
from typing import Any

import pytest

from flowcore.compat.langgraph import InMemorySaver
from flowcore.compat.langgraph._savers_records import (
    _created_at,
    _first_writes,
    _merged_writes,
    _round_trips,
    merged_metadata,
)


@pytest.mark.parametrize(
    "ts",
    [
        "2026-01-01T00:00:00+00:00",
        "2026-11-24T15:13:24.581948+00:00",
        "2026-11-24T15:13:24.5+02:00",
        "2026-11-24T15:13:24Z",
    ],
)
def test_the_created_at_of_a_timestamp_is_what_datetime_reads(ts: str) -> None:
    assert _created_at({"ts": ts}) == dt.datetime.fromisoformat(ts).timestamp()


class Stamp:
    def __str__(self) -> str:
        return "2026-01-01T00:00:00+00:00"


def test_created_at_reads_any_value_by_its_str_and_falls_back_to_now() -> None:
    assert _created_at({"ts": Stamp()}) == dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp()
    before = dt.datetime.now(dt.UTC).timestamp()
    assert _created_at({"ts": "not a time"}) >= before
    assert _created_at({}) >= before


@pytest.mark.parametrize(
    ("versions", "expected"),
    [
        ({}, True),
        ({"a": 1, "b": "00002.0.5"}, True),
        ({"a": 1.0}, False),
        ({"a": True}, False),
        ({"a": (1,)}, False),
        ({1: 1}, False),
    ],
)
def test_round_trips(versions: dict[Any, Any], expected: bool) -> None:
    assert _round_trips(versions) is expected


def test_merged_metadata_reads_mappings_that_are_not_dicts() -> None:
    config = {
        "metadata": UserDict({"owner": "ann", "__hidden": 1}),
        "configurable": UserDict({"thread_id": "t", "user": "bob\u0000", "obj": object()}),
    }
    assert merged_metadata(config, {"step": 1, "note": "a\u0000b"}) == {
        "step": 1,
        "note": "ab",
        "owner": "ann",
        "user": "bob",
    }
    assert merged_metadata({"metadata": None, "configurable": None}, {"step": 1}) == {"step": 1}


@pytest.mark.parametrize(
    "writes",
    [
        [],
        [("a", 1)],
        [("a", 1), ("b", 2), ("a", 3)],
        [("a", 1), ("__interrupt__", "q"), ("b", 2)],
        [("__error__", "e1"), ("__error__", "e2")],
        [("__resume__", "r"), ("__interrupt__", "q"), ("__scheduled__", None), ("x", 0)],
    ],
)
def test_the_first_writes_of_a_task_are_what_merging_into_nothing_gives(
    writes: list[tuple[str, Any]],
) -> None:
    entries: dict[int, dict[str, Any]] = {}
    changed = _merged_writes(entries, writes, "~p")
    expected = [entries[i] for i in sorted(entries)]
    assert _first_writes(writes, "~p") == expected
    assert changed is bool(expected)


def ckpt(cid: str, values: dict[str, Any], versions: dict[str, Any]) -> dict[str, Any]:
    return {
        "v": 4,
        "id": cid,
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": versions,
        "versions_seen": {},
        "updated_channels": None,
    }


async def test_a_config_changed_between_puts_is_read_again_each_time() -> None:
    saver = InMemorySaver()
    md = {"source": "loop", "step": 0, "parents": {}}
    config: dict[str, Any] = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    c1 = await saver.aput(config, ckpt("c1", {"x": 1}, {"x": 1}), md, {"x": 1})
    c2 = await saver.aput(c1, ckpt("c2", {"x": 2}, {"x": 2}), md, {"x": 2})
    # The config put returned, changed in place: its new keys count at the next put.
    c2["configurable"]["user"] = "ann"
    c2["metadata"] = {"team": "blue"}
    c3 = await saver.aput(c2, ckpt("c3", {"x": 3}, {"x": 3}), md, {"x": 3})
    c3["metadata"] = {"team": "red", "user": "bob"}
    c3["configurable"]["thread_id"] = "t"
    c4 = await saver.aput(c3, ckpt("c4", {"x": 4}, {"x": 4}), md, {"x": 4})
    metadata = {
        cid: (await saver.aget_tuple(c)).metadata  # type: ignore[union-attr]
        for cid, c in [("c2", c2), ("c3", c3), ("c4", c4)]
    }
    assert metadata["c2"] == md
    assert metadata["c3"] == {**md, "team": "blue", "user": "ann"}
    assert metadata["c4"] == {**md, "team": "red", "user": "bob"}
    # The same dict naming another thread or namespace next time stores there.
    c4["configurable"]["checkpoint_ns"] = "sub"
    await saver.aput(c4, ckpt("c5", {"x": 5}, {"x": 5}), md, {"x": 5})
    got = await saver.aget_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": "sub"}})
    assert got is not None
    assert got.checkpoint["id"] == "c5"
    assert got.checkpoint["channel_values"] == {"x": 5}
