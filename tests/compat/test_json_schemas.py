"""Spec: a compiled StateGraph describes its input, output and context as JSON schemas.

A TypedDict or pydantic schema gives its own schema; a dataclass becomes a
model named ``<graph name>Input``/``Output`` whose keys are required unless
they have a default or admit ``None``. No context schema gives ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from flowcore.compat.langgraph import START, StateGraph


class In(TypedDict):
    question: str


class Out(TypedDict):
    answer: str


class Context(TypedDict):
    model: str


@dataclass
class Data:
    needed: str
    maybe: int | None
    given: str = "x"
    many: list[int] = field(default_factory=list)


def _graph(schema: Any, **kw: Any) -> Any:
    return StateGraph(schema, **kw).add_node("n", lambda s: {}).add_edge(START, "n").compile()


def test_typeddict_schemas_and_the_context() -> None:
    graph = _graph(In, input_schema=In, output_schema=Out, context_schema=Context)
    assert graph.get_input_jsonschema()["properties"] == {
        "question": {"title": "Question", "type": "string"}
    }
    assert graph.get_output_jsonschema()["required"] == ["answer"]
    assert graph.get_context_jsonschema()["title"] == "Context"


def test_a_dataclass_schema_is_built_under_the_graphs_name() -> None:
    graph = _graph(Data)
    schema = graph.get_input_jsonschema()
    assert schema["title"] == "LangGraphInput"
    assert set(schema["properties"]) == {"needed", "maybe", "given", "many"}
    assert schema["required"] == ["needed"]
    assert graph.get_output_jsonschema()["title"] == "LangGraphOutput"
    assert graph.get_context_jsonschema() is None
