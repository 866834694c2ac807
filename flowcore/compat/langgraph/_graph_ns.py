"""The namespace of the graph a task runs in, from its run's LangGraph metadata.

Stream handlers (``messages``, ``tools``) show a chat model's or tool's
output under the namespace of the graph whose node called it. A ``@task``
call runs in its caller's graph, though its own segment nests under the
caller's in ``langgraph_checkpoint_ns``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["graph_namespace"]

_PUSH = "__pregel_push"


def graph_namespace(metadata: Any) -> tuple[str, ...]:
    """The namespace of the graph a task runs in, from its run's metadata.

    The task's own segment goes, and one more per enclosing ``@task`` call. A
    call's ``langgraph_path`` is ``(PUSH, caller's path, index, True)``, the
    caller's path flat (a call's own starts with ``PUSH``).

    Example:
        >>> graph_namespace({"langgraph_checkpoint_ns": "sub:1|node:2"})
        ('sub:1',)
        >>> graph_namespace({"langgraph_checkpoint_ns": "wf:1|outer:2|inner:3",
        ...     "langgraph_path": (_PUSH, (_PUSH, "__pregel_pull", "wf", 0), 0, True)})
        ()
    """
    ns = str((metadata or {}).get("langgraph_checkpoint_ns") or "")
    if not ns:
        return ()
    parts = tuple(ns.split("|"))
    path = (metadata or {}).get("langgraph_path") or ()
    drop = 1
    if isinstance(path, tuple) and len(path) == 4 and path[0] == _PUSH and path[-1] is True:
        drop += 1
        caller = path[1]
        while isinstance(caller, tuple) and caller and caller[0] == _PUSH:
            drop += 1
            caller = caller[1:-1]
    return parts[: max(len(parts) - drop, 0)]
