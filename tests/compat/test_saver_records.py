"""Spec: the records a compat saver builds are exactly what the plain code paths build.

The hot path of ``put`` and ``put_writes`` takes shortcuts (records made by
their slots, a parsed timestamp, configs read without the ABC checks); each
must give what the straightforward construction gives, for every input.
"""

from __future__ import annotations

import datetime as dt
from collections import UserDict
from typing import Any

import pytest

from flowcore.checkpoint import Checkpoint
from flowcore.compat.langgraph._savers_core import _created_at, _round_trips, merged_metadata
from flowcore.compat.langgraph._savers_layout import new_record


def test_a_record_made_by_its_slots_equals_one_made_by_init() -> None:
    args = ("langgraph/t/", "c2", "c1", 3, 1.5, ((("channels", {"x": 1}),),))
    cursor = {"checkpoint": {"id": "c2"}, "parent": "c1", "blob_at": {"x": "c2"}}
    made = new_record(*args, cursor, {"step": 3})
    assert type(made) is Checkpoint
    assert made == Checkpoint(*args, cursor=cursor, metadata={"step": 3})
    assert made.snapshot is None
    assert made.cursor is cursor  # handed over, as __init__ does
    with pytest.raises(AttributeError):
        made.step = 4  # type: ignore[misc]


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
