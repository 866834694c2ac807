"""Exact token accounting: every model call is charged to the node run and the run that made it.

The runtime opens a :class:`UsageMeter` for each run and, inside it, one
for each node run, and makes the node's meter current while the node's
code runs (a context variable, so tasks and worker threads the node starts
see it too). Whoever makes a model call reports what it cost with
:func:`charge_usage` - the block executor does so for every provider
request, a failed, retried or repaired one included - and the charge is
added to the current meter and to every meter above it: the node run, its
run, and, for a graph run inside another graph's node, that node and run too.

The meters are the source of the token figures on
:class:`~flowcore.result.NodeRun` and :class:`~flowcore.result.RunResult`,
and so of the run history and the CLI: a node that failed after six model
calls still reports the tokens of all six, where its ``block_runs`` record,
written only on success, has none.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar, Token
from dataclasses import dataclass

from flowcore.llm.types import Usage

__all__ = ["UsageMeter", "charge_usage", "current_meter", "metering", "reset_meter", "use_meter"]


@dataclass(slots=True)
class UsageMeter:
    """Tokens, cost and model calls charged to one scope (a run or a node run).

    ``cost_usd`` is the sum of the calls' reported costs, and None as soon as
    one call reported none (a total is only known when every part is).
    Charges flow up to ``parent``.

    Example:
        >>> run = UsageMeter()
        >>> node = UsageMeter(parent=run)
        >>> node.charge(Usage(10, 12))
        >>> node.charge(Usage(10, 12))
        >>> (run.calls, run.usage.input_tokens, run.usage.output_tokens)
        (2, 20, 24)
    """

    parent: UsageMeter | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    calls: int = 0

    def charge(self, usage: Usage, *, calls: int = 1) -> None:
        """Add one call's ``usage`` (``calls=0``: tokens without a new call) here and above.

        Example:
            >>> meter = UsageMeter()
            >>> meter.charge(Usage(5, 1, cost_usd=0.25))
            >>> meter.usage
            Usage(input_tokens=5, output_tokens=1, cost_usd=0.25)
        """
        meter: UsageMeter | None = self
        while meter is not None:
            meter.input_tokens += usage.input_tokens
            meter.output_tokens += usage.output_tokens
            meter.calls += calls
            if meter.cost_usd is not None:
                meter.cost_usd = None if usage.cost_usd is None else meter.cost_usd + usage.cost_usd
            meter = meter.parent

    @property
    def usage(self) -> Usage:
        """What was charged, as a :class:`~flowcore.llm.types.Usage` (cost None without calls).

        Example:
            >>> UsageMeter().usage
            Usage(input_tokens=0, output_tokens=0, cost_usd=None)
        """
        cost = self.cost_usd if self.calls else None
        return Usage(self.input_tokens, self.output_tokens, cost)


_CURRENT: ContextVar[UsageMeter | None] = ContextVar("flowcore_usage_meter", default=None)


def current_meter() -> UsageMeter | None:
    """The meter model calls made here are charged to (None outside any run).

    Example:
        >>> current_meter() is None
        True
    """
    return _CURRENT.get()


def use_meter(meter: UsageMeter) -> Token[UsageMeter | None]:
    """Make ``meter`` current until :func:`reset_meter` is given the returned token.

    The runtime's hot path uses this pair instead of :func:`metering`.

    Example:
        >>> token = use_meter(UsageMeter())
        >>> charge_usage(Usage(1, 1))
        >>> current_meter().calls
        1
        >>> reset_meter(token)
    """
    return _CURRENT.set(meter)


def reset_meter(token: Token[UsageMeter | None]) -> None:
    """Make current again the meter that was current before :func:`use_meter`."""
    _CURRENT.reset(token)


@contextlib.contextmanager
def metering(meter: UsageMeter) -> Iterator[UsageMeter]:
    """Make ``meter`` current for the ``with`` block (the runtime does this per node run).

    Example:
        >>> with metering(UsageMeter()) as meter:
        ...     charge_usage(Usage(3, 4))
        >>> meter.calls, meter.usage.total_tokens
        (1, 7)
    """
    token = _CURRENT.set(meter)
    try:
        yield meter
    finally:
        _CURRENT.reset(token)


def charge_usage(usage: Usage, *, calls: int = 1) -> None:
    """Charge one model call's ``usage`` to the current meter (nothing outside a run).

    Call it once per provider request, whatever became of the request: a
    request that failed counts as a call, with the tokens the provider
    reported before it failed (zero when it reported none).

    Example:
        >>> charge_usage(Usage(10, 12))  # outside a run: nobody to charge
    """
    meter = _CURRENT.get()
    if meter is not None:
        meter.charge(usage, calls=calls)
