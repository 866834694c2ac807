"""``/api/runs``, ``/api/threads`` and ``/api/graphs``: start, watch, answer, stop and inspect runs.

Every route answers only about the caller's own runs and threads; another
user's ids get the same 404 as ids that do not exist.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from flowcore.graph.compiled import CompiledGraph
from flowcore.history import RunRecord
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.plan import TaskPlan
from flowcore.port.sse import SSE_HEADERS, sse_stream
from flowcore.port.ui_http import ui_message_response
from flowcore.server.auth import Caller, services_of
from flowcore.server.errors import ConflictError, NotFoundError
from flowcore.server.models import (
    CheckpointView,
    GraphInfo,
    GraphList,
    ResumeBody,
    RunCreate,
    RunCreated,
    RunDetail,
    RunList,
    RunStateView,
    ThreadHistory,
    error_responses,
)
from flowcore.server.run_store import RunRow
from flowcore.server.views import run_detail, run_summary

__all__ = ["router"]

router = APIRouter(tags=["runs"], responses=error_responses(400, 401, 404, 413, 422, 429))

_RUN_ID = "The run's id, as POST /api/runs returned it"


def _created(row: RunRow) -> RunCreated:
    return RunCreated(run_id=row.run_id, thread_id=row.thread_id, status=row.status)


@router.post(
    "/api/runs",
    status_code=201,
    response_model=RunCreated,
    responses=error_responses(400, 409, 503),
    summary="Start a run of a graph, pipeline or plan",
)
async def start_run(body: RunCreate, key: Caller, request: Request) -> RunCreated:
    """Start a run in the background; follow it with ``GET /api/runs/{run_id}/events``."""
    services = services_of(request)
    target = body.target.model_dump()
    row = await services.runs.start(key.user_id, target, body.input, thread_id=body.thread_id)
    return _created(row)


@router.get("/api/runs", response_model=RunList, summary="The caller's runs, newest first")
async def list_runs(
    key: Caller,
    request: Request,
    limit: int = Query(default=50, ge=1, le=500, description="At most this many runs"),
) -> RunList:
    """The caller's runs with target, status, times and tokens."""
    rows = await services_of(request).runs.store.list(user_id=key.user_id, limit=limit)
    manager = services_of(request).runs
    shown = []
    for row in rows:
        live = manager.live(row.run_id)
        shown.append(run_summary(live.row if live is not None else row))
    return RunList(runs=shown)


async def _record(request: Request, run_id: str) -> RunRecord | None:
    history = services_of(request).history
    if history is None:
        return None
    try:
        return await history.get(run_id)
    except LookupError:
        return None


@router.get("/api/runs/{run_id}", response_model=RunDetail, summary="One run in full")
async def get_run(run_id: str, key: Caller, request: Request) -> RunDetail:
    """Status, the graph as Mermaid text, each node, pending questions, error and output."""
    manager = services_of(request).runs
    row = await manager.get(key.user_id, run_id)
    events = await manager.events(key.user_id, run_id)
    mermaid: str | None = None
    declared: dict[str, Any] = {}
    try:
        resolved = await manager.resolve(row)
        mermaid = await resolved.mermaid(manager.executor.runner)
        declared = resolved.node_inputs()
    except Exception:  # the graph is gone (no longer registered): the run still shows
        mermaid = None
    record = None if row.status in ("running", "suspended") else await _record(request, run_id)
    return run_detail(row, events, record, declared, mermaid)


@router.get(
    "/api/runs/{run_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "Server-Sent Events: one AiEvent per message, `event: <type>`",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    },
    summary="The run's AiEvents as Server-Sent Events",
)
async def run_events(run_id: str, key: Caller, request: Request) -> StreamingResponse:
    """What happened so far, then live; the stream ends after ``done``."""
    manager = services_of(request).runs
    await manager.get(key.user_id, run_id)  # 404 before the stream starts
    stream = sse_stream(manager.follow(key.user_id, run_id), keepalive=15.0)
    return StreamingResponse(stream, headers=dict(SSE_HEADERS), media_type="text/event-stream")


@router.get(
    "/api/runs/{run_id}/ui-stream",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The Vercel AI SDK UI message stream of the run",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    },
    summary="The run as an AI SDK UI message stream",
)
async def run_ui_stream(run_id: str, key: Caller, request: Request) -> StreamingResponse:
    """For ``useChat`` / assistant-ui clients: the same events in the AI SDK's protocol."""
    manager = services_of(request).runs
    await manager.get(key.user_id, run_id)
    response = ui_message_response(manager.follow(key.user_id, run_id), message_id=run_id)
    assert response.body is not None
    return StreamingResponse(
        response.body, headers=dict(response.headers), media_type="text/event-stream"
    )


