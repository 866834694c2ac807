"""One Thinker stage call: a stored prompt block, a validated answer, repair rounds.

:func:`ask_stage` runs the stage's prompt block through the
:class:`~flowcore.blocks.BlockExecutor` (so the call is billed, streamed and
recorded like any block's), validates the answer with the stage's pydantic
model and then with the stage's own ``check`` (compiling and testing a
block, validating a pipeline). When either finds problems, the next round
sends the model its previous answer and the problems, up to ``repairs``
times; the last problems are raised as :class:`StageFailedError`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.executor import BlockExecutor
from flowcore.blocks.templates import TemplateRenderError, arender_prompt
from flowcore.errors import BlockOutputError, FlowcoreError
from flowcore.scheduler.context import NodeContext
from flowcore.thinker.events import emit
from flowcore.thinker.models import validation_problems

__all__ = ["StageAnswer", "StageFailedError", "ask_stage"]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
Check = Callable[[M], Awaitable[list[str]]]


class StageFailedError(FlowcoreError):
    """A stage's answer still had problems after its last repair round.

    Example:
        >>> StageFailedError("wire", ["node 'n1': unknown block 'x'"], rounds=4).problems
        ("node 'n1': unknown block 'x'",)
    """

    code = "thinker-stage-failed"

    def __init__(self, stage: str, problems: list[str], *, rounds: int) -> None:
        self.stage = stage
        self.problems = tuple(problems)
        self.rounds = rounds
        listed = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"the Thinker's {stage} stage found no usable answer in {rounds} round(s):\n{listed}"
        )


@dataclass(frozen=True, slots=True)
class StageAnswer(Generic[T]):
    """A validated answer and how many rounds (1 + repairs) it took.

    Example:
        >>> StageAnswer(value=1, rounds=2).rounds
        2
    """

    value: T
    rounds: int


def _request_text(request: Mapping[str, Any]) -> str:
    return json.dumps(request, indent=2, ensure_ascii=False, default=str)


async def ask_stage(
    executor: BlockExecutor,
    block: BlockDefinition,
    stage: str,
    request: Mapping[str, Any],
    model: type[M],
    ctx: NodeContext,
    *,
    repairs: int,
    check: Check[M] | None = None,
) -> StageAnswer[M]:
    """Ask ``block`` for ``stage``'s answer to ``request``; validate, check and repair it.

    Raises:
        StageFailedError: Still invalid after ``repairs`` repair rounds.

    Example:
        >>> # answer = await ask_stage(executor, blocks["decompose"], "decompose",
        >>> #                          {"intent": "..."}, DecomposeOutput, ctx, repairs=1)
    """
    # Every input is always given: the template reads them all (jinja2 is strict here).
    inputs: dict[str, Any] = {"request": _request_text(request), "previous": "", "problems": []}
    problems: list[str] = []
    for round_no in range(1, repairs + 2):
        inputs["problems"] = problems
        await _announce_prompt(block, inputs, stage, round_no, ctx)
        started = time.perf_counter()
        try:
            outcome = await executor.execute(block, inputs, ctx)
        except BlockOutputError as exc:
            # A model that answered no usable JSON gets told so, like any other problem;
            # a provider, timeout or configuration failure is not the model's to fix: raised.
            problems = [f"answer: {exc}"]
            inputs["previous"] = ""
            emit(
                ctx,
                "llm_response",
                stage=stage,
                round=round_no,
                response=None,
                error=str(exc),
                elapsed=time.perf_counter() - started,
            )
            emit(ctx, "validation", stage=stage, round=round_no, ok=False, problems=problems)
            continue
        answer = dict(outcome.outputs)
        emit(
            ctx,
            "llm_response",
            stage=stage,
            round=round_no,
            response=answer,
            elapsed=time.perf_counter() - started,
        )
        inputs["previous"] = _request_text(answer)
        try:
            value = model.model_validate(answer)
        except ValidationError as exc:
            problems = validation_problems(exc)
        else:
            problems = await check(value) if check is not None else []
            if not problems:
                emit(ctx, "validation", stage=stage, round=round_no, ok=True, problems=[])
                return StageAnswer(value, round_no)
        emit(ctx, "validation", stage=stage, round=round_no, ok=False, problems=problems)
    raise StageFailedError(stage, problems, rounds=repairs + 1)


async def _announce_prompt(
    block: BlockDefinition, inputs: dict[str, Any], stage: str, round_no: int, ctx: NodeContext
) -> None:
    assert block.prompt_template is not None
    try:
        prompt = await arender_prompt(block.prompt_template, inputs)
    except TemplateRenderError as exc:  # the executor reports it as the block's error
        prompt = f"(the prompt did not render: {exc})"
    emit(
        ctx,
        "llm_prompt",
        stage=stage,
        round=round_no,
        block_id=block.id,
        block_version=block.version,
        prompts=[prompt],
    )
