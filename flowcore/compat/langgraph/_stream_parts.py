"""LangGraph's ``version="v2"`` stream chunks: one dict per chunk, whatever the modes.

Each chunk is ``{"type": mode, "ns": namespace, "data": payload}``, the
namespace ``()`` for the streamed graph itself, however many modes were asked
for and whether or not subgraphs stream. A ``values`` chunk holds the state
alone in ``data`` and the run's pauses in ``interrupts``.

A graph streamed from a node's code (with no thread of its own) streams to
that node's run as well, under the node's namespace (see :func:`caller_sink`):
a caller streaming subgraphs sees its chunks, as LangGraph's does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flowcore.compat.langgraph._context import running_scope
from flowcore.compat.langgraph._planner import INTERRUPT

__all__ = ["caller_sink", "stream_part"]

Forward = Callable[[tuple[str, ...], str, Any], None]


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


def caller_sink(config: Mapping[str, Any] | None) -> Forward | None:
    """Where a stream started in a node's code also sends its records, or ``None``.

    The node's run takes them under the node's namespace; a stream with a
    thread of its own, or started outside any node, sends them nowhere else.

    Example:
        >>> caller_sink(None) is None  # outside any node
        True
    """
    scope = running_scope()
    if scope is None or ((config or {}).get("configurable") or {}).get("thread_id") is not None:
        return None
    host: Any = scope.host
    sink = getattr(host, "sink", None)
    ns_path = getattr(host, "ns_path", None)
    if sink is None or ns_path is None:
        return None
    prefix = (*ns_path, f"{scope.node}:{scope.task_id}")

    def forward(ns: tuple[str, ...], kind: str, payload: Any) -> None:
        sink((*prefix, *ns), kind, payload)

    return forward
