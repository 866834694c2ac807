"""Spec: each stage's answer is validated by a pydantic model, and problems read as lines."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from flowcore.thinker.models import (
    ClarifyDecision,
    DecomposeOutput,
    RefinedIntent,
    validation_problems,
)

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
COUNT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _block(sid: str, deps: list[str] | None = None, **extra: object) -> dict[str, object]:
    return {
        "suggested_id": sid,
        "description": f"do {sid}",
        "execution_type": "python",
        "depends_on": deps or [],
        "input_schema": TEXT,
        "output_schema": COUNT,
        **extra,
    }


def test_a_decomposition_in_dependency_order_is_accepted() -> None:
    out = DecomposeOutput.model_validate({"required_blocks": [_block("a"), _block("b", ["a"])]})
    assert [b.suggested_id for b in out.required_blocks] == ["a", "b"]


def test_each_problem_of_a_decomposition_is_its_own_line() -> None:
    with pytest.raises(ValidationError) as caught:
        DecomposeOutput.model_validate(
            {
                "required_blocks": [
                    _block("a", execution_type="code"),
                    _block("Bad Id"),
                    _block("c", output_schema={"type": "object"}),
                ]
            }
        )
    problems = validation_problems(caught.value)
    assert any("execution_type" in p and "'llm' or 'python'" in p for p in problems)
    assert any("suggested_id" in p and "snake_case" in p for p in problems)
    assert any("output_schema" in p and "at least one output" in p for p in problems)


def test_a_dependency_on_a_later_or_unknown_block_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        DecomposeOutput.model_validate({"required_blocks": [_block("b", ["a"]), _block("a")]})
    assert "'b' depends_on 'a', which is not a block listed before it" in str(caught.value)


def test_a_clarifier_answer_is_a_question_or_a_refined_intent() -> None:
    assert ClarifyDecision(ready=False, question="Which language?").question == "Which language?"
    with pytest.raises(ValidationError, match="question must hold one clarifying question"):
        ClarifyDecision(ready=False)
    with pytest.raises(ValidationError, match="refined_intent must be given"):
        ClarifyDecision(ready=True)


def test_a_refined_intent_reads_as_a_specification() -> None:
    spec = RefinedIntent(
        goal="Count words",
        steps=["split", "count"],
        inputs=["text"],
        outputs=["count"],
        edge_cases=["empty text gives 0"],
    )
    assert spec.as_text().splitlines() == [
        "Goal: Count words",
        "Steps: split; count",
        "Inputs: text",
        "Outputs: count",
        "Edge cases: empty text gives 0",
    ]
