"""Checking block inputs and outputs against their JSON Schemas.

Blocks describe their contracts in JSON Schema because that is what LLM
tool-calling and structured output speak. This module checks the subset
blocks use (types, properties, required, additionalProperties, items, enum,
const, numeric and length bounds, pattern, anyOf / oneOf / allOf) and lists
every problem with its path, e.g. ``inputs.items[2].price: expected number,
got string``. Keywords outside the subset (``format``, ``$ref``...) are
ignored rather than guessed at.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from flowcore._shown import shown

__all__ = ["schema_problems"]

_TYPE_CHECKS: dict[str, Any] = {
    "object": lambda v: isinstance(v, Mapping),
    "array": lambda v: isinstance(v, list | tuple),
    "string": lambda v: isinstance(v, str),
    # bool is an int in Python, never in JSON.
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPE_CHECKS[name](value):
            return name
    return type(value).__name__


def schema_problems(value: Any, schema: Mapping[str, Any], path: str = "value") -> list[str]:
    """Every way ``value`` breaks ``schema``, each prefixed with where; [] if it fits.

    Example:
        >>> schema_problems({"n": "3"}, {"type": "object",
        ...     "properties": {"n": {"type": "integer"}}, "required": ["n", "m"]}, "inputs")
        ['inputs: missing required key m', 'inputs.n: expected integer, got string']
    """
    found: list[str] = []
    _check(value, schema, path, found)
    return found


def _key(key: object) -> str:
    # keys are usually str; shown() keeps a foreign key (a huge int) from breaking the message
    return key if isinstance(key, str) else shown(key)


def _check(value: Any, schema: Mapping[str, Any], path: str, found: list[str]) -> None:
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_TYPE_CHECKS.get(n, lambda v: False)(value) for n in names):
            found.append(f"{path}: expected {' or '.join(names)}, got {_json_type(value)}")
            return
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{path}: {shown(value)} is not one of {shown(schema['enum'])}")
    if "const" in schema and value != schema["const"]:
        found.append(f"{path}: must be {shown(schema['const'])}, got {shown(value)}")
    if isinstance(value, Mapping):
        _check_object(value, schema, path, found)
    elif isinstance(value, list | tuple):
        _check_array(value, schema, path, found)
    elif isinstance(value, str):
        _check_string(value, schema, path, found)
    elif _TYPE_CHECKS["number"](value):
        _check_number(value, schema, path, found)
    _check_combinators(value, schema, path, found)


def _check_object(
    value: Mapping[str, Any], schema: Mapping[str, Any], path: str, found: list[str]
) -> None:
    props: Mapping[str, Any] = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in value:
            found.append(f"{path}: missing required key {key}")
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        where = f"{path}.{_key(key)}"
        if key in props:
            _check(item, props[key], where, found)
        elif extra is False:
            allowed = ", ".join(props) or "none"
            found.append(f"{path}: unexpected key {_key(key)} (allowed: {allowed})")
        elif isinstance(extra, Mapping):
            _check(item, extra, where, found)


def _check_array(value: Any, schema: Mapping[str, Any], path: str, found: list[str]) -> None:
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            _check(item, items, f"{path}[{i}]", found)
    if "minItems" in schema and len(value) < schema["minItems"]:
        found.append(f"{path}: needs at least {schema['minItems']} items, has {len(value)}")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        found.append(f"{path}: allows at most {schema['maxItems']} items, has {len(value)}")


def _check_string(value: str, schema: Mapping[str, Any], path: str, found: list[str]) -> None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        found.append(f"{path}: needs at least {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        found.append(f"{path}: allows at most {schema['maxLength']} characters")
    if "pattern" in schema and re.search(schema["pattern"], value) is None:
        found.append(f"{path}: does not match pattern {schema['pattern']!r}")


def _check_number(value: float, schema: Mapping[str, Any], path: str, found: list[str]) -> None:
    bounds: tuple[tuple[str, Callable[[float, float], bool], str], ...] = (
        ("minimum", operator.ge, ">="),
        ("maximum", operator.le, "<="),
        ("exclusiveMinimum", operator.gt, ">"),
        ("exclusiveMaximum", operator.lt, "<"),
    )
    for key, ok, sign in bounds:
        if key in schema and not ok(value, schema[key]):
            found.append(f"{path}: must be {sign} {schema[key]}, got {shown(value)}")


def _check_combinators(value: Any, schema: Mapping[str, Any], path: str, found: list[str]) -> None:
    for sub in schema.get("allOf", []):
        _check(value, sub, path, found)
    any_of = schema.get("anyOf")
    if any_of is not None and all(schema_problems(value, sub, path) for sub in any_of):
        found.append(f"{path}: matches none of the allowed shapes (anyOf)")
    if "oneOf" in schema:
        matches = sum(1 for sub in schema["oneOf"] if not schema_problems(value, sub, path))
        if matches != 1:
            found.append(f"{path}: must match exactly one allowed shape (oneOf), matches {matches}")
