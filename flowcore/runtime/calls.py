"""The one place a node's (or router's) function is called.

Every graph kind reaches user code through :func:`call_node`: the native
engine for nodes of :class:`~flowcore.Graph`, pipelines and task plans, the
LangGraph planner's loop for nodes of a compat ``StateGraph``. Sync
functions run in a worker thread so they never block the event loop (the
context goes with them, so ``interrupt()`` works there); routers may ask to
run inline because they are meant to be quick.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["call_node"]

_NO_KWARGS: Mapping[str, Any] = {}


async def call_node(
    func: Callable[..., Any],
    is_async: bool,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any] = _NO_KWARGS,
    *,
    inline: bool = False,
) -> Any:
    """Call ``func(*args, **kwargs)`` as a node: awaited if async, else in a worker thread.

    ``inline`` runs a sync function on the event loop instead (for routers,
    which are meant to be quick). A sync function that hands back an
    awaitable has it awaited on the loop.

    Example:
        >>> import asyncio
        >>> asyncio.run(call_node(lambda s: s + 1, False, (1,)))
        2
    """
    if is_async:
        return await func(*args, **kwargs)
    if inline:
        result = func(*args, **kwargs)
    elif kwargs:
        result = await asyncio.to_thread(func, *args, **kwargs)
    else:
        result = await asyncio.to_thread(func, *args)
    if inspect.isawaitable(result):
        return await result
    return result
