"""``Thinker``: from a person's intent to a tested, runnable pipeline (the API front doors use).

The server's ``/api/clarify``, ``/api/create-agent`` (and ``/stream``) and
``/api/automate`` and the CLI's ``flowcore create`` / ``flowcore automate``
call these methods; every one runs the Thinker graph through the executor
port (:class:`~flowcore.port.InProcExecutor`), so its events, usage and
checkpoints are those of any flowcore run.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from flowcore.blocks.executor import BlockExecutor
from flowcore.blocks.postgres_store import PostgresBlockStore
from flowcore.blocks.store import BlockStore, SqliteBlockStore
from flowcore.checkpoint.memory import InMemoryCheckpointer
from flowcore.checkpoint.protocol import Checkpointer
from flowcore.errors import FlowcoreError, InvalidInputError
from flowcore.graph.builder import Graph
from flowcore.graph.compiled import CompiledGraph
from flowcore.graph.constants import END, START
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.runner import PipelineRunner, check_run_inputs
from flowcore.port.events import ErrorAiEvent
from flowcore.port.inproc import InProcExecutor
from flowcore.port.protocol import Caller, RunOptions, RunOutcome, RunRequest, UsageTotals
from flowcore.result import RunResult
from flowcore.scheduler.context import NodeContext
from flowcore.search.block_search import BlockSearch
from flowcore.thinker.clarifier import check_messages, clarify_once
from flowcore.thinker.events import ThinkerEvent, make_event, thinker_event
from flowcore.thinker.graph import THINKER_GRAPH, ThinkerDeps, build_thinker_graph
from flowcore.thinker.prompts import ensure_prompt_blocks

__all__ = ["AutomateResult", "ClarifyResult", "CreateResult", "Thinker", "ThinkerRunError"]

_CLARIFY_GRAPH = "thinker_clarify"


class ThinkerRunError(FlowcoreError):
    """A Thinker run ended without an answer (its model or its engine failed); says why.

    Example:
        >>> ThinkerRunError("the Clarifier run failed: provider down").code
        'thinker-run-failed'
    """

    code = "thinker-run-failed"


@dataclass(frozen=True, slots=True)
class ClarifyResult:
    """The Clarifier's decision: ready with a refined intent, or one question to ask.

    Example:
        >>> ClarifyResult(ready=False, question="Which language?").as_json()["ready"]
        False
    """

    ready: bool
    question: str | None = None
    refined_intent: str | None = None
    spec: Mapping[str, Any] | None = None
    usage: UsageTotals = field(default_factory=UsageTotals)

    def as_json(self) -> dict[str, Any]:
        """Seed 003's answer shape: ``{"ready", "question"?, "refined_intent"?}``.

        Example:
            >>> ClarifyResult(ready=False, question="Which file?").as_json()
            {'ready': False, 'question': 'Which file?'}
        """
        data: dict[str, Any] = {"ready": self.ready}
        if self.question is not None:
            data["question"] = self.question
        if self.refined_intent is not None:
            data["refined_intent"] = self.refined_intent
            data["spec"] = dict(self.spec or {})
        return data


@dataclass(frozen=True, slots=True)
class CreateResult:
    """What a Thinker run made: the pipeline (when complete), its status and log.

    ``status`` is ``complete``, ``failed`` or ``needs_input`` (the Clarifier
    asked ``question``; answer it with :meth:`Thinker.answer` on ``thread_id``).

    Example:
        >>> CreateResult(status="failed", log=["decompose failed"]).pipeline_json is None
        True
    """

    status: Literal["complete", "failed", "needs_input"]
    pipeline_json: Mapping[str, Any] | None = None
    log: Sequence[str] = ()
    question: str | None = None
    thread_id: str | None = None
    reused: Sequence[str] = ()
    created: Sequence[str] = ()
    failed: Sequence[str] = ()
    refined_intent: str | None = None
    usage: UsageTotals = field(default_factory=UsageTotals)
    events: Sequence[ThinkerEvent] = ()
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        """Seed 003's ``complete`` result: ``{"pipeline_json", "status", "log", ...}``.

        Example:
            >>> CreateResult(status="failed").as_json()["status"]
            'failed'
        """
        return {
            "pipeline_json": None if self.pipeline_json is None else dict(self.pipeline_json),
            "status": self.status,
            "log": list(self.log),
            "question": self.question,
            "thread_id": self.thread_id,
            "reused": list(self.reused),
            "created": list(self.created),
            "failed": list(self.failed),
            "usage": {
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
            },
        }


@dataclass(frozen=True, slots=True)
class AutomateResult:
    """A created pipeline and its run (None when creation did not complete or inputs misfit).

    Example:
        >>> AutomateResult(CreateResult(status="failed"), None, ["no pipeline"]).run is None
        True
    """

    create: CreateResult
    run: RunResult | None
    problems: Sequence[str] = ()


class _Holder:
    """The outcome of a run whose events were streamed (set when the stream ends)."""

    def __init__(self) -> None:
        self.outcome: RunOutcome | None = None


class _ClarifyState(TypedDict, total=False):
    """The one-stage Clarifier graph's state."""

    messages: list[dict[str, str]]
    ready: bool
    question: str | None
    refined_intent: str | None
    refined: dict[str, Any] | None


