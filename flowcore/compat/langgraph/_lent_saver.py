"""Which saver a compat graph's runs and state methods use: its own, or one lent through the config.

A graph can be handed a saver in ``config["configurable"]`` under
:data:`LENT_SAVER` (LangGraph's ``__pregel_checkpointer`` key, the way
LangGraph passes a parent's saver to a subgraph). A lent saver wins over the
graph's own; a graph compiled with ``checkpointer=False`` never saves; one
compiled with ``checkpointer=True`` only borrows, so without a lent saver it
has none on its own.

Example:
    >>> resolve_saver(None, own_history=False, opted_out=False, config={})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["LENT_SAVER", "lent_saver", "resolve_saver"]

LENT_SAVER = "__pregel_checkpointer"
"""The ``configurable`` key of a saver lent to a graph."""


def lent_saver(config: Mapping[str, Any] | None) -> Any:
    """The saver ``config`` lends (None: none).

    Example:
        >>> lent_saver({"configurable": {LENT_SAVER: "s"}})
        's'
    """
    if not config:
        return None
    return (config.get("configurable") or {}).get(LENT_SAVER)


def resolve_saver(
    own: Any, *, own_history: bool, opted_out: bool, config: Mapping[str, Any] | None
) -> Any:
    """The saver a graph with saver ``own`` uses under ``config`` (None: it saves nothing).

    Raises:
        RuntimeError: A ``checkpointer=True`` graph (``own_history``) is used on its
            own, with no saver lent to it.

    Example:
        >>> resolve_saver("mine", own_history=False, opted_out=False, config=None)
        'mine'
    """
    if opted_out:
        return None
    lent = lent_saver(config)
    if lent is not None:
        return lent
    if own is None and own_history:
        # checkpointer=True borrows its parent's saver: on its own it has none.
        raise RuntimeError("checkpointer=True cannot be used for root graphs.")
    return own
