"""Seed 003's Thinker events, sent through the port as data events.

Each stage reports its progress with :func:`emit`, which sends a ``custom``
event (``ctx.emit(type, event)``); the executor port turns it into a
:class:`~flowcore.port.DataAiEvent` whose ``name`` is the event type and
whose ``data`` is the event itself: a dict ``{"type": ..., "ts": ..., ...}``
in seed 003's shape. :func:`thinker_event` reads one back from the stream.
"""

from __future__ import annotations

import json
import time
from typing import Any

from flowcore.port.events import AiEvent, DataAiEvent, json_safe
from flowcore.scheduler.context import NodeContext

__all__ = ["EVENT_TYPES", "ThinkerEvent", "emit", "make_event", "thinker_event", "to_sse_frame"]

ThinkerEvent = dict[str, Any]
"""One event: ``{"type": <one of EVENT_TYPES>, "ts": <unix seconds>, ...fields}``."""

EVENT_TYPES = frozenset(
    {
        "start",
        "stage",
        "llm_prompt",
        "llm_response",
        "stage_result",
        "validation",
        "clarify_question",
        "decompose_blocks",
        "search_found",
        "search_missing",
        "creating_block",
        "block_created",
        "block_test_passed",
        "block_test_failed",
        "block_create_failed",
        "wire_problems",
        "complete",
        "error",
    }
)


def make_event(event_type: str, **fields: Any) -> ThinkerEvent:
    """A Thinker event dict, stamped now.

    Example:
        >>> make_event("stage", stage="decompose")["type"]
        'stage'
    """
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown Thinker event type {event_type!r}; use one of EVENT_TYPES")
    return {"type": event_type, **fields, "ts": time.time()}


def emit(ctx: NodeContext, event_type: str, **fields: Any) -> None:
    """Send one Thinker event from the node running a stage.

    Example:
        >>> ctx = NodeContext(run_id="r", node="decompose", graph_name="thinker", superstep=1)
        >>> emit(ctx, "stage", stage="decompose")  # no listener: dropped
    """
    ctx.emit(event_type, make_event(event_type, **fields))


def thinker_event(event: AiEvent) -> ThinkerEvent | None:
    """The Thinker event a port event carries, or None for any other event.

    Example:
        >>> thinker_event(DataAiEvent(run_id="r", graph_name="thinker", graph_version="1",
        ...     request_id="q", trace_id="t", seq=1, node="wire", name="stage",
        ...     data={"type": "stage", "stage": "wire", "ts": 1.0}))["stage"]
        'wire'
    """
    if not isinstance(event, DataAiEvent) or event.name not in EVENT_TYPES:
        return None
    data = event.data
    if not isinstance(data, dict) or data.get("type") != event.name:
        return None
    return dict(data)


def to_sse_frame(event: ThinkerEvent) -> str:
    """One Server-Sent Events message in seed 003's form: ``event: <type>`` and ``data: {...}``.

    Example:
        >>> to_sse_frame({"type": "stage", "stage": "wire", "ts": 1.0}).splitlines()
        ['event: stage', 'data: {"type":"stage","stage":"wire","ts":1.0}', '']
    """
    data = json.dumps(json_safe(event), separators=(",", ":"), ensure_ascii=False)
    # JSON text holds no raw line break, so the data is one line.
    return f"event: {event['type']}\ndata: {data}\n\n"
