"""Budgets as data: how many tokens and how many dollars a run, thread, user or block may spend.

Pure pydantic models, no I/O: a budget is given on a run
(``config={"budgets": {...}}``) or on a block (``BlockDefinition.budget``)
and validated like any other definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flowcore.errors import InvalidInputError

__all__ = ["BUDGETS_KEY", "Budget", "Budgets", "Scope", "Spend"]

BUDGETS_KEY = "budgets"
"""The config key a run's budgets are given under: ``config={"budgets": {...}}``."""

Scope = Literal["run", "thread", "user", "block"]
"""Whose spending a budget caps: one run, every run of a thread, every run of a
user, or one execution of a block."""


class Budget(BaseModel):
    """A cap on spending: ``max_tokens`` (input plus output) and/or ``max_cost_usd``.

    Example:
        >>> Budget(max_tokens=2_000).max_tokens
        2000
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tokens: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)


class Budgets(BaseModel):
    """The budgets of a run, by scope; a scope left None is not capped.

    ``thread`` counts every run of the run's thread (resumes included),
    ``user`` every run of ``config["user_id"]``, ``run`` this run alone.

    Example:
        >>> Budgets.from_config({"budgets": {"thread": {"max_tokens": 500}}}).thread
        Budget(max_tokens=500, max_cost_usd=None)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    run: Budget | None = None
    thread: Budget | None = None
    user: Budget | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Budgets | None:
        """The budgets in ``config["budgets"]`` (a ``Budgets`` or its dict), None if absent.

        Raises :class:`~flowcore.errors.InvalidInputError` naming the bad field.

        Example:
            >>> Budgets.from_config({}) is None
            True
        """
        value = config.get(BUDGETS_KEY)
        if value is None or isinstance(value, Budgets):
            return value
        try:
            return cls.model_validate(value)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'budgets'}: {e['msg']}" for e in exc.errors()
            )
            raise InvalidInputError(
                f"config[{BUDGETS_KEY!r}] is not a valid budget ({problems}); pass e.g. "
                "{'thread': {'max_tokens': 5000}, 'user': {'max_cost_usd': 2.0}}"
            ) from None


@dataclass(frozen=True, slots=True)
class Spend:
    """What was spent: tokens in and out, and dollars.

    Example:
        >>> (Spend(10, 5, 0.01) + Spend(1, 1, 0.0)).total_tokens
        17
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Spend) -> Spend:
        return Spend(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cost_usd + other.cost_usd,
        )
