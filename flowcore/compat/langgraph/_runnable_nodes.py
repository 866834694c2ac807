"""LangChain runnables (a tool, a ``RunnableLambda``, a chain) used as graph nodes.

LangGraph takes any runnable as a node and runs it with ``ainvoke(state,
config)``. Such objects are not callables, so the graph builder wraps them
here in a small callable that the run loop calls like any async node. Nothing
of LangChain is imported: a runnable is recognised by its ``invoke`` and
``ainvoke`` methods.

Example:
    >>> class Double:
    ...     def invoke(self, value, config=None): return value * 2
    ...     async def ainvoke(self, value, config=None): return value * 2
    >>> import asyncio
    >>> asyncio.run(as_node_action(Double())(21, {}))
    42
"""

from __future__ import annotations

from typing import Any

__all__ = ["RunnableNode", "as_node_action", "is_runnable"]


def is_runnable(obj: Any) -> bool:
    """Whether ``obj`` is a LangChain-style runnable that is not itself callable.

    Compiled graphs (which run as subgraphs) and plain callables are not.
    """
    return (
        not callable(obj)
        and not hasattr(type(obj), "_arun_subgraph")
        and callable(getattr(obj, "ainvoke", None))
        and callable(getattr(obj, "invoke", None))
    )


class RunnableNode:
    """A node action that runs a runnable with the node's input and config.

    ``name`` is the runnable's own name, so ``add_node(runnable)`` is named
    as LangGraph names it.
    """

    def __init__(self, runnable: Any) -> None:
        self.runnable = runnable
        self.name = getattr(runnable, "name", None)

    async def __call__(self, state: Any, config: Any) -> Any:
        return await self.runnable.ainvoke(state, config)

    def __repr__(self) -> str:
        return f"RunnableNode({self.runnable!r})"


def as_node_action(action: Any) -> Any:
    """``action`` ready to run as a node: a runnable wrapped, anything else unchanged."""
    return RunnableNode(action) if is_runnable(action) else action