@router.post(
    "/api/runs/{run_id}/resume",
    status_code=202,
    response_model=RunCreated,
    responses=error_responses(400, 409, 503),
    summary="Answer a paused run's question",
)
async def resume_run(run_id: str, body: ResumeBody, key: Caller, request: Request) -> RunCreated:
    """Continue the run's thread with ``value``; answers with the run that continues it."""
    row = await services_of(request).runs.resume(key.user_id, run_id, body.value, body.interrupt_id)
    return _created(row)


@router.post(
    "/api/runs/{run_id}/cancel",
    status_code=202,
    response_model=RunCreated,
    responses=error_responses(409),
    summary="Stop a running run",
)
async def cancel_run(run_id: str, key: Caller, request: Request) -> RunCreated:
    """The run stops; its event stream ends with ``done`` (``cancelled``)."""
    row = await services_of(request).runs.cancel(key.user_id, run_id)
    return RunCreated(run_id=row.run_id, thread_id=row.thread_id, status="cancelling")


@router.get(
    "/api/runs/{run_id}/state",
    response_model=RunStateView,
    responses=error_responses(409),
    summary="The saved state of the run's thread",
)
async def run_state(run_id: str, key: Caller, request: Request) -> RunStateView:
    """Values at the thread's latest checkpoint and the nodes that run next."""
    manager = services_of(request).runs
    row = await manager.get(key.user_id, run_id)
    if row.thread_id is None:
        raise ConflictError(f"run {run_id!r} ran on no thread, so no state was saved")
    resolved = await manager.resolve(row)
    state = await resolved.state(manager.executor.runner, row.thread_id)
    if state is None:
        raise ConflictError(f"{row.target_name!r} keeps no checkpoints, so it has no saved state")
    return RunStateView(
        run_id=row.run_id,
        thread_id=row.thread_id,
        checkpoint_id=state.checkpoint_id,
        values=dict(state.values),
        next=list(state.next),
    )


@router.get(
    "/api/threads/{thread_id}/history",
    response_model=ThreadHistory,
    summary="A thread's runs and checkpoints",
)
async def thread_history(
    thread_id: str,
    key: Caller,
    request: Request,
    limit: int = Query(default=50, ge=1, le=500, description="At most this many checkpoints"),
) -> ThreadHistory:
    """The caller's runs on the thread and its checkpoints, newest first."""
    manager = services_of(request).runs
    rows = await manager.store.list(user_id=key.user_id, thread_id=thread_id, limit=500)
    if not rows:
        raise NotFoundError(f"no thread {thread_id!r} for this API key's user")
    checkpoints: list[CheckpointView] = []
    try:
        resolved = await manager.resolve(rows[0])
        graph = await resolved.compiled(manager.executor.runner)
    except Exception:
        graph = None
    if isinstance(graph, CompiledGraph) and graph.checkpointer is not None:
        for snap in await graph.get_state_history(thread_id, limit=limit):
            checkpoints.append(
                CheckpointView(
                    checkpoint_id=snap.checkpoint_id,
                    parent_id=snap.parent_id,
                    step=snap.step,
                    created_at=snap.created_at,
                    next=list(snap.next),
                )
            )
    return ThreadHistory(
        thread_id=thread_id, runs=[run_summary(r) for r in rows], checkpoints=checkpoints
    )


@router.get("/api/graphs", response_model=GraphList, summary="The registered graphs")
async def list_graphs(key: Caller, request: Request) -> GraphList:
    """Graphs a run can name as ``{"graph": NAME}``."""
    graphs = services_of(request).runs.executor.graphs
    shown = []
    for name in sorted(graphs):
        graph = graphs[name]
        if isinstance(graph, Pipeline):
            kind, version = "pipeline", str(graph.version)
        elif isinstance(graph, TaskPlan):
            kind, version = "plan", str(graph.version)
        elif isinstance(graph, CompiledGraph):
            kind, version = "graph", graph.version
        else:
            kind, version = "langgraph", str(getattr(graph, "version", ""))
        shown.append(GraphInfo(name=name, kind=kind, version=version))
    return GraphList(graphs=shown)
