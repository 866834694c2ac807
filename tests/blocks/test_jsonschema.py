"""Spec: block inputs and outputs are checked against the JSON Schema subset blocks use."""

from __future__ import annotations

from typing import Any

import pytest

from flowcore.blocks.jsonschema import schema_problems

ITEM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "price": {"type": "number", "minimum": 0},
        "qty": {"type": "integer", "exclusiveMinimum": 0},
    },
    "required": ["name", "price"],
    "additionalProperties": False,
}
ORDER = {
    "type": "object",
    "properties": {
        "items": {"type": "array", "items": ITEM, "minItems": 1},
        "status": {"enum": ["new", "paid"]},
        "note": {"type": ["string", "null"], "maxLength": 5},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
    },
    "required": ["items"],
}


def test_a_fitting_value_has_no_problems() -> None:
    order = {
        "items": [{"name": "tea", "price": 2.5, "qty": 1}, {"name": "cup", "price": 0}],
        "status": "paid",
        "note": None,
        "code": "ABC",
    }

    assert schema_problems(order, ORDER, "inputs") == []


@pytest.mark.parametrize(
    ("order", "problem"),
    [
        ({}, "inputs: missing required key items"),
        ({"items": []}, "inputs.items: needs at least 1 items, has 0"),
        ({"items": "tea"}, "inputs.items: expected array, got string"),
        ({"items": [{"name": "tea"}]}, "inputs.items[0]: missing required key price"),
        (
            {"items": [{"name": "tea", "price": "2"}]},
            "inputs.items[0].price: expected number, got string",
        ),
        ({"items": [{"name": "tea", "price": -1}]}, "inputs.items[0].price: must be >= 0, got -1"),
        (
            {"items": [{"name": "tea", "price": 1, "qty": True}]},
            "inputs.items[0].qty: expected integer, got boolean",
        ),
        (
            {"items": [{"name": "tea", "price": 1, "qty": 0}]},
            "inputs.items[0].qty: must be > 0, got 0",
        ),
        (
            {"items": [{"name": "tea", "price": 1, "size": "L"}]},
            "inputs.items[0]: unexpected key size (allowed: name, price, qty)",
        ),
        (
            {"items": [{"name": "", "price": 1}]},
            "inputs.items[0].name: needs at least 1 characters",
        ),
        (
            {"items": [{"name": "t", "price": 1}], "status": "gone"},
            "inputs.status: 'gone' is not one of ['new', 'paid']",
        ),
        (
            {"items": [{"name": "t", "price": 1}], "note": "too long"},
            "inputs.note: allows at most 5 characters",
        ),
        (
            {"items": [{"name": "t", "price": 1}], "note": 3},
            "inputs.note: expected string or null, got integer",
        ),
        (
            {"items": [{"name": "t", "price": 1}], "code": "ab"},
            "inputs.code: does not match pattern '^[A-Z]{3}$'",
        ),
    ],
)
def test_each_problem_names_its_path(order: dict[str, Any], problem: str) -> None:
    assert problem in schema_problems(order, ORDER, "inputs")


def test_every_problem_is_reported_not_just_the_first() -> None:
    found = schema_problems({"items": [{"price": "x"}, {"name": 1, "price": 1}]}, ORDER, "in")

    assert found == [
        "in.items[0]: missing required key name",
        "in.items[0].price: expected number, got string",
        "in.items[1].name: expected string, got integer",
    ]


def test_combinators() -> None:
    either = {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    exactly = {"oneOf": [{"type": "number"}, {"type": "integer"}]}
    both = {"allOf": [{"type": "integer"}, {"maximum": 3}]}

    assert schema_problems("x", either) == []
    assert schema_problems(1.5, either) == ["value: matches none of the allowed shapes (anyOf)"]
    assert schema_problems(1.5, exactly) == []
    assert schema_problems(2, exactly) == [
        "value: must match exactly one allowed shape (oneOf), matches 2"
    ]
    assert schema_problems(5, both) == ["value: must be <= 3, got 5"]


def test_additional_properties_can_have_a_schema() -> None:
    scores = {"type": "object", "additionalProperties": {"type": "integer"}}

    assert schema_problems({"a": 1, "b": 2}, scores) == []
    assert schema_problems({"a": 1, "b": "2"}, scores) == ["value.b: expected integer, got string"]


def test_a_const_and_an_empty_schema() -> None:
    assert schema_problems("v1", {"const": "v1"}) == []
    assert schema_problems("v2", {"const": "v1"}) == ["value: must be 'v1', got 'v2'"]
    assert schema_problems(object(), {}) == []


def test_a_value_too_large_to_print_is_named_without_failing_the_check() -> None:
    # An int past Python's 4300-digit limit cannot become text; found by the deep fuzz run.
    huge = 10**4400
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "maximum": 5}},
        "additionalProperties": False,
    }

    problems = schema_problems({"n": huge, huge: 1}, schema, "inputs")

    assert problems == [
        "inputs.n: must be <= 5, got <an int of about 4401 digits>",
        "inputs: unexpected key <an int of about 4401 digits> (allowed: n)",
    ]
