"""Match validation: execution types and IO schema compatibility."""

from __future__ import annotations

from typing import Any

import pytest

from flowcore.search import execution_type_matches, io_compatible


def obj(required: list[str] | None = None, **props: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {k: ({"type": v} if v else {}) for k, v in props.items()},
    }
    if required is not None:
        schema["required"] = required
    return schema


BLOCK = {
    "input_schema": obj(["text", "lang"], text="string", lang="string", style="string"),
    "output_schema": obj(translation="string", confidence="number", count="integer"),
}


def test_a_block_fits_when_its_required_inputs_are_provided_and_outputs_produced() -> None:
    need = {
        "input_schema": obj(text="string", lang="string"),
        "output_schema": obj(translation="string"),
    }
    assert io_compatible(need, BLOCK).ok


def test_a_required_input_the_caller_cannot_provide_is_named() -> None:
    match = io_compatible({"input_schema": obj(text="string")}, BLOCK)
    assert not match
    assert match.problems == ("the block requires input 'lang', which is not provided",)


def test_optional_block_inputs_need_not_be_provided() -> None:
    # "style" is accepted by the block but not required: leaving it out is fine.
    assert io_compatible({"input_schema": obj(text="string", lang="string")}, BLOCK).ok


def test_a_requested_output_the_block_does_not_produce_is_named() -> None:
    match = io_compatible({"output_schema": obj(summary="string")}, BLOCK)
    assert match.problems == ("the block does not produce requested output 'summary'",)


@pytest.mark.parametrize(
    ("need", "ok"),
    [
        ({"output_schema": obj(count="number")}, True),  # an integer is a number
        ({"output_schema": obj(confidence="integer")}, False),  # a number may not be whole
        ({"output_schema": obj(translation="array")}, False),
        ({"output_schema": obj(translation="")}, True),  # untyped: anything is fine
        ({"input_schema": obj(text="integer", lang="string")}, False),
        ({"input_schema": obj(text="", lang="string")}, True),
        ({"input_schema": obj(text=["string", "null"], lang="string")}, False),
    ],
)
def test_types_must_be_compatible(need: dict[str, Any], ok: bool) -> None:
    assert io_compatible(need, BLOCK).ok is ok


def test_a_type_problem_says_both_types() -> None:
    match = io_compatible({"input_schema": obj(text="integer", lang="string")}, BLOCK)
    assert match.problems == ("input 'text': provided integer, the block takes string",)


def test_a_caller_without_schemas_accepts_any_block() -> None:
    assert io_compatible({}, BLOCK).ok
    assert io_compatible({"input_schema": None, "output_schema": None}, BLOCK).ok


def test_a_block_without_schemas_requires_nothing_and_produces_nothing() -> None:
    assert io_compatible({"input_schema": obj(text="string")}, {}).ok
    assert not io_compatible({"output_schema": obj(x="string")}, {}).ok


@pytest.mark.parametrize(
    ("wanted", "kind", "ok"),
    [
        (None, "python", True),
        ("python", "python", True),
        ("python", "llm", False),
        ("action", "llm", True),
        ("extraction", "llm", True),
        ("query_memory", "memory_query", True),
        ("llm", "tool", False),
    ],
)
def test_execution_types_match_by_kind_and_seed_alias(
    wanted: str | None, kind: str, ok: bool
) -> None:
    assert execution_type_matches(wanted, kind) is ok
