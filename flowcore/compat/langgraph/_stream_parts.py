"""LangGraph's ``version="v2"`` stream chunks: one dict per chunk, whatever the modes.

Each chunk is ``{"type": mode, "ns": namespace, "data": payload}``, the
namespace ``()`` for the streamed graph itself, however many modes were asked
for and whether or not subgraphs stream. A ``values`` chunk holds the state
alone in ``data`` and the run's pauses in ``interrupts``.
"""

from __future__ import annotations

from typing import Any

from flowcore.compat.langgraph._planner import INTERRUPT

__all__ = ["stream_part"]


def stream_part(ns: tuple[str, ...], mode: str, data: Any) -> dict[str, Any]:
    """The v2 chunk of ``data`` streamed in ``mode`` from namespace ``ns``.

    Example:
        >>> stream_part((), "values", {"n": 1, "__interrupt__": ()})
        {'type': 'values', 'ns': (), 'data': {'n': 1}, 'interrupts': ()}
    """
    if mode != "values":
        return {"type": mode, "ns": ns, "data": data}
    interrupts: tuple[Any, ...] = ()
    if isinstance(data, dict) and INTERRUPT in data:
        interrupts = tuple(data[INTERRUPT])
        data = {k: v for k, v in data.items() if k != INTERRUPT}
    return {"type": mode, "ns": ns, "data": data, "interrupts": interrupts}
