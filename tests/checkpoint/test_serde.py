"""Spec: checkpointed values are JSON with tagged types, restored exactly, never pickled."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import json
import math
import pathlib
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from flowcore import SerializationError
from flowcore.checkpoint import JsonSerializer


class Color(enum.Enum):
    RED = "r"
    BLUE = "b"


class Note(BaseModel):
    text: str
    tags: set[str] = set()


class Card(BaseModel):
    title: str
    notes: list[Note] = []


SERDE = JsonSerializer()

ROUND_TRIPS = [
    None,
    True,
    0,
    2**80,
    -7,
    "text with ünïcode",
    1.5,
    [1, "a", None],
    {"a": {"b": [1, 2]}},
    {1: "int key", (1, 2): "tuple key"},
    {"__fc__": "looks like a tag", "v": 1},
    (1, (2, 3)),
    {3, 1, 2},
    frozenset({"x", "y"}),
    b"\x00\xffbytes",
    bytearray(b"mutable"),
    dt.datetime(2026, 11, 22, 10, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    dt.datetime(2026, 11, 22, 10, 30, 5, 123),
    dt.date(2026, 11, 22),
    dt.time(10, 30, 5),
    dt.timedelta(days=2, seconds=5, microseconds=7),
    decimal.Decimal("1.10"),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    pathlib.Path("/tmp/report.txt"),
    Color.BLUE,
    Note(text="hi", tags={"a"}),
    Card(title="t", notes=[Note(text="n")]),
    {"nested": [Note(text="deep"), (Color.RED, {1, 2})]},
]


@pytest.mark.parametrize("value", ROUND_TRIPS, ids=lambda v: type(v).__name__)
def test_a_supported_value_comes_back_equal_and_of_the_same_type(value: Any) -> None:
    restored = SERDE.loads(SERDE.dumps(value))

    assert restored == value
    assert type(restored) is type(value)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_non_finite_floats_survive(value: float) -> None:
    restored = SERDE.loads(SERDE.dumps({"x": value}))["x"]

    assert math.isnan(restored) if math.isnan(value) else restored == value


def test_the_bytes_are_plain_compact_json() -> None:
    assert SERDE.dumps({"a": [1, "x"], "b": None}) == b'{"a":[1,"x"],"b":null}'


@settings(derandomize=True, database=None, max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_plain_json_is_what_the_standard_encoder_writes(value: Any) -> None:
    # Same bytes as json.dumps with compact separators and raw UTF-8.
    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert SERDE.dumps(value) == expected.encode()


class Level(enum.StrEnum):
    HIGH = "high"


class Tally(dict[str, int]):
    pass


def test_subclasses_of_plain_types_are_not_taken_for_plain_json() -> None:
    # A str enum or a dict subclass would pass through the JSON encoder as its
    # base type and load back as one: each must keep its own type.
    value = {"level": Level.HIGH, "nested": [[{"deep": Level.HIGH}]], "ok": [True, 1.5]}
    restored = SERDE.loads(SERDE.dumps(value))

    assert type(restored["level"]) is Level
    assert type(restored["nested"][0][0]["deep"]) is Level
    assert restored["ok"] == [True, 1.5]
    with pytest.raises(SerializationError, match="Tally"):
        SERDE.dumps({"counts": Tally(a=1)})


class Text(str):
    """A str subclass that is no enum, like LangChain's ``message.text`` accessor."""


def test_a_plain_str_subclass_is_stored_as_its_text() -> None:
    restored = SERDE.loads(SERDE.dumps({"reply": Text("Done"), "more": [Text("x")]}))

    assert restored == {"reply": "Done", "more": ["x"]}
    assert type(restored["reply"]) is str


def test_equal_sets_give_equal_bytes_whatever_their_insertion_order() -> None:
    assert SERDE.dumps({"s": {"b", "a", "c"}}) == SERDE.dumps({"s": {"c", "a", "b"}})


def test_a_dict_with_the_tag_key_is_kept_as_data() -> None:
    value = {"__fc__": "model", "cls": "os:system", "v": {}}

    assert SERDE.loads(SERDE.dumps(value)) == value


@pytest.mark.parametrize(
    "bad", [object(), lambda: None, iter([1])], ids=["object", "lambda", "iter"]
)
def test_an_unsupported_value_is_refused_naming_where_it_sits(bad: Any) -> None:
    with pytest.raises(SerializationError) as info:
        SERDE.dumps({"notes": ["ok", {"conn": bad}]}, path="values")

    assert info.value.path == "values.notes[1].conn"
    assert "values.notes[1].conn" in str(info.value)
    assert type(bad).__name__ in str(info.value)
    assert isinstance(info.value, TypeError)


def test_a_model_defined_inside_a_function_is_refused_at_dump_time() -> None:
    class Local(BaseModel):
        x: int = 1

    with pytest.raises(SerializationError, match="inside a function"):
        SERDE.dumps({"m": Local()})


