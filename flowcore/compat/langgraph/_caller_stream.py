"""A graph streamed from a node's code streams to that node's run as well.

LangGraph hands the chunks of a graph a node streams (on the node's thread,
as a nested run) both to the node and to the stream of the node's run, under
the node's namespace: a caller streaming subgraphs sees them. A stream with a
thread of its own, or started outside any node, goes only to its consumer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from flowcore.compat.langgraph._context import running_scope

__all__ = ["caller_sink"]

Forward = Callable[[tuple[str, ...], str, Any], None]


def caller_sink(config: Mapping[str, Any] | None) -> Forward | None:
    """Where a stream started now also sends its records, or ``None``.

    Must be called where the stream is started (in the node's context).

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
    loop = getattr(host, "loop", None)
    if sink is None or ns_path is None or loop is None:
        return None
    home = getattr(host, "loop_thread", None)
    prefix = (*ns_path, f"{scope.node}:{scope.task_id}")

    def forward(ns: tuple[str, ...], kind: str, payload: Any) -> None:
        if threading.get_ident() == home:
            sink((*prefix, *ns), kind, payload)
        else:
            loop.call_soon_threadsafe(sink, (*prefix, *ns), kind, payload)

    return forward
