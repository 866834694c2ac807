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

How a request is resolved and prepared, and the target kinds, live in
:mod:`flowcore.port.inproc_targets`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from flowcore.events import DoneEvent, RunStatus, UsageEvent
from flowcore.history import RunHistory
from flowcore.pipeline.runner import PipelineRunner
from flowcore.port.errors import HandleConsumedError
from flowcore.port.events import AiEvent
from flowcore.port.inproc_targets import EventGraph as EventGraph
from flowcore.port.inproc_targets import EventStream as EventStream
from flowcore.port.inproc_targets import RunPreparation, target_names
from flowcore.port.inproc_targets import Target as Target
from flowcore.port.mapping import AiEventMapper, Correlation, describe_error
from flowcore.port.protocol import PendingQuestion, RunOutcome, RunRequest, UsageTotals
from flowcore.port.redaction import NO_REDACTION, Redactor
from flowcore.result import RunResult
from flowcore.scheduler.observers import RunObserver

__all__ = ["EventGraph", "EventStream", "InProcExecutor", "InProcRunHandle", "Target"]


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
        graph_name, graph_version = target_names(request.target)
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


class InProcExecutor(RunPreparation):
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
