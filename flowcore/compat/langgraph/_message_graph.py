"""``MessageGraph``: LangGraph's deprecated graph whose whole state is one list of messages.

Every node receives the list and returns messages to merge into it with
:func:`add_messages` (append, or replace by id). It is a :class:`StateGraph`
over a root-state schema, so it runs on the same engine as any other graph;
new code should use a ``StateGraph`` with a ``messages`` key instead.

Example:
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     g = MessageGraph()
    >>> _ = g.add_node("echo", lambda msgs: [("ai", "hi")])
    >>> _ = g.set_entry_point("echo").set_finish_point("echo")
    >>> [m.content for m in g.compile().invoke([("user", "hello")])]  # doctest: +SKIP
    ['hello', 'hi']
"""

from __future__ import annotations

from typing import Annotated, Any

from flowcore.compat.langgraph._add_messages import add_messages
from flowcore.compat.langgraph._graph import StateGraph
from flowcore.compat.langgraph._warnings import LangGraphDeprecatedSinceV10, warn_deprecated

__all__ = ["MessageGraph"]


class MessageGraph(StateGraph[Any]):
    """Deprecated: a graph whose state is a list of messages merged with ``add_messages``."""

    def __init__(self) -> None:
        warn_deprecated(
            LangGraphDeprecatedSinceV10,
            "MessageGraph is deprecated in LangGraph v1.0.0, to be removed in v2.0.0. "
            "Please use StateGraph with a `messages` key instead.",
        )
        super().__init__(Annotated[list, add_messages])
