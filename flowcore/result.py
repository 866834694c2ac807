"""What a finished run hands back: status, final state, per-node records, errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from flowcore.events import RunStatus
from flowcore.interrupts import Interrupt
from flowcore.llm.types import Usage

__all__ = ["NodeRun", "RunResult"]


@dataclass(frozen=True, slots=True)
class NodeRun:
    """One execution (or skip) of one node.

    ``started_at`` is seconds since the run started; ``duration`` is how long
    the node took, retries included. ``usage`` is what every model call the
    node made cost (failed, retried and repaired calls included) and
    ``model_calls`` how many provider requests it made, over all its
    attempts (see :mod:`flowcore.runtime.usage`).
    """

    node: str
    pass_index: int
    superstep: int
    status: Literal["completed", "failed", "skipped", "cancelled"]
    update: Mapping[str, Any] | None = None
    started_at: float = 0.0
    duration: float = 0.0
    attempts: int = 0
    error: BaseException | None = None
    skip_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    model_calls: int = 0


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outcome of one run.

    ``outputs`` maps each node to the update it returned last; ``node_runs``
    lists every execution and skip in the order they ended. A run on a thread
    names it and the newest checkpoint; an ``interrupted`` run lists what
    its nodes asked in ``interrupts``. ``usage`` and ``model_calls`` count
    every model call of the run, whatever became of it or of its node (a
    failed, interrupted or cancelled node's calls too).

    Example:
        >>> r = RunResult(run_id="r", graph_name="g", graph_version="1",
        ...               status="completed", state={"x": 1})
        >>> r.raise_for_status().state
        {'x': 1}
    """

    run_id: str
    graph_name: str
    graph_version: str
    status: RunStatus
    state: Mapping[str, Any]
    outputs: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    node_runs: tuple[NodeRun, ...] = ()
    errors: tuple[BaseException, ...] = ()
    supersteps: int = 0
    duration: float = 0.0
    interrupts: tuple[Interrupt, ...] = ()
    thread_id: str | None = None
    checkpoint_id: str | None = None
    usage: Usage = field(default_factory=Usage)
    model_calls: int = 0

    @property
    def ok(self) -> bool:
        """True when the run completed."""
        return self.status == "completed"

    def raise_for_status(self) -> RunResult:
        """Return self if the run completed, else raise its first error.

        Example:
            >>> RunResult(run_id="r", graph_name="g", graph_version="1",
            ...           status="completed", state={}).raise_for_status().ok
            True
        """
        if self.status == "completed":
            return self
        if self.errors:
            raise self.errors[0]
        from flowcore.errors import FlowcoreError

        raise FlowcoreError(f"run {self.run_id} of graph {self.graph_name!r} ended {self.status}")
