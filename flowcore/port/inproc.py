"""``InProcExecutor``: the executor port on flowcore's own engine, in this process.

``run(request)`` starts a task at once and returns an :class:`InProcRunHandle`.
The task streams the engine's events (``CompiledGraph.stream``), maps each
one to AiEvents as it arrives and puts them on the handle's queue, so a
reader sees a node start while the node is still running. When the run
ends (however it ends) the task sets ``final`` and then queues the
terminal ``error`` events and the one ``done``: a reader that sees ``done``
finds ``final`` already resolved.

Targets are native compiled graphs, Pipelines and TaskPlans, and any graph
with flowcore's event stream as :class:`EventGraph` describes it: LangGraph-
style graphs (``flowcore.compat.langgraph.StateGraph(...).compile()``) are
such graphs, so they run through the port like native ones. With a
``history``, every run of a graph target is recorded there (Pipeline and
TaskPlan runs go to their runner's history).

Nothing goes wrong "outside" the run: an unknown target, bad input, a
thread that cannot be resumed or a pipeline that does not compile end the
run as ``failed`` with an ``error`` and ``done`` event, never as an
exception out of ``run``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

from flowcore.budgets.limits import BUDGETS_KEY
from flowcore.errors import InvalidInputError
from flowcore.events import DoneEvent, Event, RunStatus, UsageEvent
from flowcore.graph.compiled import CompiledGraph
from flowcore.history import RunHistory, record_from_result
from flowcore.interrupts import Resume
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.plan import TaskPlan, as_pipeline
from flowcore.pipeline.runner import PipelineRunner, check_run_inputs
from flowcore.port.errors import HandleConsumedError, InvalidTargetError, UnknownTargetError
from flowcore.port.events import AiEvent
from flowcore.port.mapping import AiEventMapper, Correlation, describe_error
from flowcore.port.protocol import (
    UNSET,
    PendingQuestion,
    RunOutcome,
    RunRequest,
    UsageTotals,
)
from flowcore.port.redaction import NO_REDACTION, Redactor
from flowcore.result import RunResult
from flowcore.scheduler.observers import TRACING_KEY, RunObserver

__all__ = ["EventGraph", "EventStream", "InProcExecutor", "InProcRunHandle", "Target"]


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
class _Prepared:
    """A resolved, ready-to-start run."""

    graph_name: str
    graph_version: str
    thread_id: str | None
    start: Callable[[], EventStream]
    record: Callable[[RunResult], Awaitable[None]] | None = None


def _names(target: Any) -> tuple[str, str]:
    """Graph name and version to report before (or without) compiling ``target``."""
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


@dataclass(slots=True)
class _Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0

    def add(self, event: UsageEvent) -> None:
        self.input_tokens += event.input_tokens
        self.output_tokens += event.output_tokens
        # A total is only known when every call's cost is.
        if self.cost_usd is not None:
            self.cost_usd = None if event.cost_usd is None else self.cost_usd + event.cost_usd

    def totals(self) -> UsageTotals:
        return UsageTotals(self.input_tokens, self.output_tokens, self.cost_usd)


class InProcRunHandle:
    """One run of an :class:`InProcExecutor`; see :class:`~flowcore.port.RunHandle`.

    Example:
        >>> # handle = executor.run(request)
        >>> # async for event in handle: ...
        >>> # outcome = await handle.final
    """

    def __init__(self, executor: InProcExecutor, request: RunRequest, run_id: str) -> None:
        loop = asyncio.get_running_loop()
        self.run_id = run_id
        self.request = request
        self._executor = executor
        self._queue: asyncio.Queue[AiEvent] = asyncio.Queue()
        self._final: asyncio.Future[RunOutcome] = loop.create_future()
        self._iterated = False
        self._began = False
        self._cancel_requested = False
        self._stream: EventStream | None = None
        graph_name, graph_version = _names(request.target)
        self._mapper = AiEventMapper(
            Correlation(
                run_id=run_id,
                request_id=request.caller.request_id,
                trace_id=request.caller.trace_id,
                thread_id=request.options.thread_id,
                graph_name=graph_name,
                graph_version=graph_version,
            ),
            executor.redactor,
        )
        self._usage = _Usage()
        self._task = loop.create_task(self._drive(), name=f"flowcore-port-run-{run_id}")
        self._task.add_done_callback(self._settle)

    def __repr__(self) -> str:
        state = "done" if self._final.done() else "running"
        return f"<InProcRunHandle {self.run_id} {state}>"

    # ------------------------------------------------------------ consumers
    def __aiter__(self) -> AsyncIterator[AiEvent]:
        """The run's AiEvents as they happen, ending after ``done``; iterate once only."""
        if self._iterated:
            raise HandleConsumedError(
                f"the events of run {self.run_id} are already being read; a handle can be "
                "iterated once, so give several readers a RunEventRelay(handle)"
            )
        self._iterated = True
        return self._events()

    async def _events(self) -> AsyncIterator[AiEvent]:
        while True:
            event = await self._queue.get()
            yield event
            if event.type == "done":
                return

    @property
    def final(self) -> Awaitable[RunOutcome]:
        """Resolves once, to the run's :class:`RunOutcome`; await it as often as you like.

        Example:
            >>> # outcome = await handle.final
        """
        # shield: a reader whose wait is cancelled must not cancel the outcome itself.
        return asyncio.shield(self._final)

    @property
    def done(self) -> bool:
        """Whether the run has ended (``final`` is resolved)."""
        return self._final.done()

    def cancel(self) -> None:
        """Stop the run: in-flight nodes are cancelled; ``done`` says ``cancelled``.

        Does nothing once the run has ended.

        Example:
            >>> # handle.cancel(); (await handle.final).status
        """
        if self._final.done() or self._cancel_requested:
            return
        self._cancel_requested = True
        if self._stream is not None:
            self._stream.cancel()  # the engine still sends its done event
        elif self._began:
            self._task.cancel()  # still preparing (resolving, compiling): stop that

    async def wait_closed(self) -> None:
        """Wait until the run's task has finished (``final`` is resolved by then)."""
        await asyncio.wait({self._task})

    # -------------------------------------------------------------- driving
    def _push(self, events: list[AiEvent]) -> None:
        for event in events:
            self._queue.put_nowait(event)

    async def _drive(self) -> None:
        self._began = True
        status: RunStatus = "failed"
        errors: list[BaseException] = []
        result: RunResult | None = None
        ending: list[AiEvent] | None = None
        thread_id = self.request.options.thread_id
        try:
            if self._cancel_requested:
                raise asyncio.CancelledError
            prepared = await self._executor._prepare(self.request, self.run_id)
            thread_id = prepared.thread_id
            self._mapper.ids = Correlation(
                run_id=self.run_id,
                request_id=self.request.caller.request_id,
                trace_id=self.request.caller.trace_id,
                thread_id=thread_id,
                graph_name=prepared.graph_name,
                graph_version=prepared.graph_version,
            )
            stream = prepared.start()
            self._stream = stream
            if self._cancel_requested:
                stream.cancel()
            async with stream as events:
                async for event in events:
                    mapped = self._mapper.map(event)
                    if isinstance(event, DoneEvent):
                        ending = mapped  # sent after `final` is set
                        continue
                    if isinstance(event, UsageEvent):
                        self._usage.add(event)
                    self._push(mapped)
                result = await events.result()
            status = result.status
            errors = list(result.errors)
            if prepared.record is not None:
                await prepared.record(result)
        except asyncio.CancelledError:
            status = "cancelled"
            ending = None
        except Exception as exc:
            if result is None:
                status, errors, ending = "failed", [exc], None
            else:  # the run ended, but recording it failed
                status, errors = "failed", [*errors, exc]
                ending = None
        if ending is None:
            ending = self._mapper.run_start() if self._mapper.seq == 0 else []
            ending += self._mapper.terminal(status, errors)
        self._end(self._outcome(status, errors, result, thread_id), ending)

    def _outcome(
        self,
        status: RunStatus,
        errors: list[BaseException],
        result: RunResult | None,
        thread_id: str | None,
    ) -> RunOutcome:
        redact = self._executor.redactor.redact
        output: Mapping[str, Any] | None = None
        interrupts: tuple[PendingQuestion, ...] = ()
        if result is not None:
            thread_id = result.thread_id or thread_id
            if status in ("completed", "interrupted"):
                output = redact(dict(result.state))
            interrupts = tuple(
                PendingQuestion(i.id, i.node, redact(i.value)) for i in result.interrupts
            )
        error = describe_error(errors[0], self._executor.redactor) if errors else None
        return RunOutcome(
            run_id=self.run_id,
            status=status,
            output=output,
            error=error,
            interrupts=interrupts,
            thread_id=thread_id,
            usage=self._usage.totals(),
        )

    def _end(self, outcome: RunOutcome, ending: list[AiEvent]) -> None:
        if self._final.done():
            return
        self._final.set_result(outcome)
        self._push(ending)

    def _settle(self, task: asyncio.Task[None]) -> None:
        # Safety net: a task cancelled before it ever ran (or one that died of a
        # BaseException) must still end the stream and resolve `final`.
        self._executor._forget(self)
        if not task.cancelled():
            task.exception()  # retrieved; _drive handles every Exception itself
        if not self._final.done():
            ending = self._mapper.run_start() if self._mapper.seq == 0 else []
            ending += self._mapper.terminal("cancelled")
            self._end(self._outcome("cancelled", [], None, self.request.options.thread_id), ending)