def test_loading_never_imports_anything_but_models_and_enums() -> None:
    crafted = b'{"__fc__":"model","cls":"os:system","v":{}}'

    with pytest.raises(SerializationError, match="not a BaseModel subclass"):
        SERDE.loads(crafted)
    with pytest.raises(SerializationError, match="not a dataclass"):
        SERDE.loads(b'{"__fc__":"dataclass","cls":"os:system","v":{}}')


@dataclasses.dataclass
class Decision:
    approved: bool
    notes: list[str] = dataclasses.field(default_factory=list)
    seen: int = dataclasses.field(init=False, default=0)


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    at: Level


def test_module_level_dataclasses_come_back_as_themselves() -> None:
    decision = Decision(True, ["ok"])
    decision.seen = 3
    value = {"d": decision, "points": (Point(1, Level.HIGH),)}

    restored = SERDE.loads(SERDE.dumps(value))

    assert restored == value
    assert type(restored["d"]) is Decision
    assert restored["d"].seen == 3
    assert type(restored["points"][0].at) is Level


def test_a_dataclass_defined_inside_a_function_is_refused_and_changed_fields_are_named() -> None:
    @dataclasses.dataclass
    class Local:
        x: int

    with pytest.raises(SerializationError, match="inside a function"):
        SERDE.dumps({"d": Local(1)})
    stale = b'{"__fc__":"dataclass","cls":"%s:Point","v":{"x":1,"gone":2}}' % (__name__.encode())
    with pytest.raises(SerializationError, match="gone"):
        SERDE.loads(stale)


def test_an_unknown_tag_is_refused() -> None:
    with pytest.raises(SerializationError, match="unknown stored type tag"):
        SERDE.loads(b'{"__fc__":"pickle","v":"gASV"}')


@pytest.mark.parametrize("data", [b"\x00\x01 not json", b'{"a": ', "caf\xe9".encode("latin-1")])
def test_corrupt_bytes_are_a_serialization_error(data: bytes) -> None:
    with pytest.raises(SerializationError):
        SERDE.loads(data)


json_leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
hashable = st.integers() | st.text(max_size=5)
values = st.recursive(
    json_leaves | st.binary(max_size=8) | st.frozensets(hashable, max_size=4),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.sets(hashable, max_size=4)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
        | st.dictionaries(st.integers() | st.tuples(st.integers()), inner, max_size=3)
    ),
    max_leaves=20,
)


@settings(derandomize=True, database=None, max_examples=200, deadline=None)
@given(values)
def test_random_nested_values_round_trip_exactly(value: Any) -> None:
    restored = SERDE.loads(SERDE.dumps(value))

    assert restored == value
    assert same_types(restored, value)


def same_types(a: Any, b: Any) -> bool:
    """Equal values can still differ in type (a tuple is == nowhere to a list, but
    True == 1): check the type at every level."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return all(same_types(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return all(
            same_types(ka, kb) and same_types(a[ka], b[kb])
            for ka, kb in zip(sorted(a, key=repr), sorted(b, key=repr), strict=True)
        )
    return True


def _wrapped(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [0, 1, 9, 99, 100])
@pytest.mark.parametrize(
    "value",
    [{"a": [1, {}, []], "b": None}, [[], {}], (1, "x"), {"__fc__": "looks like a tag"}, Color.RED],
)
def test_dumps_nested_writes_what_dumps_writes_that_deep_in_a_record(
    value: Any, depth: int
) -> None:
    s = JsonSerializer()
    try:
        whole = s.dumps(_wrapped(value, depth))
    except SerializationError:
        with pytest.raises(SerializationError):
            s.dumps_nested(value, depth)
        return

    assert s.dumps_nested(value, depth) == whole[depth : len(whole) - depth]


def test_dumps_nested_counts_the_nesting_limit_from_its_depth() -> None:
    s = JsonSerializer()
    deep = _wrapped([], 90)

    assert s.dumps_nested(deep, 5) == s.dumps(deep)
    with pytest.raises(SerializationError, match="nests"):
        s.dumps_nested(deep, 20)


def test_dumps_nested_refuses_a_negative_depth() -> None:
    with pytest.raises(ValueError, match="depth must be 0 or more"):
        JsonSerializer().dumps_nested({}, -1)


def _refused(s: JsonSerializer, value: Any) -> bool:
    try:
        s.dumps(value)
    except SerializationError:
        return True
    return False


def test_an_empty_container_meets_the_nesting_limit_where_a_full_one_does() -> None:
    s = JsonSerializer()
    outcomes = []
    for size in range(90, 140):
        for empty, full in (([], [1]), ({}, {"a": 1})):
            refused = _refused(s, _wrapped(empty, size))
            assert refused == _refused(s, _wrapped(full, size))
            assert _refused(s, {"k": _wrapped(empty, size)}) == _refused(
                s, {"k": _wrapped(full, size)}
            )
            outcomes.append(refused)
    # The limit lies in the range.
    assert False in outcomes
    assert True in outcomes
