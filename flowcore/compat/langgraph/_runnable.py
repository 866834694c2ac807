"""A compat graph as a LangChain ``Runnable``, for ``graph | other`` chains.

LangGraph's compiled graphs are LangChain runnables, so apps compose them
with ``|``. :func:`as_runnable` wraps a graph in a small ``Runnable``
subclass whose ``invoke``/``ainvoke``/``stream``/``astream`` are the graph's
own (the chain's callbacks reach the graph through the config it passes, so
the graph's run nests under the chain's). The class is built the first
time it is needed: flowcore does not import LangChain until then.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

from flowcore.compat.langgraph._langchain import require_langchain_module

__all__ = ["as_runnable", "runnable_action"]


@functools.cache
def _runnable_class() -> type[Any]:
    base: Any = require_langchain_module("runnables", "Composing a graph with |").Runnable

    class GraphRunnable(base):  # type: ignore[misc]
        """A compat graph seen as a LangChain ``Runnable``."""

        def __init__(self, graph: Any) -> None:
            self.graph = graph
            self.name = getattr(graph, "trace_name", None) or graph.name

        def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
            return self.graph.invoke(input, config, **kwargs)

        async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
            return await self.graph.ainvoke(input, config, **kwargs)

        def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Iterator[Any]:
            yield from self.graph.stream(input, config, **kwargs)

        async def astream(
            self, input: Any, config: Any = None, **kwargs: Any
        ) -> AsyncIterator[Any]:
            async for chunk in self.graph.astream(input, config, **kwargs):
                yield chunk

    return GraphRunnable


def as_runnable(graph: Any) -> Any:
    """``graph`` as a LangChain ``Runnable`` (needs ``langchain_core``).

    Example:
        >>> # chain = as_runnable(app) | RunnablePassthrough()
    """
    return _runnable_class()(graph)


def runnable_action(action: Any) -> Any:
    """A node function that runs runnable ``action``, or None when it is not one.

    A LangChain runnable (a tool, a ``RunnableLambda``, a chain) added as a
    node runs as LangGraph runs it: ``await action.ainvoke(state, config)``.
    So does any object that is not callable but has ``invoke`` and
    ``ainvoke`` (a runnable written without LangChain); compiled graphs are
    subgraphs, not runnables. With LangChain loaded, a dict of runnables is a
    ``RunnableParallel``, as LangChain reads it.

    Example:
        >>> runnable_action(len) is None
        True
    """
    module = sys.modules.get("langchain_core.runnables")
    if module is not None and isinstance(action, dict):
        # LangChain's shorthand for a map of runnables run side by side on one input.
        action = module.RunnableParallel(action)
    if module is not None and isinstance(action, module.Runnable):
        name = str(action.get_name())
    elif _duck_runnable(action):
        name = str(getattr(action, "name", None) or type(action).__name__)
    else:
        return None

    async def run(state: Any, config: Any) -> Any:
        return await action.ainvoke(state, config)

    run.__name__ = name
    run.__wrapped_runnable__ = action  # type: ignore[attr-defined]
    return run


def _duck_runnable(obj: Any) -> bool:
    """Not callable, not a compiled graph, and answers ``invoke`` and ``ainvoke``."""
    return (
        not callable(obj)
        and not hasattr(type(obj), "_arun_subgraph")
        and callable(getattr(obj, "ainvoke", None))
        and callable(getattr(obj, "invoke", None))
    )
