"""Per-run options, validated once when the run starts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from flowcore.errors import InvalidInputError
from flowcore.secrets import Redactor

__all__ = ["DEFAULT_RECURSION_LIMIT", "ErrorPolicy", "RunOptions", "SchedulingMode"]

SchedulingMode = Literal["supersteps", "dataflow"]
"""``supersteps``: ready nodes run in lock-step batches; ``dataflow``: each node
starts as soon as its own predecessors are done."""

ErrorPolicy = Literal["fail_fast", "skip_dependents"]
"""``fail_fast`` stops the run at the first node failure; ``skip_dependents``
lets independent branches finish and skips what depends on a failed node."""

DEFAULT_RECURSION_LIMIT = 10_000
"""Supersteps allowed beyond one per node: no acyclic graph can ever reach the
default limit, only a loop that keeps going."""


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How one run executes.

    ``recursion_limit`` caps supersteps; None means
    ``DEFAULT_RECURSION_LIMIT + number of nodes``. ``max_concurrency`` caps how
    many nodes run at once; None means no cap. ``redactor`` keeps known
    secrets out of the run's events, state, checkpoints and errors (see
    :mod:`flowcore.secrets`); None means nothing is redacted.
    """

    mode: SchedulingMode = "supersteps"
    on_error: ErrorPolicy = "fail_fast"
    max_concurrency: int | None = None
    recursion_limit: int | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    redactor: Redactor | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("supersteps", "dataflow"):
            raise InvalidInputError(
                f"mode={self.mode!r} is not a scheduling mode; use 'supersteps' or 'dataflow'"
            )
        if self.on_error not in ("fail_fast", "skip_dependents"):
            raise InvalidInputError(
                f"on_error={self.on_error!r} is not a failure policy; "
                "use 'fail_fast' or 'skip_dependents'"
            )
        _check_count("max_concurrency", self.max_concurrency)
        _check_count("recursion_limit", self.recursion_limit)


def _check_count(name: str, value: object) -> None:
    # bool is an int subclass, and a string or float read from a config file
    # would otherwise fail much later, deep inside the scheduler.
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(
            f"{name} must be a whole number >= 1 or None, got {type(value).__name__} {value!r}"
        )
    if value < 1:
        raise InvalidInputError(f"{name} must be >= 1 or None, got {value}")
