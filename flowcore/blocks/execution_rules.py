"""The rules around one block execution that need no executor.

What :class:`~flowcore.blocks.executor.BlockExecutor` and its block kinds
share about a single execution: the facts gathered across its attempts
(:class:`BlockRun`), which failures are retried and how long to wait between
attempts, the checks its definition and inputs pass before any attempt
runs, and how its outputs are shaped (kept to the declared keys, a decision's
``branch``, secret outputs wrapped). Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tenacity import RetryCallState, wait_exponential

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.model_calls import CallTally
from flowcore.budgets.guard import BudgetWatch
from flowcore.checkpoint.serde import check_text_and_nesting
from flowcore.errors import BlockDefinitionError, BlockError, BlockInputError, SerializationError
from flowcore.llm.errors import ProviderError
from flowcore.llm.retry import provider_retry_delay
from flowcore.scheduler.context import NodeContext
from flowcore.secrets import Secret, learn

__all__ = [
    "BlockRun",
    "block_wait",
    "check_inputs",
    "decision_schema",
    "declared_outputs",
    "retryable",
    "single_key",
    "wrap_secret_outputs",
]


def retryable(exc: BaseException) -> bool:
    """Whether a failed attempt of a block is tried again (its retry rule for tenacity).

    Example:
        >>> retryable(ValueError("bad answer"))
        False
    """
    if isinstance(exc, BlockError):
        return exc.retryable
    # Same rule as each model call's own retries: quota and long Retry-After are not retried.
    return provider_retry_delay(exc, 0.0) is not None


def block_wait(backoff: wait_exponential) -> Callable[[RetryCallState], float]:
    """The pause before a block's next attempt: ``backoff``, or a provider's longer Retry-After.

    Example:
        >>> wait = block_wait(wait_exponential(multiplier=0.5, max=30.0))
    """

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        pause = float(backoff(state))
        if isinstance(exc, ProviderError):
            # Never sooner than the server's Retry-After.
            return provider_retry_delay(exc, pause) or pause
        return pause

    return wait


def declared_outputs(outputs: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """``outputs`` cut down to the properties ``schema`` declares (all if it allows more).

    Example:
        >>> declared_outputs({"a": 1, "b": 2}, {"properties": {"a": {}}})
        {'a': 1}
    """
    # Keep only what the block promises; a model's extra keys never reach state.
    props = schema.get("properties") or {}
    if not props or schema.get("additionalProperties") not in (None, False):
        return dict(outputs)
    return {k: v for k, v in outputs.items() if k in props}


def wrap_secret_outputs(
    block: BlockDefinition, outputs: dict[str, Any], ctx: NodeContext
) -> dict[str, Any]:
    """Outputs the block marks secret, as ``Secret`` objects (their text taught to the redactor)."""
    marked = block.secret_outputs & set(outputs)
    if not marked:
        return outputs
    wrapped = dict(outputs)
    for name in marked:
        value = outputs[name]
        learn(ctx.redactor, value, name=f"{block.id}.{name}")
        if isinstance(value, str):
            wrapped[name] = Secret(value, name=f"{block.id}.{name}")
    return wrapped


def decision_schema(block: BlockDefinition) -> dict[str, Any]:
    """A decision block's output schema, with the required ``branch`` among its branch keys.

    Example:
        >>> # decision_schema(block)["properties"]["branch"]["enum"]  # sorted branch keys
    """
    schema = dict(block.output_schema)
    props = dict(schema.get("properties") or {})
    props["branch"] = {"type": "string", "enum": sorted(block.branches or {})}
    schema["properties"] = props
    schema["required"] = sorted({*schema.get("required", ()), "branch"})
    return schema


def single_key(schema: Mapping[str, Any], default: str) -> str:
    """The one property ``schema`` declares, else ``default``: where a lone output goes.

    Example:
        >>> single_key({"properties": {"hits": {}}}, "memory_results")
        'hits'
    """
    props = list(schema.get("properties") or {})
    return props[0] if len(props) == 1 else default


@dataclass(slots=True)
class BlockRun:
    """Mutable facts gathered across the attempts of one block execution."""

    block: BlockDefinition
    ctx: NodeContext
    attempt: int = 0
    #: Model calls made so far, over every attempt (failed and repaired ones too).
    tally: CallTally = field(default_factory=CallTally)
    metadata: dict[str, Any] = field(default_factory=dict)
    budget: BudgetWatch | None = None
    #: Tool call ids used so far, over every attempt: a model that repeats one gets a fresh one.
    tool_ids: set[str] = field(default_factory=set)


def check_inputs(block: BlockDefinition, inputs: Mapping[str, Any]) -> None:
    """Refuse a block or inputs no model, tool or store can take, before any attempt runs."""
    try:
        # The definition's text reaches prompts, events and stores as much as the inputs do.
        check_text_and_nesting(block.model_dump(exclude_none=True), path="block")
    except SerializationError as exc:
        raise BlockDefinitionError(
            [str(exc).removeprefix("cannot store ")], block=block.id
        ) from None
    if not isinstance(inputs, Mapping):
        raise BlockInputError(
            block.id, [f"inputs: must be a mapping of input names, got {type(inputs).__name__}"]
        )
    try:
        check_text_and_nesting(dict(inputs), path="inputs")
    except SerializationError as exc:
        raise BlockInputError(block.id, [str(exc).removeprefix("cannot store ")]) from None
