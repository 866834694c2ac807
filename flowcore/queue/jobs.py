"""What one queued job is: run, or resume, one thread of a graph or a pipeline.

A :class:`RunJob` is plain JSON data (it travels in procrastinate's job
arguments), so a worker on another machine needs nothing else to run it:

* ``target`` names what to run. ``{"graph": "chat"}`` is a graph the worker
  registered (``flowcore worker --graphs myapp.graphs:build``, the same
  ``module:attr`` forms ``flowcore serve --graphs`` takes); ``{"pipeline":
  {...}}`` carries a whole Pipeline or TaskPlan JSON document, as
  ``flowcore submit FILE.json`` sends it, so the run uses exactly the file
  that was submitted, whatever is deployed.
* ``input`` starts a run; ``resume`` (``{"value": ...}``) answers the
  thread's pending ``interrupt()`` instead.
* ``thread_id`` is the thread it runs on (None: the worker makes one when
  the target keeps checkpoints, so a crashed run can still resume).

Example:
    >>> job = RunJob(run_id="r1", target={"graph": "chat"}, input={"q": "hi"})
    >>> RunJob.from_json(job.to_json()) == job
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal, get_args

from flowcore.queue.errors import QueueConfigError

__all__ = [
    "DEFAULT_STRATEGY",
    "STRATEGIES",
    "TASK_NAME",
    "MultitaskStrategy",
    "RunJob",
    "check_strategy",
]

TASK_NAME: Final = "flowcore.run"
"""The procrastinate task every flowcore job is deferred as."""

MultitaskStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]
"""What to do with a new run when its thread already has a queued or running one."""

STRATEGIES: Final[tuple[str, ...]] = get_args(MultitaskStrategy)
DEFAULT_STRATEGY: Final[MultitaskStrategy] = "enqueue"
"""LangGraph's server default too: the new run waits for the thread's current one."""


def check_strategy(value: str) -> MultitaskStrategy:
    """``value`` if it names a strategy, else a :class:`QueueConfigError` listing them.

    Example:
        >>> check_strategy("rollback")
        'rollback'
    """
    if value not in STRATEGIES:
        raise QueueConfigError(
            f"multitask strategy {value!r} is unknown; use one of {', '.join(STRATEGIES)}"
        )
    return value  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class RunJob:
    """One run to execute on a worker, as JSON-able data.

    Example:
        >>> RunJob(run_id="r1", target={"graph": "chat"}).target_name
        'chat'
    """

    run_id: str
    target: Mapping[str, Any]
    input: Mapping[str, Any] | None = None
    resume: Mapping[str, Any] | None = None
    thread_id: str | None = None
    user_id: str | None = None
    request_id: str = ""
    trace_id: str = ""
    billing_account_id: str | None = None
    recursion_limit: int | None = None
    budgets: Mapping[str, Any] | None = None
    strategy: MultitaskStrategy = DEFAULT_STRATEGY
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        kinds = [k for k in ("graph", "pipeline") if k in self.target]
        if len(kinds) != 1 or len(self.target) != 1:
            raise QueueConfigError(
                f"a job's target must be {{'graph': NAME}} or {{'pipeline': DOCUMENT}}, got "
                f"keys {sorted(self.target)}"
            )
        if self.resume is not None and "value" not in self.resume:
            raise QueueConfigError("a job's resume must be {'value': ANSWER}")
        if self.resume is not None and self.thread_id is None:
            raise QueueConfigError("a job that resumes a thread needs its thread_id")
        check_strategy(self.strategy)

    @property
    def target_name(self) -> str:
        """The graph's registered name, or the pipeline's (plan's) id.

        Example:
            >>> RunJob(run_id="r", target={"pipeline": {"id": "p1"}}).target_name
            'p1'
        """
        if "graph" in self.target:
            return str(self.target["graph"])
        doc = self.target["pipeline"]
        if isinstance(doc, Mapping):
            return str(doc.get("id") or doc.get("plan_id") or "pipeline")
        return "pipeline"

    def to_json(self) -> dict[str, Any]:
        """The job as JSON data (procrastinate's task arguments).

        Example:
            >>> RunJob(run_id="r1", target={"graph": "g"}).to_json()["run_id"]
            'r1'
        """
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunJob:
        """Read back :meth:`to_json`; unknown keys are ignored (newer submitters).

        Example:
            >>> RunJob.from_json({"run_id": "r", "target": {"graph": "g"}}).strategy
            'enqueue'
        """
        known = set(cls.__dataclass_fields__)
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as exc:
            raise QueueConfigError(f"a queued job is malformed: {exc}") from None
