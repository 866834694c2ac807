"""``/api/memory/{user_id}``: a user's long-term memory, readable by that user only."""

from __future__ import annotations

from fastapi import APIRouter, Request

from flowcore.memory.manager import MemoryManager
from flowcore.port.events import json_safe
from flowcore.server.auth import Caller, services_of
from flowcore.server.errors import NotFoundError
from flowcore.server.models import MemoryItemView, MemoryView, error_responses

__all__ = ["router"]

router = APIRouter(tags=["memory"], responses=error_responses(400, 401, 404, 413, 422, 429))


@router.get("/api/memory/{user_id}", response_model=MemoryView, summary="A user's memory")
async def get_memory(user_id: str, key: Caller, request: Request) -> MemoryView:
    """Preferences and every remembered item of the caller (any other user id: 404)."""
    if user_id != key.user_id:
        # Same answer as for a user that does not exist: ids of others are not confirmed.
        raise NotFoundError(f"no memory of user {user_id!r} for this API key")
    store = services_of(request).memory
    if store is None:
        return MemoryView(user_id=user_id, preferences={}, items=[])
    preferences = await MemoryManager(store).preferences(user_id)
    found = await store.search(("users", user_id), None, limit=500)
    items = [
        MemoryItemView(namespace=list(i.namespace), key=i.key, value=json_safe(i.value))
        for i in found
    ]
    return MemoryView(user_id=user_id, preferences=json_safe(preferences), items=items)
