"""Spec: a BlockDefinition is data that can run, or is refused naming the field and the fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flowcore.blocks import BlockDefinition
from flowcore.errors import BlockDefinitionError, FlowcoreError


def base(**fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"id": "b1", "name": "Block", "description": "does a thing"}
    data.update(fields)
    return data


LLM = {"kind": "llm", "prompt_template": "Summarize {{ text }}"}
PYTHON = {"kind": "python", "source_code": "async def execute(inputs, context):\n    return {}\n"}


def problems(data: dict[str, Any]) -> tuple[str, ...]:
    with pytest.raises(BlockDefinitionError) as info:
        BlockDefinition.from_data(data)
    assert isinstance(info.value, FlowcoreError)
    assert isinstance(info.value, ValueError)
    return info.value.problems


# --------------------------------------------------------------- valid blocks
@pytest.mark.parametrize(
    "fields",
    [
        LLM,
        PYTHON,
        {"kind": "tool", "tool": "http_get"},
        {"kind": "decision", "branches": {"yes": "a", "no": "b"}, "prompt_template": "ok?"},
        {"kind": "memory_query"},
        {"kind": "memory_save"},
        {"kind": "human"},
        {"kind": "wait"},
    ],
    ids=lambda f: f["kind"],
)
def test_every_kind_builds_with_the_field_it_needs(fields: dict[str, Any]) -> None:
    block = BlockDefinition.from_data(base(**fields))

    assert block.kind == fields["kind"]
    assert block.version == 1
    assert block.max_retries == 2
    assert block.timeout_seconds == 60


def test_key_lists_are_shorthand_for_object_schemas() -> None:
    block = BlockDefinition.from_data(base(input_keys=["a", "b"], output_keys=["c"], **LLM))

    assert block.input_schema == {
        "type": "object",
        "properties": {"a": {}, "b": {}},
        "required": ["a", "b"],
    }
    assert block.output_schema["required"] == ["c"]


def test_seed_field_names_are_accepted() -> None:
    block = BlockDefinition.from_data(
        {
            "block_id": "query_memory",
            "name": "Query Memory",
            "description": "Search long-term memory",
            "block_type": "query_memory",
            "llm_provider": "anthropic",
            "llm_model": "claude-x",
            "input_keys": ["memory_query"],
            "output_keys": ["memory_results"],
        }
    )

    assert (block.id, block.kind, block.provider, block.model) == (
        "query_memory",
        "memory_query",
        "anthropic",
        "claude-x",
    )


def test_a_definition_round_trips_through_json() -> None:
    block = BlockDefinition.from_data(
        base(tags=["text", "nlp"], examples=[{"inputs": {"text": "x"}, "outputs": {}}], **LLM)
    )

    again = BlockDefinition.from_data(json.loads(block.model_dump_json()))

    assert again == block


# ------------------------------------------------------------- refused blocks
@pytest.mark.parametrize(
    ("fields", "field", "fix"),
    [
        ({"kind": "llm"}, "prompt_template", "needs prompt_template"),
        ({"kind": "python"}, "source_code", "needs source_code"),
        ({"kind": "tool"}, "tool", "needs tool"),
        ({"kind": "decision", "prompt_template": "?"}, "branches", "needs branches"),
        ({"kind": "decision", "branches": {"y": "a"}}, "decision", "prompt_template or source"),
        ({"kind": "sing"}, "kind", "llm"),
        ({**LLM, "branches": {"y": "a"}}, "branches", "only apply to 'decision'"),
    ],
)
def test_a_kind_without_its_field_is_refused(fields: dict[str, Any], field: str, fix: str) -> None:
    found = problems(base(**fields))

    assert any(fix in p for p in found), found
    assert any(field in p for p in found), found


def test_a_broken_template_names_the_line() -> None:
    (problem,) = problems(base(kind="llm", prompt_template="Hi {{ name\n"))

    assert problem.startswith("prompt_template:")
    assert "line" in problem
    assert "{{ name }}" in problem


def test_python_source_must_parse_and_define_execute() -> None:
    (broken,) = problems(base(kind="python", source_code="def execute(:\n"))
    (missing,) = problems(base(kind="python", source_code="x = 1\n"))

    assert broken.startswith("source_code:")
    assert "line 1" in broken
    assert "async def execute(inputs, context)" in missing


@pytest.mark.parametrize(
    ("schema", "fix"),
    [
        ({"type": "array"}, "object"),
        ({"type": "object", "properties": {"a": {"type": "strng"}}}, "unknown JSON Schema type"),
        ({"type": "object", "properties": {"a": {}}, "required": ["b"]}, "not in properties"),
        ("not a schema", "dict"),
    ],
)
def test_bad_schemas_are_refused(schema: Any, fix: str) -> None:
    found = problems(base(input_schema=schema, **LLM))

    assert any(p.startswith("input_schema") and fix in p for p in found), found


def test_every_problem_is_listed_at_once_with_its_field() -> None:
    found = problems(
        {"id": "9bad id", "name": "", "description": "d", "kind": "llm", "max_retries": -1}
    )

    fields = {p.split(":")[0] for p in found}
    assert {"id", "name", "max_retries"} <= fields


def test_shorthand_and_full_schema_together_are_refused() -> None:
    found = problems(base(input_keys=["a"], input_schema={"type": "object"}, **LLM))

    assert any("either input_keys or input_schema" in p for p in found)


def test_unknown_fields_are_refused_by_name() -> None:
    found = problems(base(promt_template="typo", **LLM))

    assert any(p.startswith("promt_template") for p in found)
