"""Match validation: can a found block do what the caller asked for?

A search hit is only useful if the caller can run it: it must run the way
the caller wants (execution type) and fit the data the caller has and
needs (IO schemas). :func:`io_compatible` compares JSON object schemas:

* every input the block **requires** must be among the inputs the caller
  **provides**, with a type the block accepts;
* every output the caller **requests** must be among the outputs the block
  **produces**, with a type the caller accepts.

A property without a ``type`` accepts anything (and, given, is not refused:
the block's own input check has the last word); an ``integer`` fits where a
``number`` is wanted, not the other way round.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["IOMatch", "execution_type_matches", "io_compatible"]

# Seed 000/003 names for flowcore block kinds.
_KIND_ALIASES = {"action": "llm", "extraction": "llm", "query_memory": "memory_query"}


@dataclass(frozen=True, slots=True)
class IOMatch:
    """Whether a block's IO fits a request; ``problems`` says why not, one line each.

    Example:
        >>> bool(IOMatch(()))
        True
    """

    problems: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        """True when there is no problem."""
        return not self.problems

    def __bool__(self) -> bool:
        return self.ok


def execution_type_matches(wanted: str | None, kind: str) -> bool:
    """Whether a block of ``kind`` runs the way ``wanted`` says (None: any way).

    Seed names are read as flowcore kinds (``action`` and ``extraction`` are
    ``llm``, ``query_memory`` is ``memory_query``).

    Example:
        >>> execution_type_matches("action", "llm"), execution_type_matches("python", "llm")
        (True, False)
    """
    if wanted is None:
        return True
    return _KIND_ALIASES.get(wanted, wanted) == _KIND_ALIASES.get(kind, kind)


def io_compatible(required_io: Mapping[str, Any], block_io: Mapping[str, Any]) -> IOMatch:
    """Check a block's schemas against what a caller provides and needs.

    Both arguments are mappings with optional ``input_schema`` and
    ``output_schema`` (JSON object schemas), the shape of a decomposed block
    spec and of a :class:`~flowcore.blocks.BlockDefinition` dump. In
    ``required_io``, ``input_schema`` lists the fields the caller can
    **provide**, and ``output_schema``'s properties are the fields it
    **needs**. A missing schema on the caller's side is not checked.

    Example:
        >>> need = {"input_schema": {"properties": {"text": {"type": "string"}}},
        ...         "output_schema": {"properties": {"summary": {"type": "string"}}}}
        >>> block = {"input_schema": {"properties": {"text": {"type": "string"}},
        ...                           "required": ["text"]},
        ...          "output_schema": {"properties": {"summary": {"type": "string"}}}}
        >>> io_compatible(need, block).ok
        True
        >>> io_compatible({"output_schema": {"properties": {"tags": {}}}}, block).problems
        ("the block does not produce requested output 'tags'",)
    """
    problems: list[str] = []
    provided = required_io.get("input_schema")
    if provided is not None:
        offered = _properties(provided)
        block_in = block_io.get("input_schema") or {}
        accepts = _properties(block_in)
        for name in _required(block_in):
            if name not in offered:
                problems.append(f"the block requires input {name!r}, which is not provided")
            elif not _fits(offered[name], accepts.get(name, {})):
                problems.append(
                    f"input {name!r}: provided {_types(offered[name])}, the block takes "
                    f"{_types(accepts.get(name, {}))}"
                )
    requested = required_io.get("output_schema")
    if requested is not None:
        produced = _properties(block_io.get("output_schema") or {})
        for name, wanted in _properties(requested).items():
            if name not in produced:
                problems.append(f"the block does not produce requested output {name!r}")
            elif not _fits(produced[name], wanted):
                problems.append(
                    f"output {name!r}: the block gives {_types(produced[name])}, "
                    f"{_types(wanted)} is requested"
                )
    return IOMatch(tuple(problems))


def _properties(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        return {}
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return {}
    return {str(k): v if isinstance(v, Mapping) else {} for k, v in props.items()}


def _required(schema: Any) -> list[str]:
    if not isinstance(schema, Mapping):
        return []
    required = schema.get("required")
    return [str(r) for r in required] if isinstance(required, list) else []


def _type_set(schema: Any) -> set[str] | None:
    """The JSON types a schema allows; None means any."""
    if not isinstance(schema, Mapping):
        return None
    kind = schema.get("type")
    if kind is None:
        return None
    kinds = {str(k) for k in kind} if isinstance(kind, list) else {str(kind)}
    if "number" in kinds:
        kinds.add("integer")  # every integer is a number
    return kinds


def _fits(given: Any, accepted: Any) -> bool:
    """Whether every value ``given`` allows is one ``accepted`` allows."""
    accepts = _type_set(accepted)
    if accepts is None:
        return True
    gives = _type_set(given)
    if gives is None:
        return True  # an untyped side cannot be shown not to fit: the block's own check decides
    return gives <= accepts


def _types(schema: Any) -> str:
    kinds = _type_set(schema)
    if kinds is None:
        return "any type"
    if "number" in kinds:
        kinds.discard("integer")
    return " or ".join(sorted(kinds))
