"""What one run of the engine holds, and how it stamps and scrubs its events.

:class:`EngineState` is the bottom layer of
:class:`~flowcore.scheduler.engine.RunEngine`: the run's graph, options,
values, outputs, errors, meter and thread, set up once per run, plus the
fields every event carries and the redaction of what enters state. The
layers above it save to the thread
(:mod:`flowcore.scheduler.engine_checkpoints`), run tasks
(:mod:`flowcore.scheduler.engine_tasks`) and drive the passes
(:mod:`flowcore.scheduler.engine`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from flowcore.events import Event
from flowcore.interrupts import Interrupt
from flowcore.result import NodeRun, RunResult
from flowcore.runtime.usage import UsageMeter
from flowcore.scheduler.observers import observed, run_observer
from flowcore.scheduler.options import DEFAULT_RECURSION_LIMIT, RunOptions
from flowcore.scheduler.outcome import Outcome as _Outcome
from flowcore.scheduler.thread_run import ThreadRun
from flowcore.secrets import Redactor, find_secrets, learn, scrub

if TYPE_CHECKING:
    from flowcore.graph.compiled import CompiledGraph

__all__ = ["EmitFn", "EngineState"]

EmitFn = Callable[[Event], None]


class EngineState:
    """The state of one run, shared by every layer of ``RunEngine`` (its base class).

    Example:
        >>> # RunEngine(graph, options, run_id=..., emit=..., thread=...) builds it.
    """

    def __init__(
        self,
        graph: CompiledGraph,
        options: RunOptions,
        *,
        run_id: str | None = None,
        emit: EmitFn | None = None,
        thread: ThreadRun | None = None,
    ) -> None:
        self.graph = graph
        self._thread = thread
        self.interrupts: list[Interrupt] = []
        self.options = options
        self.run_id = run_id or uuid.uuid4().hex
        self._redactor: Redactor | None = options.redactor
        observer = run_observer(options.config)
        if observer is not None:
            # A tracer in the config sees every event, even of a run nobody streams.
            emit = observed(emit, observer)
        if emit is not None and options.redactor is not None:
            emit = _redacting(emit, options.redactor)
        self._emit = emit
        self._schema = graph.schema
        self._topo = graph.topology
        self._specs = graph.nodes
        self._routers = graph.routers_by_source
        limit = options.recursion_limit
        self.limit = limit if limit is not None else DEFAULT_RECURSION_LIMIT + len(graph.nodes)
        self._limit = options.max_concurrency or None
        self._fail_fast = options.on_error == "fail_fast"
        # Per-step durability commits once per step: the last task of a clean
        # superstep leaves its write to the checkpoint that follows (which holds
        # it in its write group) instead of committing it alone just before
        # (flowcore.runtime.steps.StepWrites says which task that is).
        self._deferred: _Outcome | None = None
        self.values: dict[str, Any] = {}
        self.outputs: dict[str, Mapping[str, Any] | None] = {}
        self.node_runs: list[NodeRun] = []
        self.errors: list[BaseException] = []
        # Every model call of the run is charged here, through its node's meter.
        self.meter = UsageMeter()
        self.step = 0
        self.result: RunResult | None = None
        self._input: Mapping[str, Any] = {}
        self._t0 = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pass_index = 0
        self._pass_base = 0
        self._pause_next: str | None = None
        # Sends that start the next pass: (args by node, nodes started only by Sends).
        self._carry: tuple[dict[str, list[Any]], set[str]] | None = None

    # ----------------------------------------------------------------- events
    def _event_base(self, superstep: int) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "graph_name": self.graph.name,
            "graph_version": self.graph.version,
            "superstep": superstep,
            "timestamp": time.time(),
        }

    def _learn_and_scrub(
        self, values: dict[str, Any], run_input: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Teach the redactor the input's secrets; scrub what will be stored of the input."""
        redactor = self._redactor
        if redactor is None:
            return values
        learn(redactor, find_secrets(run_input))
        learn(redactor, find_secrets(self.options.config))
        thread = self._thread
        if thread is not None and thread.groups:
            thread.groups[:] = [scrub(group, redactor) for group in thread.groups]
        scrubbed: dict[str, Any] = scrub(values, redactor)
        return scrubbed

    def _scrub(self, value: Any) -> Any:
        return value if self._redactor is None else scrub(value, self._redactor)


def _redacting(emit: EmitFn, redactor: Redactor) -> EmitFn:
    """``emit``, but every event is scrubbed of known secrets first."""

    def redacted(event: Event) -> None:
        emit(scrub(event, redactor))

    return redacted
