"""Seed 003's Thinker endpoints: clarify, create-agent (blocking and SSE), automate.

Each route calls the app's one :class:`~flowcore.thinker.Thinker`
(:mod:`flowcore.server.thinker_service`). A model answer the Thinker could
not use is not a server error: the result says ``status: failed`` with the
Thinker's log. ``/api/automate`` runs the pipeline it made through the
server's runs, so the run is listed by ``GET /api/runs`` for its caller.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from flowcore.errors import FlowcoreError
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.runner import check_run_inputs
from flowcore.port.sse import SSE_HEADERS
from flowcore.server.auth import Caller, services_of
from flowcore.server.errors import BadRequestError, NotImplementedYetError
from flowcore.server.models import (
    AutomateBody,
    AutomateResult,
    ClarifyAnswer,
    ClarifyBody,
    CreateAgentBody,
    CreateAgentResult,
    InterruptView,
    PipelineRunResult,
    Tokens,
    error_responses,
)
from flowcore.server.run_store import RunRow
from flowcore.server.thinker_service import ClarifyOutcome, ThinkerService
from flowcore.thinker.api import CreateResult
from flowcore.thinker.events import EVENT_TYPES, ThinkerEvent, make_event, to_sse_frame

__all__ = ["router"]

log = logging.getLogger("flowcore.server")

router = APIRouter(tags=["thinker"], responses=error_responses(400, 401, 413, 422, 429))

_STREAM_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": (
            "Server-Sent Events in seed 003's shape: `event: <type>` and `data: {...}`, "
            "from `start` to `complete` (whose result holds pipeline_json, status, log)"
        ),
        # Before OpenAPI 3.2 an event stream's schema describes one event (one SSE message).
        "content": {
            "text/event-stream": {
                "schema": {
                    "type": "object",
                    "required": ["event", "data"],
                    "properties": {
                        "event": {"type": "string", "enum": sorted(EVENT_TYPES)},
                        "data": {
                            "type": "string",
                            "contentMediaType": "application/json",
                            "description": 'The event as JSON: {"type": <event>, "ts", ...}',
                        },
                    },
                }
            }
        },
    }
}


def _service(request: Request) -> ThinkerService:
    found = services_of(request).thinker
    if not isinstance(found, ThinkerService):
        raise NotImplementedYetError(
            "this server was built without a Thinker (its executor has no pipeline runner); "
            "start it with 'flowcore serve', or pass a runner to InProcExecutor"
        )
    return found


def _clarify_answer(outcome: ClarifyOutcome, service: ThinkerService) -> ClarifyAnswer:
    thread, result = outcome.thread, outcome.result
    if result is None:
        return ClarifyAnswer(
            thread_id=thread.thread_id,
            status="failed",
            ready=False,
            user_messages=service.user_messages(thread),
            error=outcome.error,
            tokens=Tokens(),
        )
    return ClarifyAnswer(
        thread_id=thread.thread_id,
        status="ready" if result.ready else "question",
        ready=result.ready,
        question=result.question,
        refined_intent=result.refined_intent,
        spec=dict(result.spec) if result.spec is not None else None,
        user_messages=service.user_messages(thread),
        tokens=Tokens(
            input_tokens=result.usage.input_tokens, output_tokens=result.usage.output_tokens
        ),
    )


@router.post(
    "/api/clarify",
    response_model=ClarifyAnswer,
    responses=error_responses(404, 409),
    summary="Is the intent specific enough? One clarifying question at a time",
)
async def clarify(body: ClarifyBody, key: Caller, request: Request) -> ClarifyAnswer:
    """Start with ``{"intent": ...}`` (or ``{"messages": [...]}``); answer with
    ``{"thread_id", "answer"}`` until ``status`` is ``ready`` (at most 3 answers)."""
    starts = (body.intent is not None) + (body.messages is not None)
    answers = body.thread_id is not None or body.answer is not None
    if starts + answers != 1 or (answers and (body.thread_id is None or body.answer is None)):
        raise BadRequestError(
            "give exactly one of: 'intent' (start a conversation), 'messages' (a whole "
            "conversation), or 'thread_id' with 'answer' (answer the pending question)"
        )
    service = _service(request)
    if body.thread_id is not None and body.answer is not None:
        outcome = await service.clarify_answer(key.user_id, body.thread_id, body.answer)
    else:
        messages = (
            [m.model_dump() for m in body.messages]
            if body.messages is not None
            else [{"role": "user", "content": body.intent or ""}]
        )
        outcome = await service.clarify_new(key.user_id, messages)
    return _clarify_answer(outcome, service)


def _create_result(result: CreateResult) -> CreateAgentResult:
    return CreateAgentResult(
        pipeline_json=dict(result.pipeline_json) if result.pipeline_json is not None else None,
        status=result.status,
        log=list(result.log),
        thread_id=result.thread_id,
        reused=list(result.reused),
        created=list(result.created),
        failed=list(result.failed),
        refined_intent=result.refined_intent,
        error=result.error,
        tokens=Tokens(
            input_tokens=result.usage.input_tokens, output_tokens=result.usage.output_tokens
        ),
    )


@router.post(
    "/api/create-agent",
    response_model=CreateAgentResult,
    summary="Turn an intent into a Pipeline (blocking)",
)
async def create_agent(body: CreateAgentBody, key: Caller, request: Request) -> CreateAgentResult:
    """Decompose, search, create and wire; ``pipeline_json`` runs with ``POST /api/runs``."""
    result = await _service(request).thinker.create(body.intent, user_id=key.user_id)
    return _create_result(result)


async def _frames(events: AsyncIterator[ThinkerEvent]) -> AsyncIterator[str]:
    """SSE frames of the events; a failure mid-stream still ends with ``complete``."""
    finished = False
    try:
        async for event in events:
            finished = finished or event["type"] == "complete"
            yield to_sse_frame(event)
    except FlowcoreError as exc:
        if finished:
            return
        log.warning("Thinker stream stopped: %s: %s", type(exc).__name__, exc)
        yield to_sse_frame(make_event("error", message=str(exc), error_type=type(exc).__name__))
        failed: dict[str, Any] = {
            "pipeline_json": None,
            "status": "failed",
            "log": [],
            "error": str(exc),
        }
        yield to_sse_frame(make_event("complete", result=failed))


def _stream(request: Request, intent: str, user_id: str) -> StreamingResponse:
    # stream_create checks the intent before the response starts: bad input is a 4xx.
    events = _service(request).thinker.stream_create(intent, user_id=user_id)
    return StreamingResponse(
        _frames(events), headers=dict(SSE_HEADERS), media_type="text/event-stream"
    )


@router.post(
    "/api/create-agent/stream",
    response_class=StreamingResponse,
    responses=_STREAM_DOC,
    summary="Turn an intent into a Pipeline, streaming progress (SSE)",
)
async def create_agent_stream(
    body: CreateAgentBody, key: Caller, request: Request
) -> StreamingResponse:
    """The Thinker's events as they happen, ending with ``complete``."""
    return _stream(request, body.intent, key.user_id)


