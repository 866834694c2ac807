"""Seed 003's Thinker endpoints: they answer 501 until the Thinker exists (issue 21).

The routes are in place (and in the OpenAPI document) so clients can be
written against them now; each answers with a JSON error naming what is
missing.
"""

from __future__ import annotations

from fastapi import APIRouter

from flowcore.server.auth import Caller
from flowcore.server.errors import NotImplementedYetError
from flowcore.server.models import ThinkerBody, error_responses

__all__ = ["router"]

router = APIRouter(tags=["thinker"], responses=error_responses(400, 401, 413, 422, 429, 501))


def _missing(route: str, does: str) -> NotImplementedYetError:
    return NotImplementedYetError(
        f"{route} {does}, which needs the Thinker (issue 21: intent -> Pipeline JSON); it is not "
        "part of flowcore yet. Until then, write the Pipeline JSON yourself and run it with "
        "POST /api/pipeline/run or POST /api/runs"
    )


@router.post("/api/clarify", summary="Ask clarifying questions about an intent (needs the Thinker)")
async def clarify(key: Caller, body: ThinkerBody | None = None) -> None:
    """Answers 501 until the Thinker exists."""
    raise _missing("/api/clarify", "checks whether an intent is specific enough")


@router.post("/api/create-agent", summary="Turn an intent into a Pipeline (needs the Thinker)")
async def create_agent(key: Caller, body: ThinkerBody | None = None) -> None:
    """Answers 501 until the Thinker exists."""
    raise _missing("/api/create-agent", "turns an intent into a Pipeline")


@router.post(
    "/api/create-agent/stream",
    summary="Turn an intent into a Pipeline, streaming progress (needs the Thinker)",
)
async def create_agent_stream(key: Caller, body: ThinkerBody | None = None) -> None:
    """Answers 501 until the Thinker exists."""
    raise _missing("/api/create-agent/stream", "streams the Thinker's progress")


@router.post("/api/automate", summary="Intent to result in one call (needs the Thinker)")
async def automate(key: Caller, body: ThinkerBody | None = None) -> None:
    """Answers 501 until the Thinker exists."""
    raise _missing("/api/automate", "builds a Pipeline from an intent and runs it")
