"""What a compat node's model and tool calls put on its run's event stream, and their bill.

A chat-model call made inside a node of a compat run is billed once, when it
ends, whatever became of it: :func:`bill_model_call` charges its tokens to
the node's :class:`~flowcore.runtime.usage.UsageMeter` (so to the run's, and
to every run above it) and, when the call was answered or reported tokens
before it broke off, hands the run's sink a ``model_call`` record. A
``ToolNode`` call is reported the same way, as ``tool_call`` records at its
start and its end. :class:`~flowcore.compat.langgraph._events.EventProjector`
turns them into ``usage``, ``tool_call_start`` and ``tool_call_result``
events, which the port, the run history and ``flowcore.tracing`` read.

The records go to the run of the task running in the caller's context (the
compat task scope); a call made from a worker thread (a sync node) has its
record handed over to the run's event loop, in order.

Example:
    >>> from flowcore.llm.types import Usage
    >>> bill_model_call(Usage(3, 4), provider="scripted", model="m", answered=True)
    >>> # outside a run: nothing to charge, nobody to tell
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from flowcore.compat.langgraph._context import TaskScope, running_scope
from flowcore.llm.types import Usage
from flowcore.runtime.usage import UsageMeter, current_meter

__all__ = ["ModelCall", "ToolCallMade", "bill_model_call", "report_tool_call"]

MODEL_CALL = "model_call"
TOOL_CALL = "tool_call"


class ModelCall(NamedTuple):
    """One chat-model call of node ``node`` (superstep ``step``) ended; what it cost.

    Example:
        >>> ModelCall("agent", 1, "openai", "gpt-4o", 10, 12, "c1", 0.2).input_tokens
        10
    """

    node: str
    step: int
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    invocation_id: str
    duration: float
    cost_usd: float | None = None
    request_model: str = ""
    finish_reason: str = ""
    prompt_hash: str = ""


class ToolCallMade(NamedTuple):
    """A tool call of node ``node`` started (``phase="start"``) or ended (``"end"``).

    Example:
        >>> ToolCallMade("tools", 2, "start", "call-1", "search", {"q": "x"}).phase
        'start'
    """

    node: str
    step: int
    phase: Literal["start", "end"]
    tool_call_id: str
    tool_name: str
    args: Mapping[str, Any]
    is_error: bool = False
    error_code: str | None = None
    safe_message: str | None = None
    result: Mapping[str, Any] | None = None


def _deliver(scope: TaskScope, kind: str, payload: Any) -> None:
    """Hand ``payload`` to the sink of ``scope``'s run, on the run's loop."""
    host: Any = scope.host
    wants = getattr(host, "wants", None)
    if wants is None or kind not in wants:
        return  # nobody reads these records of this run: none is built
    loop = getattr(host, "loop", None)
    if loop is None or threading.get_ident() == host.loop_thread:
        host.emit(kind, payload)
    else:
        # A sync node's worker thread: the sink belongs to the loop.
        loop.call_soon_threadsafe(host.emit, kind, payload)


def bill_model_call(
    usage: Usage,
    *,
    provider: str,
    model: str,
    answered: bool,
    started: float | None = None,
    invocation_id: str | None = None,
    request_model: str = "",
    finish_reason: str = "",
    prompt_hash: str = "",
    scope: TaskScope | None = None,
    meter: UsageMeter | None = None,
) -> None:
    """Charge one ended model call and report it to the run of the node that made it.

    ``usage`` is what the call cost (zero tokens when the provider said
    nothing); ``answered`` whether it returned an answer. A call that failed
    without a token count is charged as a call and reported to nobody: there
    is no figure to show. ``scope`` and ``meter`` default to the caller's
    (the node running here and its meter); a LangChain callback that learnt
    them when the call started passes them on. ``started`` is a
    ``time.perf_counter()`` reading from when the call went out.

    Example:
        >>> bill_model_call(Usage(1, 2), provider="openai", model="gpt-4o", answered=True)
    """
    meter = meter if meter is not None else current_meter()
    if meter is not None:
        meter.charge(usage)
    if not answered and not (usage.input_tokens or usage.output_tokens):
        return
    scope = scope if scope is not None else running_scope()
    if scope is None:
        return
    duration = 0.0 if started is None else max(time.perf_counter() - started, 0.0)
    record = ModelCall(
        scope.node,
        scope.step,
        provider,
        model,
        usage.input_tokens,
        usage.output_tokens,
        invocation_id or uuid.uuid4().hex,
        duration,
        usage.cost_usd,
        request_model,
        finish_reason,
        prompt_hash,
    )
    _deliver(scope, MODEL_CALL, record)


def report_tool_call(record_of: Any) -> None:
    """Report a tool call to the run of the node running here (nothing outside a run).

    ``record_of`` makes the :class:`ToolCallMade` from the node's name and
    superstep, so that nothing is built for a run nobody reads tool calls of.

    Example:
        >>> report_tool_call(lambda node, step: None)  # outside a run: nothing happens
    """
    scope = running_scope()
    if scope is None:
        return
    wants = getattr(scope.host, "wants", None)
    if wants is None or TOOL_CALL not in wants:
        return
    _deliver(scope, TOOL_CALL, record_of(scope.node, scope.step))
