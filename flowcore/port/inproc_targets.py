"""What an ``InProcExecutor`` runs, and how a run request becomes a run ready to start.

The target kinds (native compiled graphs, Pipelines, TaskPlans and any
:class:`EventGraph`, such as a LangGraph-style compiled graph), the shape of
the event stream a target returns, and :class:`RunPreparation`, the mixin of
:class:`~flowcore.port.inproc.InProcExecutor` that resolves a request's
target, checks its input (or resume answer), builds the run's config and
returns a :class:`PreparedRun`: the names to report, the thread, how to start
the stream and how to record the finished run in history. Any problem found
here is raised, and the run's handle turns it into a ``failed`` run.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

from flowcore.budgets.limits import BUDGETS_KEY
from flowcore.errors import InvalidInputError
from flowcore.events import Event
from flowcore.graph.compiled import CompiledGraph
from flowcore.history import RunHistory, record_from_result
from flowcore.interrupts import Resume
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.plan import TaskPlan, as_pipeline
from flowcore.pipeline.runner import PipelineRunner, check_run_inputs
from flowcore.port.errors import InvalidTargetError, UnknownTargetError
from flowcore.port.protocol import UNSET, RunRequest
from flowcore.port.redaction import NO_REDACTION, Redactor
from flowcore.result import RunResult
from flowcore.scheduler.observers import TRACING_KEY, RunObserver

__all__ = ["EventGraph", "EventStream", "PreparedRun", "RunPreparation", "Target", "target_names"]


class EventStream(Protocol):
    """The events of one run and its result: what ``CompiledGraph.stream`` returns.

    An async iterator of :mod:`flowcore.events` ending after the one ``done``,
    used as ``async with stream as events``; ``result()`` waits for the
    :class:`~flowcore.result.RunResult`; ``cancel()`` stops the run (``done``
    still arrives, ``cancelled``).
    """

    def __aiter__(self) -> AsyncIterator[Event]: ...

    async def __anext__(self) -> Event: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    async def result(self) -> RunResult: ...

    def cancel(self) -> None: ...


@runtime_checkable
class EventGraph(Protocol):
    """A graph of another kind that streams flowcore's events, e.g. a ``CompiledStateGraph``.

    ``run_stream`` takes the run input (or a :class:`~flowcore.interrupts.Resume`
    answering the thread's question) and returns an :class:`EventStream`;
    ``metadata`` carries the caller's ids (``request_id``, ``trace_id``,
    ``user_id``, ...), which the graph hands its nodes.
    """

    name: str

    @property
    def version(self) -> str: ...

    def run_stream(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        run_id: str | None = None,
        thread_id: str | None = None,
        recursion_limit: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        redactor: Redactor | None = None,
    ) -> EventStream: ...


Target = CompiledGraph | EventGraph | Pipeline | TaskPlan
"""What an :class:`InProcExecutor` runs (directly, or registered under a name)."""


@dataclass(slots=True)
class PreparedRun:
    """A resolved, ready-to-start run.

    Example:
        >>> # prepared = await executor._prepare(request, run_id); prepared.start()
    """

    graph_name: str
    graph_version: str
    thread_id: str | None
    start: Callable[[], EventStream]
    record: Callable[[RunResult], Awaitable[None]] | None = None


def target_names(target: Any) -> tuple[str, str]:
    """Graph name and version to report before (or without) compiling ``target``.

    Example:
        >>> target_names("chat")
        ('chat', '')
    """
    if isinstance(target, CompiledGraph):
        return target.name, target.version
    if isinstance(target, Pipeline):
        return target.id, str(target.version)
    if isinstance(target, TaskPlan):
        return target.plan_id, str(target.version)
    if isinstance(target, str):
        return target, ""
    if isinstance(target, EventGraph):
        return target.name, target.version
    return type(target).__name__, ""


class RunPreparation:
    """Turns a :class:`RunRequest` into a :class:`PreparedRun` (a mixin of ``InProcExecutor``).

    Example:
        >>> # prepared = await executor._prepare(request, run_id); stream = prepared.start()
    """

    graphs: dict[str, Target]
    runner: PipelineRunner | None
    history: RunHistory | None
    redactor: Redactor
    default_recursion_limit: int | None
    tracing: RunObserver | None

    # ------------------------------------------------------------ resolving
    def _resolve(self, target: Any) -> Target:
        if isinstance(target, str):
            found = self.graphs.get(target)
            if found is None:
                known = ", ".join(sorted(self.graphs)) or "none"
                raise UnknownTargetError(
                    f"no graph named {target!r} is registered with this executor "
                    f"(registered: {known}); register it with InProcExecutor(graphs={{...}}) "
                    "or executor.register(name, graph)"
                )
            return found
        if isinstance(target, CompiledGraph | Pipeline | TaskPlan | EventGraph):
            return target
        raise InvalidTargetError(
            f"cannot run a {type(target).__name__}: a run's target must be a CompiledGraph, "
            "a compiled LangGraph-style StateGraph, a Pipeline, a TaskPlan, or the name of "
            "one registered with the executor"
        )

    @staticmethod
    def _run_input(request: RunRequest) -> Mapping[str, Any] | Resume | None:
        resume = request.options.resume
        if resume is UNSET:
            return None if request.input is None else dict(request.input)
        if request.input:
            raise InvalidInputError(
                "a run either starts with input or resumes a thread with an answer, not both; "
                "pass input=None together with RunOptions(resume=...)"
            )
        if request.options.thread_id is None:
            raise InvalidInputError(
                "RunOptions(resume=...) answers the question of a paused thread: "
                "pass its thread_id too"
            )
        return resume if isinstance(resume, Resume) else Resume(resume)

    def _config(self, request: RunRequest) -> dict[str, Any]:
        caller = request.caller
        config: dict[str, Any] = {"request_id": caller.request_id, "trace_id": caller.trace_id}
        if caller.user_id:
            config["user_id"] = caller.user_id
        if caller.billing_account_id:
            config["billing_account_id"] = caller.billing_account_id
        if self.tracing is not None:
            config[TRACING_KEY] = self.tracing
        if request.options.budgets is not None:
            config[BUDGETS_KEY] = request.options.budgets
        return config

    async def _prepare(self, request: RunRequest, run_id: str) -> PreparedRun:
        target = self._resolve(request.target)
        run_input = self._run_input(request)
        options = request.options
        limit = (
            options.recursion_limit
            if options.recursion_limit is not None
            else self.default_recursion_limit
        )
        config = self._config(request)
        # The engine scrubs state, checkpoints and errors with the same redactor.
        redactor = None if self.redactor is NO_REDACTION else self.redactor
        if isinstance(target, CompiledGraph):
            graph = target
            return PreparedRun(
                graph.name,
                graph.version,
                options.thread_id,
                lambda: graph.stream(
                    run_input,
                    config=config,
                    run_id=run_id,
                    recursion_limit=limit,
                    thread_id=options.thread_id,
                    redactor=redactor,
                ),
                self._recorder(graph.name, graph.version, request, run_input, redactor),
            )
        if isinstance(target, Pipeline | TaskPlan):
            return await self._prepare_pipeline(target, request, run_input, run_id, config, limit)
        other = target
        # The tracer is the run's observer, not metadata: it goes in the run's config.
        observer = config.pop(TRACING_KEY, None)
        run_config = None if observer is None else {TRACING_KEY: observer}
        return PreparedRun(
            other.name,
            other.version,
            options.thread_id,
            lambda: other.run_stream(
                run_input,
                run_config,
                run_id=run_id,
                thread_id=options.thread_id,
                recursion_limit=limit,
                metadata=config,
                redactor=redactor,
            ),
            self._recorder(other.name, other.version, request, run_input, redactor),
        )

    def _recorder(
        self,
        graph_name: str,
        graph_version: str,
        request: RunRequest,
        run_input: Mapping[str, Any] | Resume | None,
        redactor: Redactor | None,
    ) -> Callable[[RunResult], Awaitable[None]] | None:
        """What records a graph target's run in ``history`` (None without one)."""
        history = self.history
        if history is None:
            return None
        started = time.time()
        user_id = request.caller.user_id
        inputs = dict(run_input) if isinstance(run_input, Mapping) else {}

        async def record(result: RunResult) -> None:
            await history.save(
                record_from_result(
                    result,
                    pipeline_id=graph_name,
                    pipeline_version=graph_version,
                    user_id=user_id,
                    started_at=started,
                    inputs=inputs,
                    redactor=redactor,
                )
            )

        return record

    async def _prepare_pipeline(
        self,
        definition: Pipeline | TaskPlan,
        request: RunRequest,
        run_input: Mapping[str, Any] | Resume | None,
        run_id: str,
        config: dict[str, Any],
        limit: int | None,
    ) -> PreparedRun:
        runner = self.runner
        if runner is None:
            raise InvalidTargetError(
                f"{type(definition).__name__} targets need a PipelineRunner (blocks, "
                "executor, memory, checkpointer); create the executor with "
                "InProcExecutor(runner=PipelineRunner(...))"
            )
        pipeline = as_pipeline(definition)
        if run_input is None or isinstance(run_input, Mapping):
            given = dict(run_input or {})
            if run_input is not None or request.options.thread_id is None:
                problems = check_run_inputs(pipeline, given)
                if problems:
                    raise InvalidInputError(
                        f"run input of pipeline {pipeline.id!r}: " + "; ".join(problems)
                    )
                run_input = given
        graph = await runner.compile(pipeline)
        if isinstance(run_input, Mapping):  # inputs feeding secret block fields become Secrets
            run_input = await runner.guard_inputs(pipeline, run_input)
        redactor = runner.redactor if self.redactor is NO_REDACTION else self.redactor
        thread_id = request.options.thread_id
        if thread_id is None and runner.checkpointer is not None:
            thread_id = f"{pipeline.id}-{uuid.uuid4().hex[:12]}"
        started = time.time()
        user_id = request.caller.user_id
        source: dict[str, Any] = definition.model_dump(mode="json", by_alias=True)
        history = runner.history

        async def record(result: RunResult) -> None:
            if history is None:
                return
            await history.save(
                record_from_result(
                    result,
                    pipeline_id=pipeline.id,
                    pipeline_version=pipeline.version,
                    user_id=user_id,
                    started_at=started,
                    inputs=dict(run_input) if isinstance(run_input, Mapping) else {},
                    source=source,
                    redactor=redactor,
                )
            )

        return PreparedRun(
            graph.name,
            graph.version,
            thread_id,
            lambda: graph.stream(
                run_input,
                config=config,
                run_id=run_id,
                on_error=pipeline.on_error,
                recursion_limit=limit,
                thread_id=thread_id,
                redactor=redactor,
            ),
            record,
        )
