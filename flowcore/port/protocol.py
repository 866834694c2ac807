"""``GraphExecutorPort``: the one interface an app uses to run graphs.

An app builds a :class:`RunRequest` (what to run, its input, who is asking,
options) and calls ``executor.run(request)``. The call returns a
:class:`RunHandle` at once; the run is already going. The handle yields the
run's AiEvents as they happen, ends after exactly one ``done``, and its
``final`` resolves exactly once to a :class:`RunOutcome`, however the run
ends (completed, failed, interrupted or cancelled). ``cancel()`` stops it.

flowcore's engine is one implementation (:class:`~flowcore.port.InProcExecutor`);
anything else that keeps these promises can take its place, and
``flowcore.testing.ExecutorConformance`` checks that it does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, runtime_checkable

from flowcore.port.events import AiEvent

__all__ = [
    "UNSET",
    "Caller",
    "GraphExecutorPort",
    "PendingQuestion",
    "RunHandle",
    "RunOptions",
    "RunOutcome",
    "RunRequest",
    "UsageTotals",
]


class _Unset:
    """The type of :data:`UNSET` (one instance, falsy, survives pickling)."""

    __slots__ = ()
    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Final[Any] = _Unset()
"""Sentinel for "no resume value" (``None`` is a valid answer to a question)."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks for a run: correlation ids, and the user and account it is for.

    ``request_id`` and ``trace_id`` come back on every event of the run, so a
    log line, a UI message and a billing row can be joined.

    Example:
        >>> Caller(request_id="req-1", trace_id="trace-1", user_id="ada").user_id
        'ada'
    """

    request_id: str
    trace_id: str
    user_id: str | None = None
    billing_account_id: str | None = None


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How to run: on which thread, answering which question, with which step budget.

    ``thread_id`` checkpoints the run on that thread (the graph needs a
    checkpointer); with ``resume`` set, the run answers the thread's pending
    ``interrupt()`` with that value instead of starting anew. ``budgets``
    caps the run's model calls (``{"run" | "thread" | "user": {"max_tokens":
    ..., "max_cost_usd": ...}}``, see :mod:`flowcore.budgets`); the block
    executor's ``BudgetGuard`` enforces them.

    Example:
        >>> RunOptions(thread_id="t1", resume="yes").resume
        'yes'
        >>> RunOptions().resume is UNSET
        True
    """

    thread_id: str | None = None
    resume: Any = UNSET
    recursion_limit: int | None = None
    budgets: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One run: ``target`` (a compiled graph, a Pipeline / TaskPlan, or a registered name).

    ``input`` is the run input (None to continue or resume a thread).

    Example:
        >>> req = RunRequest("chat", {"question": "hi"}, Caller("req-1", "trace-1"))
        >>> req.options.thread_id is None
        True
    """

    target: Any
    input: Mapping[str, Any] | None
    caller: Caller
    options: RunOptions = RunOptions()


@dataclass(frozen=True, slots=True)
class PendingQuestion:
    """A question a paused run waits on: answer it with ``RunOptions(resume=...)``.

    Example:
        >>> PendingQuestion("a1b2", "approve", {"draft": "..."}).node
        'approve'
    """

    interrupt_id: str
    node: str
    value: Any


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Tokens (and cost, when every call's cost is known) of all model calls of a run.

    Example:
        >>> UsageTotals(input_tokens=12, output_tokens=3).cost_usd
        0.0
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How a run ended; what ``RunHandle.final`` resolves to, once, for every ending.

    ``output`` is the final state of a completed or interrupted run (None
    otherwise); ``error`` is ``"<Type>: <message>"`` of a failed run's first
    error, secrets redacted; ``interrupts`` lists the questions an
    interrupted run waits on.

    Example:
        >>> RunOutcome(run_id="r1", status="completed", output={"answer": 42}).output
        {'answer': 42}
    """

    run_id: str
    status: Literal["completed", "failed", "interrupted", "cancelled"]
    output: Mapping[str, Any] | None = None
    error: str | None = None
    interrupts: tuple[PendingQuestion, ...] = ()
    thread_id: str | None = None
    usage: UsageTotals = field(default_factory=UsageTotals)


@runtime_checkable
class RunHandle(Protocol):
    """A run in progress: its events (iterate once), its outcome, and a way to stop it.

    Example:
        >>> # handle = executor.run(request)
        >>> # async for event in handle:
        >>> #     print(event.type)
        >>> # outcome = await handle.final
    """

    run_id: str

    def __aiter__(self) -> AsyncIterator[AiEvent]:
        """The run's events as they happen, ending after ``done``; iterate once only."""
        ...

    @property
    def final(self) -> Awaitable[RunOutcome]:
        """Resolves once, when the run has ended; may be awaited any number of times."""
        ...

    def cancel(self) -> None:
        """Stop the run; it ends ``cancelled``, still with exactly one ``done``."""
        ...


@runtime_checkable
class GraphExecutorPort(Protocol):
    """Anything that runs graphs for an app: ``run(request)`` starts a run and returns at once.

    Example:
        >>> # executor: GraphExecutorPort = InProcExecutor(graphs={"chat": chat_graph})
        >>> # handle = executor.run(RunRequest("chat", {"q": "hi"}, Caller("req-1", "tr-1")))
    """

    def run(self, request: RunRequest) -> RunHandle:
        """Start the run described by ``request`` and return its handle without waiting."""
        ...