@router.get(
    "/api/create-agent/stream",
    response_class=StreamingResponse,
    responses=_STREAM_DOC,
    summary="Turn an intent into a Pipeline, streaming progress (SSE, for EventSource)",
)
async def create_agent_stream_get(
    key: Caller,
    request: Request,
    intent: str = Query(min_length=1, max_length=4000, description="What to automate"),
) -> StreamingResponse:
    """Like the POST form, with the intent in the query (browsers' ``EventSource`` sends GET)."""
    return _stream(request, intent, key.user_id)


def _run_result(row: RunRow) -> PipelineRunResult:
    return PipelineRunResult(
        run_id=row.run_id,
        thread_id=row.thread_id,
        status=row.status,
        output=row.output,
        error=row.error,
        interrupts=[
            InterruptView(
                interrupt_id=str(q.get("interrupt_id")),
                node=str(q.get("node")),
                value=q.get("value"),
            )
            for q in row.interrupts
        ],
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
    )


@router.post(
    "/api/automate",
    response_model=AutomateResult,
    responses=error_responses(409, 503),
    summary="Intent to result in one call: create a Pipeline, then run it",
)
async def automate(body: AutomateBody, key: Caller, request: Request) -> AutomateResult:
    """Blocking; the run is one of the caller's runs (``GET /api/runs/{run_id}``)."""
    created = await _service(request).thinker.create(body.intent, user_id=key.user_id)
    made = _create_result(created)
    if created.status != "complete" or created.pipeline_json is None:
        problems = [f"no pipeline to run: the Thinker's result is {created.status!r}"]
        if created.error:
            problems.append(created.error)
        return AutomateResult(status="not_run", create=made, problems=problems)
    pipeline = Pipeline.from_data(dict(created.pipeline_json))
    problems = check_run_inputs(pipeline, body.input)
    if problems:
        return AutomateResult(status="not_run", create=made, problems=problems)
    manager = services_of(request).runs
    row = await manager.start(key.user_id, {"pipeline": dict(created.pipeline_json)}, body.input)
    row = await manager.wait(key.user_id, row.run_id)
    return AutomateResult(status=row.status, create=made, run=_run_result(row))
