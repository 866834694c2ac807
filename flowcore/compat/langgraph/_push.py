"""``push_message``: a node hands a message to the ``messages`` stream by hand.

The message goes at once to each ``messages`` stream listening to the node's
run (the handlers of ``_messages_stream`` among the node's LangChain
callbacks), under the namespace of the graph the node runs in. With a
``state_key`` it is also written to that channel, ahead of what the node
returns.
"""

from __future__ import annotations

import sys
from typing import Any

from flowcore.compat.langgraph._context import current_scope
from flowcore.compat.langgraph._messages import convert_to_messages
from flowcore.compat.langgraph._messages_langchain import langchain_family

__all__ = ["push_message"]


def push_message(message: Any, *, state_key: str | None = "messages") -> Any:
    """Stream ``message`` now (and write it to ``state_key`` unless that is ``None``).

    Returns the message as streamed. LangChain messages stay LangChain's.

    Raises:
        RuntimeError: called outside a node.
        ValueError: the message has no id.

    Example:
        >>> # push_message(AIMessage(id="m1", content="hi"), state_key=None)
    """
    scope = current_scope()
    family = langchain_family([message])
    converted = (
        family.convert_to_messages([message])[0]
        if family is not None
        else convert_to_messages([message])[0]
    )
    if getattr(converted, "id", None) is None:
        raise ValueError("Message ID is required")
    config = _node_langchain_config()
    for handler in _handlers(config.get("callbacks")):
        push = getattr(handler, "push_message", None)
        if callable(push):
            push(converted, dict(config.get("metadata") or {}))
    if state_key:
        scope.pushed = [*(scope.pushed or ()), (state_key, converted)]
    return converted


def _node_langchain_config() -> dict[str, Any]:
    """The LangChain config the running node's calls see (empty without LangChain)."""
    module = sys.modules.get("langchain_core.runnables.config")
    if module is None:
        return {}
    return dict(module.var_child_runnable_config.get() or {})


def _handlers(callbacks: Any) -> list[Any]:
    if callbacks is None:
        return []
    if isinstance(callbacks, list):
        return callbacks
    return list(getattr(callbacks, "handlers", None) or ())
