"""What each Thinker stage must answer, as pydantic models, and their problems as text.

A model's answer is only used once it validates here; when it does not,
:func:`validation_problems` turns the pydantic error into one line per
problem (``where: what is wrong``), which the stage feeds back to the model
in its repair round.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

__all__ = [
    "ClarifyDecision",
    "CreatedBlockDraft",
    "DecomposeOutput",
    "RefinedIntent",
    "RequiredBlock",
    "WireOutput",
    "validation_problems",
]

_ID = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


class RefinedIntent(BaseModel):
    """The Clarifier's self-contained specification of what the person wants.

    Example:
        >>> RefinedIntent(goal="Count words", steps=["count"], inputs=["text"],
        ...               outputs=["count"]).as_text().splitlines()[0]
        'Goal: Count words'
    """

    model_config = ConfigDict(extra="forbid")

    goal: str = Field(min_length=1)
    steps: list[str] = Field(default_factory=list)
    inputs: list[str] = Field(default_factory=list)
    outputs: list[str] = Field(default_factory=list)
    edge_cases: list[str] = Field(default_factory=list)

    def as_text(self) -> str:
        """The specification as the text the next stages read (one line per part).

        Example:
            >>> RefinedIntent(goal="Sort", inputs=["numbers"]).as_text().splitlines()
            ['Goal: Sort', 'Inputs: numbers']
        """
        lines = [f"Goal: {self.goal}"]
        for title, items in (
            ("Steps", self.steps),
            ("Inputs", self.inputs),
            ("Outputs", self.outputs),
            ("Edge cases", self.edge_cases),
        ):
            if items:
                lines.append(f"{title}: " + "; ".join(items))
        return "\n".join(lines)


class ClarifyDecision(BaseModel):
    """Ready (with the refined intent) or not ready (with one question to ask).

    Example:
        >>> ClarifyDecision(ready=False, question="Which language?").question
        'Which language?'
    """

    model_config = ConfigDict(extra="forbid")

    ready: bool
    question: str | None = None
    refined_intent: RefinedIntent | None = None

    @model_validator(mode="after")
    def _one_of(self) -> ClarifyDecision:
        if self.ready and self.refined_intent is None:
            raise ValueError("ready is true, so refined_intent must be given")
        if not self.ready and not (self.question or "").strip():
            raise ValueError("ready is false, so question must hold one clarifying question")
        return self


def _object_schema(value: dict[str, Any], where: str) -> dict[str, Any]:
    if value.get("type", "object") != "object" or not isinstance(value.get("properties", {}), dict):
        raise ValueError(f'{where} must be a JSON object schema: {{"type": "object", ...}}')
    return value


class RequiredBlock(BaseModel):
    """One block the pipeline needs, as Decompose proposes it (seed 003's shape).

    Example:
        >>> RequiredBlock(suggested_id="count_words", description="Count the words",
        ...     execution_type="python", input_schema={"type": "object", "properties": {
        ...     "text": {"type": "string"}}}, output_schema={"type": "object", "properties": {
        ...     "count": {"type": "integer"}}}).suggested_id
        'count_words'
    """

    model_config = ConfigDict(extra="forbid")

    suggested_id: str
    description: str = Field(min_length=1)
    execution_type: Literal["llm", "python"]
    depends_on: list[str] = Field(default_factory=list)
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]

    @field_validator("suggested_id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError(
                f"{value!r} must be snake_case: lowercase letters, digits and '_', "
                "starting with a letter"
            )
        return value

    @field_validator("input_schema")
    @classmethod
    def _check_input(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _object_schema(value, "input_schema")

    @field_validator("output_schema")
    @classmethod
    def _check_output(cls, value: dict[str, Any]) -> dict[str, Any]:
        value = _object_schema(value, "output_schema")
        if not value.get("properties"):
            raise ValueError("output_schema must name at least one output property")
        return value


class DecomposeOutput(BaseModel):
    """Decompose's answer: the blocks, in an order where each comes after its dependencies.

    Example:
        >>> try:
        ...     DecomposeOutput(required_blocks=[])
        ... except ValidationError as exc:
        ...     print(validation_problems(exc))
        ['answer: required_blocks is empty; list at least one block']
    """

    model_config = ConfigDict(extra="forbid")

    required_blocks: list[RequiredBlock]

    @model_validator(mode="after")
    def _check_dependencies(self) -> DecomposeOutput:
        seen: set[str] = set()
        problems: list[str] = []
        for block in self.required_blocks:
            if block.suggested_id in seen:
                problems.append(f"suggested_id {block.suggested_id!r} is used twice")
            for dep in block.depends_on:
                if dep not in seen:
                    problems.append(
                        f"{block.suggested_id!r} depends_on {dep!r}, which is not a block "
                        "listed before it"
                    )
            seen.add(block.suggested_id)
        if not self.required_blocks:
            problems.append("required_blocks is empty; list at least one block")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class CreatedBlockDraft(BaseModel):
    """Create's answer: the new block (flowcore's block JSON) and inputs to test it on.

    Example:
        >>> CreatedBlockDraft(block={"id": "x"}, sample_inputs={"text": "a"}).sample_inputs
        {'text': 'a'}
    """

    model_config = ConfigDict(extra="forbid")

    block: dict[str, Any]
    sample_inputs: dict[str, Any] = Field(default_factory=dict)


class WireOutput(BaseModel):
    """Wire's answer: the Pipeline JSON.

    Example:
        >>> WireOutput(pipeline={"id": "p", "name": "P", "nodes": []}).pipeline["id"]
        'p'
    """

    model_config = ConfigDict(extra="forbid")

    pipeline: dict[str, Any]


def validation_problems(exc: ValidationError) -> list[str]:
    """One ``where: message`` line per error of a pydantic validation.

    Example:
        >>> try:
        ...     RefinedIntent.model_validate({})
        ... except ValidationError as exc:
        ...     validation_problems(exc)
        ['goal: Field required']
    """
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "answer"
        problems.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")
    return problems