class InProcExecutor:
    """Runs graphs, pipelines and task plans on flowcore's engine behind the executor port.

    ``graphs`` registers targets under names that requests can use: native
    compiled graphs, LangGraph-style ``CompiledStateGraph`` s (any
    :class:`EventGraph`), Pipelines and TaskPlans. ``runner`` compiles and
    records Pipeline / TaskPlan targets (its block store, executor, memory,
    checkpointer and history); ``history`` records the runs of graph
    targets (its ``pipeline_id`` is the graph's name); ``redactor`` removes
    secrets from every event, from the outcome and from what is recorded;
    ``default_recursion_limit`` applies when a request sets none;
    ``tracing`` (e.g. ``flowcore.tracing.enable(provider)``) records the runs
    of graph and pipeline targets as OpenTelemetry spans.

    Call :meth:`run` from inside a running event loop. :meth:`aclose` (or
    ``async with``) cancels the runs still going and waits for them.

    Example:
        >>> # executor = InProcExecutor(graphs={"chat": chat_graph})
        >>> # handle = executor.run(RunRequest("chat", {"question": "hi"}, Caller("req-1", "tr-1")))
        >>> # async for event in handle:
        >>> #     print(event.type)
    """

    def __init__(
        self,
        *,
        graphs: Mapping[str, Target] | None = None,
        runner: PipelineRunner | None = None,
        redactor: Redactor = NO_REDACTION,
        default_recursion_limit: int | None = None,
        history: RunHistory | None = None,
        tracing: RunObserver | None = None,
    ) -> None:
        self.graphs: dict[str, Target] = dict(graphs or {})
        self.tracing = tracing
        self.runner = runner
        self.history = history
        self.redactor = redactor
        self.default_recursion_limit = default_recursion_limit
        self._live: set[InProcRunHandle] = set()

    def register(self, name: str, target: Target) -> None:
        """Make ``target`` runnable as ``RunRequest(name, ...)``.

        Example:
            >>> # executor.register("chat", chat_graph)
        """
        self.graphs[name] = target

    def run(self, request: RunRequest, *, run_id: str | None = None) -> InProcRunHandle:
        """Start the run ``request`` describes; returns its handle at once.

        ``run_id`` names the run (default: a new random id); a server that
        keeps its own record of runs passes its id, so events, history and
        its record share one id, also when it continues a run after a restart.

        Example:
            >>> # handle = executor.run(RunRequest("chat", {"q": "hi"}, Caller("req-1", "tr-1")))
        """
        handle = InProcRunHandle(self, request, run_id or uuid.uuid4().hex)
        self._live.add(handle)  # a strong reference until the run ends (see _forget)
        return handle

    def _forget(self, handle: InProcRunHandle) -> None:
        self._live.discard(handle)

    async def aclose(self) -> None:
        """Cancel every run still going and wait until each has ended.

        Example:
            >>> # await executor.aclose()
        """
        handles = list(self._live)
        for handle in handles:
            handle.cancel()
        for handle in handles:
            await handle.wait_closed()

    async def __aenter__(self) -> InProcExecutor:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

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

    async def _prepare(self, request: RunRequest, run_id: str) -> _Prepared:
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
            return _Prepared(
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
        return _Prepared(
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
    ) -> _Prepared:
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

        return _Prepared(
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