class Thinker:
    """Turns intents into pipelines: clarify, decompose, search, create, wire.

    ``blocks`` is the registry (its prompt blocks are seeded on first use,
    created blocks are saved there); ``executor`` runs the prompt blocks
    and tests created ones (it needs providers and a sandbox); ``search``
    defaults to full-text :class:`~flowcore.search.BlockSearch` on a SQLite
    or Postgres registry; ``checkpointer`` makes Thinker runs resumable (in memory by
    default: pass a :class:`~flowcore.checkpoint.SqliteCheckpointer` for
    threads that outlive the process); ``runner`` runs pipelines for
    :meth:`automate` (default: one on ``blocks`` and ``executor``).

    Example:
        >>> # thinker = Thinker(store, BlockExecutor(providers=ProviderRegistry.single(model)))
        >>> # result = await thinker.create("Summarize a text, then count its words")
        >>> # result.status, result.pipeline_json["nodes"]
    """

    def __init__(
        self,
        blocks: BlockStore,
        executor: BlockExecutor,
        search: BlockSearch | None = None,
        checkpointer: Checkpointer | None = None,
        *,
        runner: PipelineRunner | None = None,
        port: InProcExecutor | None = None,
    ) -> None:
        self.blocks = blocks
        self.executor = executor
        if search is None and isinstance(blocks, SqliteBlockStore | PostgresBlockStore):
            search = BlockSearch(blocks)
        self.search = search
        self.checkpointer = checkpointer or InMemoryCheckpointer()
        self.runner = runner or PipelineRunner(blocks=blocks, executor=executor)
        self.port = port or InProcExecutor()
        self._owns_port = port is None
        self._graphs: tuple[CompiledGraph, CompiledGraph] | None = None
        self._lock = asyncio.Lock()

    async def aclose(self) -> None:
        """Cancel the Thinker runs still going and wait for them (a given port is left open).

        Example:
            >>> # await thinker.aclose()  # e.g. when the server shuts down
        """
        if self._owns_port:
            await self.port.aclose()

    async def __aenter__(self) -> Thinker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def graphs(self) -> tuple[CompiledGraph, CompiledGraph]:
        """The compiled Thinker graph and the one-stage Clarifier graph (built once).

        Example:
            >>> # thinker_graph, clarify_graph = await thinker.graphs()
        """
        async with self._lock:
            if self._graphs is None:
                prompts = await ensure_prompt_blocks(self.blocks)
                deps = ThinkerDeps(self.executor, self.blocks, self.search, prompts)
                self._graphs = (
                    build_thinker_graph(deps, self.checkpointer),
                    _clarify_graph(deps),
                )
            return self._graphs

    # ---------------------------------------------------------------- clarify
    async def clarify(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        thread_id: str | None = None,
    ) -> ClarifyResult:
        """One Clarifier decision on the conversation so far (seed 003's ``/api/clarify``).

        Example:
            >>> # result = await thinker.clarify([{"role": "user", "content": "research stuff"}])
            >>> # result.ready, result.question
        """
        clean = check_messages(messages)
        _, graph = await self.graphs()
        request = RunRequest(graph, {"messages": clean}, _caller(user_id, thread_id))
        holder = _Holder()
        async for _event in self._drive(request, holder):
            pass
        outcome = holder.outcome
        assert outcome is not None
        if outcome.status != "completed" or outcome.output is None:
            raise ThinkerRunError(f"the Clarifier run {outcome.status}: {outcome.error}")
        out = outcome.output
        return ClarifyResult(
            ready=bool(out.get("ready")),
            question=out.get("question"),
            refined_intent=out.get("refined_intent"),
            spec=out.get("refined"),
            usage=outcome.usage,
        )

    # ----------------------------------------------------------------- create
    def stream_create(
        self,
        intent: str,
        *,
        user_id: str | None = None,
        thread_id: str | None = None,
        clarify: bool = False,
    ) -> AsyncIterator[ThinkerEvent]:
        """Seed 003's events of a Thinker run, as they happen, ending with ``complete``.

        With ``clarify`` the run may stop after a ``clarify_question`` event
        (status ``needs_input``); :meth:`stream_answer` goes on from there.

        Example:
            >>> # async for event in thinker.stream_create("Count the words of a text"):
            >>> #     print(event["type"])
        """
        request = self._create_request(intent, user_id, thread_id, clarify)
        return self._events(request, _Holder())

    def stream_answer(
        self, thread_id: str, answer: str, *, user_id: str | None = None
    ) -> AsyncIterator[ThinkerEvent]:
        """Answer the Clarifier's pending question on ``thread_id`` and stream what follows.

        Example:
            >>> # async for event in thinker.stream_answer(thread, "a news article"): ...
        """
        return self._events(self._answer_request(thread_id, answer, user_id), _Holder())

    async def create(
        self,
        intent: str,
        *,
        user_id: str | None = None,
        thread_id: str | None = None,
        clarify: bool = False,
    ) -> CreateResult:
        """Run the Thinker on ``intent`` and return the pipeline it made.

        Example:
            >>> # result = await thinker.create("Extract the numbers from a text, then average")
            >>> # result.status
            >>> # 'complete'
        """
        return await self._collect(self._create_request(intent, user_id, thread_id, clarify))

    async def answer(
        self, thread_id: str, answer: str, *, user_id: str | None = None
    ) -> CreateResult:
        """Answer the Clarifier's question on ``thread_id`` and carry on.

        Example:
            >>> # result = await thinker.answer(result.thread_id, "a news article")
        """
        return await self._collect(self._answer_request(thread_id, answer, user_id))

    # --------------------------------------------------------------- automate
    async def automate(
        self,
        intent: str,
        inputs: Mapping[str, Any] | None = None,
        *,
        user_id: str | None = None,
        thread_id: str | None = None,
    ) -> AutomateResult:
        """Create a pipeline for ``intent``, then run it on ``inputs`` (seed 003's automate).

        Example:
            >>> # done = await thinker.automate("Count the words", {"text": "a b c"})
            >>> # done.run.status
            >>> # 'completed'
        """
        created = await self.create(intent, user_id=user_id, thread_id=thread_id)
        if created.status != "complete" or created.pipeline_json is None:
            return AutomateResult(created, None, [f"no pipeline: creation {created.status}"])
        pipeline = Pipeline.from_data(dict(created.pipeline_json))
        problems = check_run_inputs(pipeline, dict(inputs or {}))
        if problems:
            return AutomateResult(created, None, problems)
        run = await self.runner.run(pipeline, dict(inputs or {}), user_id=user_id)
        return AutomateResult(created, run, [])

    # -------------------------------------------------------------- internals
    def _create_request(
        self, intent: str, user_id: str | None, thread_id: str | None, clarify: bool
    ) -> RunRequest:
        if not isinstance(intent, str) or not intent.strip():
            raise InvalidInputError("intent must be non-empty text saying what to automate")
        state = {
            "intent": intent.strip(),
            "clarify": bool(clarify),
            "messages": [{"role": "user", "content": intent.strip()}],
            "log": [],
        }
        thread = thread_id or f"thinker-{uuid.uuid4().hex[:12]}"
        return RunRequest(
            THINKER_GRAPH, state, _caller(user_id, thread), RunOptions(thread_id=thread)
        )

    @staticmethod
    def _answer_request(thread_id: str, answer: str, user_id: str | None) -> RunRequest:
        if not isinstance(answer, str) or not answer.strip():
            raise InvalidInputError("the answer must be non-empty text")
        return RunRequest(
            THINKER_GRAPH,
            None,
            _caller(user_id, thread_id),
            RunOptions(thread_id=thread_id, resume=answer),
        )

    async def _drive(self, request: RunRequest, holder: _Holder) -> AsyncIterator[Any]:
        graph, _ = await self.graphs()
        if request.target == THINKER_GRAPH:
            request = RunRequest(graph, request.input, request.caller, request.options)
        handle = self.port.run(request)
        try:
            async for event in handle:
                yield event
        finally:
            if not handle.done:
                handle.cancel()
            holder.outcome = await handle.final

    async def _events(self, request: RunRequest, holder: _Holder) -> AsyncIterator[ThinkerEvent]:
        yield make_event("start", thread_id=request.options.thread_id)
        finished = False
        async for event in self._drive(request, holder):
            found = thinker_event(event)
            if found is not None:
                finished = finished or found["type"] == "complete"
                yield found
            elif isinstance(event, ErrorAiEvent):
                yield make_event("error", message=event.message, error_type=event.error_type)
        if not finished:
            # A question is pending, or the run failed before its last stage: still a last event.
            outcome = holder.outcome
            status = "needs_input" if outcome and outcome.status == "interrupted" else "failed"
            question = None
            if outcome and outcome.interrupts:
                value = outcome.interrupts[0].value
                question = value.get("question") if isinstance(value, Mapping) else str(value)
            yield make_event(
                "complete",
                result={
                    "pipeline_json": None,
                    "status": status,
                    "log": [],
                    "question": question,
                    "thread_id": request.options.thread_id,
                    "error": outcome.error if outcome else None,
                },
            )

    async def _collect(self, request: RunRequest) -> CreateResult:
        holder = _Holder()
        events = [event async for event in self._events(request, holder)]
        result = events[-1].get("result") or {}
        outcome = holder.outcome
        return CreateResult(
            status=result.get("status", "failed"),
            pipeline_json=result.get("pipeline_json"),
            log=tuple(result.get("log") or ()),
            question=result.get("question"),
            thread_id=request.options.thread_id,
            reused=tuple(result.get("reused") or ()),
            created=tuple(result.get("created") or ()),
            failed=tuple(result.get("failed") or ()),
            refined_intent=result.get("refined_intent"),
            usage=outcome.usage if outcome is not None else UsageTotals(),
            events=tuple(events),
            error=result.get("error"),
        )


def _caller(user_id: str | None, thread_id: str | None) -> Caller:
    request = uuid.uuid4().hex
    return Caller(request_id=request, trace_id=thread_id or request, user_id=user_id)


def _clarify_graph(deps: ThinkerDeps) -> CompiledGraph:
    """One node: one Clarifier decision on the messages given (no thread, no interrupt)."""

    async def clarify(state: _ClarifyState, ctx: NodeContext) -> dict[str, Any]:
        decision = await clarify_once(
            deps.executor, deps.prompts["clarify"], state["messages"], ctx
        )
        refined = decision.refined_intent
        return {
            "ready": decision.ready,
            "question": None if decision.ready else decision.question,
            "refined_intent": refined.as_text() if refined else None,
            "refined": refined.model_dump() if refined else None,
        }

    graph = Graph(_ClarifyState, name=_CLARIFY_GRAPH)
    graph.add_node("clarify", clarify).add_edge(START, "clarify").add_edge("clarify", END)
    return graph.compile()
