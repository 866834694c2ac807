"""Whether a node's action runs natively async, so that a timeout can stop it.

A timeout (``add_node(..., timeout=)``, ``NodeBuilder.set_timeout``) cancels
the attempt that runs too long. Only async code can be cancelled in-process,
so, as in LangGraph, a node whose work is sync is refused where it is
declared. What counts as async:

- a coroutine function, or an object whose ``__call__`` is one;
- a compiled graph (a subgraph runs on the event loop);
- a LangChain ``RunnableLambda`` made from a coroutine function;
- a LangChain chain (``a | b``) or map (``{"a": a, "b": b}``) whose every
  step is async, looking through ``with_config`` / ``bind`` wrappers;
- any other LangChain runnable that defines its own ``ainvoke``;
- a ``NodeBuilder`` sequence of ``do()`` steps that are all async.

LangChain is never imported here: its classes are looked up only when its
modules are already loaded (the caller handed in a LangChain object).

Example:
    >>> async def fetch(x): return x
    >>> has_native_async(fetch), has_native_async(len)
    (True, False)
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

__all__ = ["has_native_async"]


def has_native_async(action: Any) -> bool:
    """Whether ``action`` (a node's function, runnable or step sequence) is async throughout."""
    wrapped = getattr(action, "__wrapped_runnable__", None)
    if wrapped is not None:
        return _runnable_async(wrapped)
    if hasattr(type(action), "_arun_subgraph"):
        return True
    base = _langchain_base()
    if base is not None and isinstance(action, base.Runnable):
        return _runnable_async(action)
    steps = getattr(action, "steps", None)
    if isinstance(steps, list) and not inspect.isfunction(action):
        # A NodeBuilder's do() steps, run in turn: each must be async.
        return all(has_native_async(step) for step in steps)
    return inspect.iscoroutinefunction(action) or inspect.iscoroutinefunction(
        getattr(action, "__call__", None)  # noqa: B004 - callable objects
    )


def _langchain_base() -> Any:
    """``langchain_core.runnables.base`` when LangChain is loaded, else None."""
    return sys.modules.get("langchain_core.runnables.base")


def _runnable_async(runnable: Any) -> bool:
    base = _langchain_base()
    if base is None or not isinstance(runnable, base.Runnable):
        return has_native_async(runnable)
    while isinstance(runnable, base.RunnableBindingBase):
        runnable = runnable.bound
    if isinstance(runnable, base.RunnableSequence):
        return all(_runnable_async(step) for step in runnable.steps)
    if isinstance(runnable, base.RunnableParallel):
        return all(_runnable_async(step) for step in runnable.steps__.values())
    if isinstance(runnable, base.RunnableLambda):
        return bool(getattr(runnable, "afunc", None))
    if hasattr(type(runnable), "_arun_subgraph"):
        return True
    # A runnable that writes its own ainvoke owns the async contract.
    own = getattr(type(runnable), "ainvoke", None)
    return own is not None and own is not getattr(base.Runnable, "ainvoke", None)
