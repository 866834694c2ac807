"""Which compiled graph a node's function runs, found by looking at what the function reaches.

A node that calls ``graph.invoke(...)`` from its code runs that graph as a
child run (its checkpoints live under the node's namespace). To show that
run's state in ``get_state(subgraphs=True)``, as LangGraph does, the parent
must know the graph without running the node: :func:`find_subgraph` looks at
the values the function's code can reach (the variables it closed over, the
globals it names, and the attributes it reads from those) and returns the
first compiled graph among them. Like LangGraph's detection this
over-approximates: a graph the code names but never invokes is found too.
A graph compiled with ``checkpointer=False`` keeps no state, so it is skipped.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterator
from typing import Any

__all__ = ["find_subgraph", "reachable_values"]

_MAX_CANDIDATES = 256
"""How many values the search looks at before it gives up (a node's reach is small)."""


def _function_of(func: Any) -> types.FunctionType | None:
    func = getattr(func, "__func__", func)  # a bound method: its function
    wrapped = getattr(func, "__wrapped__", None)
    if callable(wrapped):
        func = getattr(wrapped, "__func__", wrapped)
    return func if isinstance(func, types.FunctionType) else None


def _names(code: types.CodeType) -> Iterator[str]:
    """The global and attribute names ``code`` (and the code nested in it) loads."""
    codes = [code]
    for each in codes:
        yield from each.co_names
        codes.extend(c for c in each.co_consts if isinstance(c, types.CodeType))


def reachable_values(func: Any) -> list[Any]:
    """The values ``func``'s code can reach from outside its own scope.

    Captured variables, the globals it names, and the attributes of those it
    reads by name (from a module or an object's own ``__dict__``, so no
    property runs). A ``functools.partial`` adds its bound arguments.

    Example:
        >>> limit = 3
        >>> def f(x): return x < limit
        >>> 3 in reachable_values(f)
        True
    """
    if isinstance(func, functools.partial):
        return [*func.args, *func.keywords.values(), *reachable_values(func.func)]
    function = _function_of(func)
    if function is None:
        return []
    code = function.__code__
    found: list[Any] = []
    for cell in function.__closure__ or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:  # an empty cell: a recursive def not bound yet
            continue
    names = list(dict.fromkeys(_names(code)))
    scope = function.__globals__
    found.extend(scope[name] for name in names if name in scope)
    owners = list(found)
    for owner in owners:
        attrs = getattr(owner, "__dict__", None)
        if not isinstance(attrs, dict):
            continue
        found.extend(attrs[name] for name in names if name in attrs)
    return found


def _is_graph(value: Any) -> bool:
    return hasattr(value, "_state_with") and not getattr(value, "keeps_no_state", False)


def find_subgraph(action: Any) -> Any | None:
    """The compiled graph ``action`` runs: itself, or one its code reaches (None: none).

    Example:
        >>> find_subgraph(len) is None
        True
    """
    candidates = [action]
    seen: set[int] = set()
    for candidate in candidates:
        if id(candidate) in seen:
            continue
        seen.add(id(candidate))
        if _is_graph(candidate):
            return candidate
        if len(candidates) > _MAX_CANDIDATES or not callable(candidate):
            continue
        for value in reachable_values(candidate):
            # A method reached by name stands for the object it is bound to.
            owner = getattr(value, "__self__", None)
            candidates.append(value if owner is None or isinstance(value, type) else owner)
    return None
