"""``/api/executions``: the caller's records in the run history (seed 003's execution history)."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request

from flowcore.server.auth import Caller, services_of
from flowcore.server.errors import NotFoundError
from flowcore.server.models import ExecutionDetail, ExecutionList, error_responses
from flowcore.server.views import execution_detail, execution_summary

__all__ = ["router"]

router = APIRouter(tags=["executions"], responses=error_responses(400, 401, 413, 422, 429))


@router.get("/api/executions", response_model=ExecutionList, summary="The caller's executions")
async def list_executions(
    key: Caller,
    request: Request,
    pipeline_id: str | None = Query(default=None, min_length=1, max_length=200),
    status: str | None = Query(default=None, min_length=1, max_length=50),
    limit: int = Query(default=50, ge=1, le=500),
) -> ExecutionList:
    """Recorded runs of the caller, newest first, filtered by pipeline (or graph) and status."""
    history = services_of(request).history
    if history is None:
        return ExecutionList(executions=[])
    found = await history.list(
        user_id=key.user_id, pipeline_id=pipeline_id, status=status, limit=limit
    )
    return ExecutionList(executions=[execution_summary(r) for r in found])


@router.get(
    "/api/executions/{run_id}",
    response_model=ExecutionDetail,
    responses=error_responses(404),
    summary="One execution with its nodes",
)
async def get_execution(run_id: str, key: Caller, request: Request) -> ExecutionDetail:
    """Every node's status, outputs and tokens, and the final state."""
    history = services_of(request).history
    missing = NotFoundError(f"no execution {run_id!r} for this API key's user")
    if history is None:
        raise missing
    try:
        record = await history.get(run_id)
    except LookupError:
        raise missing from None
    if record.user_id != key.user_id:
        raise missing
    return execution_detail(record)
