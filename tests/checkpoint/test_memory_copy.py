"""Spec: the in-memory store copies values exactly, by a restricted pickler where it can.

Values made only of exact builtin types are pickled; everything else (enums,
models, dates, types JSON cannot hold) goes through the JSON serializer, so
the in-memory store accepts and rejects what SQLite does and hands back the
same types.
"""

from __future__ import annotations

import enum
import math
import pickle
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from flowcore.checkpoint import Checkpoint, InMemoryCheckpointer, PendingWrite
from flowcore.checkpoint.copying import CopyCodec
from flowcore.errors import SerializationError


class Colour(enum.StrEnum):
    RED = "red"


def _cp(values: dict[str, Any]) -> Checkpoint:
    snapshot = {"values": values, "outputs": {}}
    return Checkpoint("t", "c1", None, step=0, created_at=0.0, snapshot=snapshot)


async def _round_trip(values: dict[str, Any]) -> dict[str, Any]:
    store = InMemoryCheckpointer()
    await store.put(_cp(values))
    got = await store.get("t")
    assert got is not None
    assert got.snapshot is not None
    return dict(got.snapshot["values"])


async def test_builtin_values_come_back_with_their_exact_types() -> None:
    values = {
        "pair": (1, ("a", None)),
        "keys": {7: "int", 2.5: "float", True: "bool", None: "none"},
        "blob": b"\x00\xff",
        "big": 2**80,
        "nested": [{"x": [1, 2.0, "3"]}],
    }
    got = await _round_trip(values)
    assert got == values
    assert type(got["pair"]) is tuple
    assert type(got["pair"][1]) is tuple
    assert type(got["blob"]) is bytes


async def test_non_finite_floats_survive() -> None:
    got = await _round_trip({"nan": math.nan, "inf": -math.inf})
    assert math.isnan(got["nan"])
    assert got["inf"] == -math.inf


async def test_a_subclass_of_a_builtin_keeps_its_type() -> None:
    # A str enum passes every isinstance check for str: it must not be copied as one.
    got = await _round_trip({"colour": Colour.RED, "in_list": [Colour.RED]})
    assert got["colour"] is Colour.RED
    assert got["in_list"][0] is Colour.RED


async def test_sets_and_tuple_keys_keep_their_types() -> None:
    values = {"tags": {"a", "b"}, "frozen": frozenset({1}), "by_pair": {(1, 2): "x"}}
    got = await _round_trip(values)
    assert got == values
    assert type(got["tags"]) is set
    assert type(got["frozen"]) is frozenset


async def test_an_object_saved_twice_comes_back_as_two_copies() -> None:
    # As from SQLite's JSON: no aliasing survives a round trip.
    shared = [1, 2]
    got = await _round_trip({"a": shared, "b": shared})
    assert got["a"] == got["b"] == [1, 2]
    assert got["a"] is not got["b"]


async def test_a_bytearray_stays_a_bytearray() -> None:
    got = await _round_trip({"buffer": bytearray(b"x")})
    assert type(got["buffer"]) is bytearray
    assert got["buffer"] == bytearray(b"x")


@pytest.mark.parametrize(
    "bad", [1j, Ellipsis, pickle.PickleBuffer(b"x")], ids=["complex", "ellipsis", "picklebuffer"]
)
async def test_what_pickle_could_copy_but_json_cannot_store_is_rejected(bad: Any) -> None:
    store = InMemoryCheckpointer()
    with pytest.raises(SerializationError):
        await store.put(_cp({"bad": [bad]}))
    assert await store.get("t") is None


async def test_writes_take_the_same_paths() -> None:
    store = InMemoryCheckpointer()
    await store.put(_cp({}))
    update = {"pair": (1, 2), "colour": Colour.RED}
    await store.put_write("t", "c1", PendingWrite("a", {"update": update}))
    (write,) = await store.get_writes("t", "c1")
    assert write.payload == {"update": update}
    assert type(write.payload["update"]["pair"]) is tuple
    assert write.payload["update"]["colour"] is Colour.RED


def test_a_refused_value_does_not_spoil_the_next_copy() -> None:
    codec = CopyCodec()
    big = [list(range(1000)) for _ in range(100)]  # spans several pickle frames
    codec.dumps([*big, Colour.RED])  # refused half-way by the pickler, then JSON
    assert codec.loads(codec.dumps({"x": (1, 2)})) == {"x": (1, 2)}
    assert codec.loads(codec.dumps(big)) == big


def test_threads_copying_at_once_each_get_their_own_value() -> None:
    codec = CopyCodec()

    def copy(n: int) -> bool:
        value = {"n": n, "items": list(range(n % 50)), "pair": (n, str(n))}
        return all(codec.loads(codec.dumps(value)) == value for _ in range(200))

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(copy, range(64)))
