"""``/api/blocks``: the block registry over HTTP (list, search, create, version, read, delete).

The registry is shared by every user of the server, as in the CLI: saving a
changed block adds a new version, older versions stay readable.
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request

from flowcore.blocks.definition import BlockDefinition
from flowcore.server.auth import Caller, services_of
from flowcore.server.errors import BadRequestError
from flowcore.server.models import (
    BlockHit,
    BlockList,
    BlockSearch,
    BlockSearchResult,
    BlockSource,
    Deleted,
    error_responses,
)

__all__ = ["router"]

router = APIRouter(tags=["blocks"], responses=error_responses(400, 401, 413, 422, 429))


@router.get("/api/blocks", response_model=BlockList, summary="List or search blocks")
async def list_blocks(
    key: Caller,
    request: Request,
    q: str | None = Query(
        default=None, min_length=1, max_length=1000, description="Full-text search"
    ),
    category: str | None = Query(default=None, min_length=1, max_length=200),
    limit: int = Query(default=50, ge=1, le=500),
) -> BlockList:
    """Latest versions by id; with ``q``, the best matches first."""
    store = services_of(request).blocks
    if q is not None and q.strip():
        found = await store.search(q, limit=limit)
    else:
        found = (await store.list_blocks(category=category))[:limit]
    return BlockList(blocks=found)


@router.post(
    "/api/blocks",
    status_code=201,
    response_model=BlockDefinition,
    summary="Create a block, or a new version of one",
)
async def create_block(block: BlockDefinition, key: Caller, request: Request) -> BlockDefinition:
    """Saves the block; a changed definition of an existing id becomes its next version."""
    return await services_of(request).blocks.save(block)


@router.post(
    "/api/blocks/search", response_model=BlockSearchResult, summary="Search blocks (hybrid)"
)
async def search_blocks(body: BlockSearch, key: Caller, request: Request) -> BlockSearchResult:
    """Meaning and words fused (``mode: hybrid``) when the ``embed`` extra is installed,
    full text over name, description, use_when and tags otherwise (``mode: text``)."""
    services = services_of(request)
    search = services.thinker.search if services.thinker is not None else None
    if search is None:
        found = await services.blocks.search(body.query, limit=body.limit)
        return BlockSearchResult(blocks=found, mode="text")
    hits = await search.search(body.query, limit=body.limit)
    mode = hits[0].mode if hits else ("hybrid" if search.embedder is not None else "text")
    return BlockSearchResult(
        blocks=[hit.block for hit in hits],
        mode=mode,
        hits=[
            BlockHit(
                id=hit.block.id,
                score=hit.score,
                fts_rank=hit.fts_rank,
                vector_rank=hit.vector_rank,
                similarity=hit.similarity,
            )
            for hit in hits
        ],
    )


@router.get(
    "/api/blocks/{block_id}",
    response_model=BlockDefinition,
    responses=error_responses(404),
    summary="One block",
)
async def get_block(
    block_id: str,
    key: Caller,
    request: Request,
    version: int | None = Query(default=None, ge=1, le=2**31, description="A pinned version"),
) -> BlockDefinition:
    """The latest version, or ``?version=N``."""
    return await services_of(request).blocks.get(block_id, version)


@router.put(
    "/api/blocks/{block_id}",
    response_model=BlockDefinition,
    responses=error_responses(400),
    summary="Save a new version of a block",
)
async def put_block(
    block_id: str, block: BlockDefinition, key: Caller, request: Request
) -> BlockDefinition:
    """Like POST, with the id in the path (it must match the body's)."""
    if block.id != block_id:
        raise BadRequestError(
            f"the path names block {block_id!r} but the body is block {block.id!r}; "
            "make them the same"
        )
    return await services_of(request).blocks.save(block)


@router.delete(
    "/api/blocks/{block_id}",
    response_model=Deleted,
    responses=error_responses(404),
    summary="Delete every version of a block",
)
async def delete_block(block_id: str, key: Caller, request: Request) -> Deleted:
    """Pipelines that use the block fail to compile afterwards."""
    await services_of(request).blocks.delete(block_id)
    return Deleted(id=block_id, deleted=True)


@router.get(
    "/api/blocks/{block_id}/source",
    response_model=BlockSource,
    responses=error_responses(404),
    summary="A block's code or prompt template",
)
async def block_source(
    block_id: str,
    key: Caller,
    request: Request,
    version: int | None = Query(default=None, ge=1, le=2**31),
) -> BlockSource:
    """``source_code`` of a python block, ``prompt_template`` of an llm block, else the tool."""
    block = await services_of(request).blocks.get(block_id, version)
    source = block.source_code or block.prompt_template or block.tool
    return BlockSource(id=block.id, version=block.version, kind=block.kind, source=source)
