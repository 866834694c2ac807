"""The procrastinate side: the app on a Postgres URL, the run task's retry rule, outcomes as JSON.

procrastinate is an optional extra (``pip install 'flowcore[queue]'``);
this module imports it only inside its functions, so ``import
flowcore.queue`` works without it and says what to install when it is used.

A job is retried only when its run did not end, for a reason that is not the
run's own: the worker stopped or lost the database (``CancelledError`` of a
shutdown, :class:`RunNeedsRetry`). A node that fails is a run that ended
``failed``; its job succeeds and is never retried.

Example:
    >>> outcome_from_json(outcome_to_json(RunOutcome(run_id="r1", status="completed"))).status
    'completed'
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from flowcore.port.events import json_safe
from flowcore.port.protocol import PendingQuestion, RunOutcome, UsageTotals
from flowcore.queue.errors import QueueConfigError
from flowcore.queue.jobs import TASK_NAME

if TYPE_CHECKING:
    from procrastinate import App

__all__ = [
    "MAX_ATTEMPTS",
    "RunNeedsRetry",
    "build_app",
    "outcome_from_json",
    "outcome_to_json",
    "require_procrastinate",
]

MAX_ATTEMPTS = 1000
"""How often one run's job may be picked up again after its worker died or lost the database."""


class RunNeedsRetry(Exception):
    """Raised by a job whose run was cut short by the infrastructure; its job is retried."""


def require_procrastinate(what: str) -> None:
    """Raise :class:`QueueConfigError` naming the extra if procrastinate is not installed.

    Example:
        >>> require_procrastinate("flowcore worker")
    """
    try:
        import procrastinate  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise QueueConfigError(
            f"{what} needs procrastinate and psycopg 3; install them with "
            "pip install 'flowcore[queue]'"
        ) from exc


def build_app(url: str, *, max_connections: int = 10) -> App:
    """A procrastinate ``App`` on ``url``.

    Its pool checks each connection before use (procrastinate does that),
    which lets a worker go on after a Postgres restart instead of failing
    on a connection the restart broke.

    Example:
        >>> # app = build_app("postgresql://app@db/flowcore")
    """
    require_procrastinate("the run queue")
    from procrastinate import App, PsycopgConnector

    # procrastinate's own pool already checks connections (check_connection) on checkout.
    connector = PsycopgConnector(
        conninfo=url, min_size=1, max_size=max_connections, name="flowcore queue"
    )
    return App(connector=connector)


def retry_rule(delay: float) -> Any:
    """The run task's retry strategy: retry infrastructure stops, never a run's own failure.

    Example:
        >>> # app.task(name=TASK_NAME, retry=retry_rule(0.5))
    """
    from procrastinate.retry import BaseRetryStrategy, RetryDecision

    class _InfraRetry(BaseRetryStrategy):
        def get_retry_decision(self, *, exception: BaseException, job: Any) -> Any:
            if job.attempts >= MAX_ATTEMPTS:
                return None
            if isinstance(exception, asyncio.CancelledError | RunNeedsRetry):
                return RetryDecision(retry_at=datetime.now(UTC) + timedelta(seconds=delay))
            return None

    return _InfraRetry()


def register_task(app: App, body: Any, *, retry_delay: float = 0.5) -> None:
    """Register ``body(context, job=...)`` as the ``flowcore.run`` task of ``app``.

    Example:
        >>> # register_task(app, job_runner)
    """

    # A plain coroutine function: procrastinate aborts only those by cancelling their task.
    async def run_job(context: Any, job: Any) -> Any:
        return await body(context, job)

    app.task(name=TASK_NAME, pass_context=True, retry=retry_rule(retry_delay))(run_job)


def outcome_to_json(outcome: RunOutcome) -> dict[str, Any]:
    """A :class:`RunOutcome` as JSON data (stored with the run, read by the submitter).

    Example:
        >>> outcome_to_json(RunOutcome(run_id="r1", status="failed", error="x"))["error"]
        'x'
    """
    return {
        "run_id": outcome.run_id,
        "status": outcome.status,
        "output": None if outcome.output is None else json_safe(dict(outcome.output)),
        "error": outcome.error,
        "interrupts": [
            {"interrupt_id": q.interrupt_id, "node": q.node, "value": json_safe(q.value)}
            for q in outcome.interrupts
        ],
        "thread_id": outcome.thread_id,
        "usage": {
            "input_tokens": outcome.usage.input_tokens,
            "output_tokens": outcome.usage.output_tokens,
            "cost_usd": outcome.usage.cost_usd,
        },
    }


def outcome_from_json(data: Mapping[str, Any]) -> RunOutcome:
    """Read back :func:`outcome_to_json`.

    Example:
        >>> outcome_from_json({"run_id": "r1", "status": "cancelled"}).status
        'cancelled'
    """
    usage = data.get("usage") or {}
    return RunOutcome(
        run_id=data["run_id"],
        status=data["status"],
        output=data.get("output"),
        error=data.get("error"),
        interrupts=tuple(
            PendingQuestion(q["interrupt_id"], q["node"], q["value"])
            for q in data.get("interrupts") or ()
        ),
        thread_id=data.get("thread_id"),
        usage=UsageTotals(
            input_tokens=int(usage.get("input_tokens", 0)),
            output_tokens=int(usage.get("output_tokens", 0)),
            cost_usd=usage.get("cost_usd", 0.0),
        ),
    )
