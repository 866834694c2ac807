"""Spec: the serializer's plain-JSON fast path, and stores that encode a batch in one call.

``is_plain_json_or`` judges a value as ``is_plain_json`` does and asks its
caller only about objects of other types; ``encoder_with`` writes what the
serializer writes and calls its hook only for objects that are not JSON
types. A store whose serializer has ``dumps_many`` hands it a whole batch.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flowcore.checkpoint import Checkpoint, JsonSerializer, PendingWrite, WriteAt
from flowcore.checkpoint.plain_json import encoder_with, is_plain_json, is_plain_json_or, to_json
from flowcore.checkpoint.serde import MAX_NESTING
from flowcore.checkpoint.sqlite import SqliteCheckpointer

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(),
    st.binary(max_size=3),
    st.tuples(st.integers()),
)
values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.one_of(st.text(), st.integers(), st.none()), inner, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(values, st.integers(0, MAX_NESTING + 15))
def test_with_a_caller_that_takes_nothing_the_verdict_is_is_plain_json(
    value: Any, depth: int
) -> None:
    asked: list[Any] = []

    def nothing(obj: Any, at: int) -> bool:
        asked.append(obj)
        return False

    assert is_plain_json_or(value, depth, nothing) == is_plain_json(value, depth)
    for obj in asked:  # only objects of other types are asked about
        assert type(obj) not in (dict, list, str, int, bool, type(None))
        assert type(obj) is not float or not math.isfinite(obj)


def test_the_caller_is_asked_about_other_objects_with_their_depth() -> None:
    marker = object()
    asked: list[tuple[Any, int]] = []

    def take(obj: Any, depth: int) -> bool:
        asked.append((obj, depth))
        return True

    value = {"a": [marker, (1, 2)], "b": {"c": float("nan")}, "d": 1.5, "e": {1: "key"}}
    assert not is_plain_json_or(value, 0, take)  # an int key is never the caller's
    del value["e"]
    asked.clear()
    assert is_plain_json_or(value, 0, take)
    assert [depth for _, depth in asked] == [2, 2, 2]
    assert asked[0][0] is marker
    assert asked[1][0] == (1, 2)
    assert math.isnan(asked[2][0])


def test_a_tag_like_key_and_depth_past_the_limit_are_never_plain() -> None:
    def take(obj: Any, depth: int) -> bool:
        return True

    assert not is_plain_json_or({"__fc__": "x", "v": 1}, 0, take)
    deep: Any = []
    for _ in range(MAX_NESTING + 10):
        deep = [deep]
    assert not is_plain_json_or(deep, 0, take)
    assert is_plain_json_or(deep, 0, take) == is_plain_json(deep, 0)


@settings(max_examples=200, deadline=None)
@given(values)
def test_the_hooked_encoder_writes_plain_values_as_to_json_does(value: Any) -> None:
    called: list[Any] = []

    def hook(obj: Any) -> Any:
        called.append(obj)
        raise TypeError("not JSON")

    encode = encoder_with(hook)
    assert encode is not None
    if is_plain_json(value, 0):
        assert encode(value) == to_json(value)
        assert not called


def test_the_hook_writes_what_it_returns_in_place_of_the_object() -> None:
    encode = encoder_with(lambda obj: {"made": type(obj).__name__})
    assert encode is not None
    assert encode([1, {"x": object()}, "é"]) == '[1,{"x":{"made":"object"}},"é"]'


class BatchCounting(JsonSerializer):
    """A JSON serializer that encodes batches through ``dumps_many`` and counts the calls."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def dumps_many(self, items: list[tuple[Any, str]]) -> list[bytes]:
        self.batches.append(len(items))
        return [self.dumps(value, path=path) for value, path in items]


async def test_put_many_hands_the_whole_batch_to_dumps_many(tmp_path: Path) -> None:
    serializer = BatchCounting()
    first = Checkpoint("t", "c1", None, step=0, created_at=1.0)
    second = Checkpoint("t", "c2", "c1", step=1, created_at=2.0, metadata={"k": [1, 2]})
    write = WriteAt("t", "c2", PendingWrite("node", {"out": ("a", 1)}))
    async with SqliteCheckpointer(tmp_path / "batch.db", serializer=serializer) as store:
        await store.put_many([first, second, write])
        await store.put(Checkpoint("t", "c3", "c2", step=2, created_at=3.0))
        assert serializer.batches == [3]  # a single item is encoded with dumps
        assert (await store.get("t", "c2")) == second
        assert [w.payload for w in await store.get_writes("t", "c2")] == [{"out": ("a", 1)}]
