"""``Pipeline``: a graph of stored blocks written as JSON (seed 003's format)."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from flowcore._shown import shown
from flowcore.checkpoint.serde import MAX_NESTING, check_json_value
from flowcore.errors import FlowcoreError, SerializationError

__all__ = [
    "Pipeline",
    "PipelineEdge",
    "PipelineError",
    "PipelineNode",
    "check_document",
    "parse_document",
]

_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]{0,63}$")
_RESERVED = frozenset({"input", "state", "memory", "user", "load_memory", "save_memory"})


class PipelineError(FlowcoreError, ValueError):
    """A pipeline cannot run as written; ``problems`` lists every problem found at once.

    Example:
        >>> PipelineError(["node 'n2': unknown block 'sumarize'"], pipeline="p").problems
        ("node 'n2': unknown block 'sumarize'",)
    """

    code = "pipeline-invalid"

    def __init__(self, problems: list[str], *, pipeline: str | None = None) -> None:
        self.problems = tuple(problems)
        self.pipeline = pipeline
        where = f"pipeline {shown(pipeline)}" if pipeline else "pipeline"
        count = len(problems)
        listed = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{where} has {count} problem{'s' if count != 1 else ''}:\n{listed}")


class PipelineNode(BaseModel):
    """One step: which stored block it runs (optionally pinned) and its wired inputs.

    ``branches`` routes a decision step: branch key -> node id, overriding the
    block's own ``branches``. A branch may lead back to an earlier node, which
    makes a loop bounded by the run's recursion limit.

    Example:
        >>> PipelineNode(id="n1", block_id="summarize", inputs={"text": "<<input.doc>>"}).id
        'n1'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    block_id: str
    block_version: int | None = Field(default=None, ge=1)
    inputs: dict[str, Any] = Field(default_factory=dict)
    branches: dict[str, str] | None = None

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError(
                f"node id {shown(value)} must start with a letter and use letters, digits, '_' or "
                "'-' (it is used in <<id.field>> references)"
            )
        if value in _RESERVED:
            raise ValueError(f"node id {shown(value)} is reserved; pick another name")
        return value


class PipelineEdge(BaseModel):
    """``from`` runs before ``to``.

    Example:
        >>> PipelineEdge.model_validate({"from": "n1", "to": "n2"}).source
        'n1'
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    source: str = Field(alias="from")
    target: str = Field(alias="to")


class Pipeline(BaseModel):
    """A pipeline: nodes running stored blocks, edges, and what to remember.

    Edges implied by ``<<node.field>>`` references are added when the
    pipeline is compiled. ``memory_keys`` name the shared-context values
    loaded from the user's preferences at the start and saved back at the
    end. ``on_error`` is the run's failure policy.

    Example:
        >>> p = Pipeline.from_data({"id": "p1", "name": "Digest", "nodes": [
        ...     {"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}}]})
        >>> [n.id for n in p.nodes]
        ['n1']
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    version: int = Field(default=1, ge=1)
    user_prompt: str = ""
    nodes: tuple[PipelineNode, ...]
    edges: tuple[PipelineEdge, ...] = ()
    memory_keys: tuple[str, ...] = ()
    on_error: Literal["fail_fast", "skip_dependents"] = "skip_dependents"

    @classmethod
    def from_data(cls, data: Any) -> Pipeline:
        """Build a pipeline from parsed JSON, raising :class:`PipelineError` listing every problem.

        Example:
            >>> Pipeline.from_data({"id": "p", "name": "P", "nodes": []}).nodes
            ()
        """
        check_document(data, "pipeline")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = []
            for err in exc.errors():
                where = ".".join(str(p) for p in err["loc"]) or "pipeline"
                problems.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")
            name = data.get("id") if isinstance(data, dict) else None
            raise PipelineError(problems, pipeline=name) from None

    @classmethod
    def from_json(cls, text: str) -> Pipeline:
        """Parse a pipeline from JSON text.

        Example:
            >>> Pipeline.from_json('{"id": "p", "name": "P", "nodes": []}').id
            'p'
        """
        return cls.from_data(parse_document(text, "pipeline"))


def parse_document(text: object, what: str) -> Any:
    """Parse the JSON text of a ``what`` (a pipeline, a task plan), raising :class:`PipelineError`.

    Example:
        >>> parse_document('{"id": "p"}', "pipeline")
        {'id': 'p'}
    """
    if not isinstance(text, str | bytes | bytearray):
        raise PipelineError(
            [f"a {what} is read from JSON text (str or bytes), not {type(text).__name__}"]
        )
    try:
        return json.loads(text)
    except RecursionError:
        raise PipelineError(
            [
                f"not valid JSON for a {what}: it nests deeper than flowcore reads (at most "
                f"{MAX_NESTING} levels); flatten the deeply nested value"
            ]
        ) from None
    except ValueError as exc:  # JSONDecodeError, bad UTF-8, ints too long to read
        raise PipelineError([f"not valid JSON for a {what}: {exc}"]) from None


def check_document(data: Any, what: str) -> None:
    """Refuse a ``what`` (a pipeline, a task plan) that is not plain JSON data.

    Definitions are stored with every run they make, so they must be data the
    run history can hold: see :func:`~flowcore.checkpoint.serde.check_json_value`.

    Example:
        >>> check_document({"id": "p", "nodes": []}, "pipeline")
    """
    try:
        check_json_value(data, path=what)
    except SerializationError as exc:
        raise PipelineError(
            [f"{exc}. A {what} must be plain JSON data; fix the value at {exc.path}"]
        ) from None
