"""Spec: the serializer refuses, typed and by path, the values JSON text cannot hold.

Lone surrogates, ints past Python's 4300-digit text limit and nesting past
``MAX_NESTING`` used to escape as ``UnicodeEncodeError``, ``ValueError`` and
``RecursionError`` from deep inside a checkpoint or history write.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from flowcore.checkpoint.serde import (
    MAX_NESTING,
    JsonSerializer,
    check_json_value,
    check_storable,
    check_text_and_nesting,
)
from flowcore.errors import SerializationError


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "path", "words"),
    [
        ({"name": "caf\udce9"}, "value.name", "lone surrogate"),
        ({"n": [1, 10**5000]}, "value.n[1]", "too long to write as text"),
        ({"\ud800": 1}, "value", "the key"),
        ({"deep": nested(MAX_NESTING + 20)}, "value.deep[0]", "levels deep"),
    ],
)
def test_dumps_refuses_what_json_text_cannot_hold_naming_where_it_is(
    value: Any, path: str, words: str
) -> None:
    with pytest.raises(SerializationError) as caught:
        JsonSerializer().dumps(value)
    assert caught.value.path.startswith(path)
    assert words in str(caught.value)


def test_a_value_that_contains_itself_is_refused_not_a_recursion_error() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(SerializationError, match="contains itself"):
        JsonSerializer().dumps({"loop": loop})


def test_what_check_storable_accepts_is_stored_and_read_back_inside_a_record() -> None:
    value = {"deep": nested(MAX_NESTING - 2), "big": 10**4000, "text": "café"}
    check_storable(value)
    record = {"checkpoint": {"snapshot": {"values": value}}}
    serde = JsonSerializer()
    assert serde.loads(serde.dumps(record)) == record


def test_check_storable_is_stricter_than_dumps_by_the_levels_a_record_adds() -> None:
    too_deep = {"x": nested(MAX_NESTING + 1)}
    JsonSerializer().dumps(too_deep)  # a store's record levels fit on top ...
    with pytest.raises(SerializationError, match="100 levels deep"):
        check_storable(too_deep, path="input")  # ... so a user value may not use them


def test_foreign_bytes_nested_past_any_limit_are_a_serialization_error() -> None:
    with pytest.raises(SerializationError, match="foreign or damaged"):
        JsonSerializer().loads(b"[" * 100_000 + b"]" * 100_000)


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"x": math.nan}, "value.x"),
        ({"x": [math.inf]}, "value.x[0]"),
        ({"x": object()}, "value.x"),
        ({1: "a"}, "value"),
        ({"x": "\udfff"}, "value.x"),
        ({"x": nested(MAX_NESTING)}, "value.x"),
    ],
)
def test_check_json_value_refuses_anything_but_plain_json(value: Any, path: str) -> None:
    with pytest.raises(SerializationError) as caught:
        check_json_value(value)
    assert caught.value.path.startswith(path)


def test_check_json_value_takes_plain_json_and_tuples() -> None:
    check_json_value({"a": [1, 2.5, None, True, "x", ("t", {"b": []})]})


def test_check_text_and_nesting_lets_any_object_through_but_not_bad_text_or_depth() -> None:
    check_text_and_nesting({"when": object(), "n": 10**5000})
    with pytest.raises(SerializationError, match="lone surrogate"):
        check_text_and_nesting({"k": ("ok", "\ud800")}, path="inputs")
    with pytest.raises(SerializationError, match="levels deep"):
        check_text_and_nesting(nested(MAX_NESTING + 1))
