"""``/api/pipelines`` (saved Pipeline documents) and ``/api/pipeline/run`` (a blocking run).

``/api/pipeline/run`` is seed 003's "Doer" call: it runs a Pipeline (given
inline or by the id of a saved one) through the same run manager as
``/api/runs`` and answers when the run has ended, so the run is also in
``GET /api/runs`` with its events.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Request

from flowcore.pipeline.model import Pipeline
from flowcore.server.auth import Caller, services_of
from flowcore.server.errors import BadRequestError, NotFoundError
from flowcore.server.models import (
    Deleted,
    InterruptView,
    PipelineList,
    PipelineRunBody,
    PipelineRunResult,
    error_responses,
)

__all__ = ["router"]

router = APIRouter(tags=["pipelines"], responses=error_responses(400, 401, 413, 422, 429))

_DOCUMENT = Body(description="A Pipeline document (docs/pipelines.md)")


def _doc(pipeline: Pipeline) -> dict[str, Any]:
    return pipeline.model_dump(mode="json", by_alias=True)


@router.get("/api/pipelines", response_model=PipelineList, summary="Saved pipelines")
async def list_pipelines(key: Caller, request: Request) -> PipelineList:
    """Every saved pipeline, by id."""
    found = await services_of(request).pipelines.list()
    return PipelineList(pipelines=[_doc(p) for p in found])


@router.post(
    "/api/pipelines",
    status_code=201,
    response_model=dict[str, Any],
    summary="Save a pipeline",
)
async def create_pipeline(
    key: Caller, request: Request, document: dict[str, Any] = _DOCUMENT
) -> dict[str, Any]:
    """Validates and saves the document under its ``id`` (replacing one saved before)."""
    pipeline = Pipeline.from_data(document)
    return _doc(await services_of(request).pipelines.save(pipeline))


@router.get(
    "/api/pipelines/{pipeline_id}",
    response_model=dict[str, Any],
    responses=error_responses(404),
    summary="One saved pipeline",
)
async def get_pipeline(pipeline_id: str, key: Caller, request: Request) -> dict[str, Any]:
    """The saved document."""
    found = await services_of(request).pipelines.get(pipeline_id)
    if found is None:
        raise NotFoundError(f"no saved pipeline {pipeline_id!r}; GET /api/pipelines lists them")
    return _doc(found)


@router.put(
    "/api/pipelines/{pipeline_id}",
    response_model=dict[str, Any],
    responses=error_responses(400),
    summary="Replace a saved pipeline",
)
async def put_pipeline(
    pipeline_id: str, key: Caller, request: Request, document: dict[str, Any] = _DOCUMENT
) -> dict[str, Any]:
    """Validates and saves the document; its ``id`` must be the one in the path."""
    pipeline = Pipeline.from_data(document)
    if pipeline.id != pipeline_id:
        raise BadRequestError(
            f"the path names pipeline {pipeline_id!r} but the document's id is "
            f"{pipeline.id!r}; make them the same"
        )
    return _doc(await services_of(request).pipelines.save(pipeline))


@router.delete(
    "/api/pipelines/{pipeline_id}",
    response_model=Deleted,
    responses=error_responses(404),
    summary="Delete a saved pipeline",
)
async def delete_pipeline(pipeline_id: str, key: Caller, request: Request) -> Deleted:
    """Runs already made from it keep their own copy."""
    if not await services_of(request).pipelines.delete(pipeline_id):
        raise NotFoundError(f"no saved pipeline {pipeline_id!r}; GET /api/pipelines lists them")
    return Deleted(id=pipeline_id, deleted=True)


@router.post(
    "/api/pipeline/run",
    response_model=PipelineRunResult,
    responses=error_responses(400, 404, 409, 503),
    summary="Run a pipeline and wait for its result",
)
async def run_pipeline(body: PipelineRunBody, key: Caller, request: Request) -> PipelineRunResult:
    """Blocking: answers when the run has completed, failed or paused for a human."""
    if (body.pipeline is None) == (body.pipeline_id is None):
        raise BadRequestError("give exactly one of 'pipeline' (a document) or 'pipeline_id'")
    target: dict[str, Any] = {"pipeline_id": body.pipeline_id}
    if body.pipeline is not None:
        target = {"pipeline": body.pipeline}
    manager = services_of(request).runs
    row = await manager.start(key.user_id, target, body.input)
    row = await manager.wait(key.user_id, row.run_id)
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
