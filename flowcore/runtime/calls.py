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
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

__all__ = ["call_node"]

_NO_KWARGS: Mapping[str, Any] = {}


def call_node(
    func: Callable[..., Any],
    is_async: bool,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any] = _NO_KWARGS,
    *,
    inline: bool = False,
) -> Coroutine[Any, Any, Any]:
    """Call ``func(*args, **kwargs)`` as a node: awaited if async, else in a worker thread.

    Returns the coroutine to await. ``inline`` runs a sync function on the
    event loop instead (for routers, which are meant to be quick). A sync
    function that hands back an awaitable has it awaited on the loop.

    Example:
        >>> import asyncio
        >>> asyncio.run(call_node(lambda s: s + 1, False, (1,)))
        2
    """
    if is_async:
        # The node's own coroutine: awaiting it costs no frame of ours per node run.
        coroutine: Coroutine[Any, Any, Any] = func(*args, **kwargs)
        return coroutine
    return _call_sync(func, args, kwargs, inline)


async def _call_sync(
    func: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any], inline: bool
) -> Any:
    if inline:
        result = func(*args, **kwargs)
    elif kwargs:
        result = await asyncio.to_thread(func, *args, **kwargs)
    else:
        result = await asyncio.to_thread(func, *args)
    # Most results are plain data, which is never awaitable: no ABC check for them.
    if type(result) not in _SETTLED and inspect.isawaitable(result):
        return await result
    return result


# Exact builtin types a sync function's result may have that cannot be awaitable.
_SETTLED = frozenset({str, list, tuple, dict, int, float, bool, type(None)})
