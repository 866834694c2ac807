"""Which compiled graph a node runs: its subgraph, declared or found in its function.

A node is a subgraph when its action is a compiled graph. A node whose
function invokes a graph it reaches from outside its own scope has that graph
as its subgraph too, as LangGraph detects it: the values the function closes
over, the globals it names, and each value along an attribute path it loads
from either (``holder.graph.invoke``), its nested functions' code included.
A subscript, a local variable or ``self`` ends a path; a compiled graph whose
checkpointer is ``False`` is never a subgraph.

``get_subgraphs`` lists them by namespace (``parent|child``, without task ids).
"""

from __future__ import annotations

import dis
from collections.abc import Iterator, Mapping
from types import CodeType, FunctionType
from typing import Any

__all__ = [
    "find_subgraph",
    "is_compiled_graph",
    "iter_subgraphs",
    "reachable_values",
    "subgraph_task_state",
]

# Values that cannot lead on to a graph: when a function reaches only these, its
# bytecode is not walked.
_LEAVES = frozenset(
    {type(None), bool, int, float, complex, str, bytes, bytearray, tuple, list, dict, set}
    | {frozenset, range}
)

_LOADS_ATTRIBUTE = frozenset({"LOAD_ATTR", "LOAD_METHOD"})


def is_compiled_graph(value: Any) -> bool:
    """Whether ``value`` is one of flowcore's compiled graphs (and not opted out of saving).

    Example:
        >>> is_compiled_graph(len)
        False
    """
    kind = type(value)
    if not (hasattr(kind, "get_subgraphs") and hasattr(kind, "_state_with")):
        return False
    return not getattr(value, "opted_out", False)


def reachable_values(func: Any) -> list[Any]:
    """The values function ``func`` reaches from outside its scope (see the module doc).

    Every closed-over value counts, whether the code still uses it or not; a
    callable with no code object of its own reaches nothing.

    Example:
        >>> reachable_values(len)
        []
    """
    func = getattr(func, "__func__", func)
    wrapped = getattr(func, "__wrapped__", None)
    if callable(wrapped):
        func = getattr(wrapped, "__func__", wrapped)
    if not isinstance(func, FunctionType):
        return []
    code = func.__code__
    cells: dict[str, Any] = {}
    for name, cell in zip(code.co_freevars, func.__closure__ or (), strict=False):
        try:
            cells[name] = cell.cell_contents
        except ValueError:  # a cell never assigned
            continue
    found = list(cells.values())
    scope = func.__globals__
    named = {name: scope[name] for name in code.co_names if name in scope}
    if all(type(v) in _LEAVES for v in (*cells.values(), *named.values())):
        return found
    codes = [code]
    for current_code in codes:
        codes.extend(c for c in current_code.co_consts if isinstance(c, CodeType))
        found.extend(_attribute_paths(current_code, cells, named))
    return found


def _attribute_paths(
    code: CodeType, cells: Mapping[str, Any], named: Mapping[str, Any]
) -> list[Any]:
    """Each value a load of a cell or global, then attributes, reaches in ``code``."""
    found: list[Any] = []
    current: Any = None
    for instruction in dis.get_instructions(code):
        op = instruction.opname
        if op == "LOAD_GLOBAL":
            current = named.get(instruction.argval)
        elif op == "LOAD_DEREF":
            current = cells.get(instruction.argval)
        elif op in _LOADS_ATTRIBUTE and current is not None:
            try:
                current = getattr(current, instruction.argval, None)
            except Exception:  # a property that fails: the path ends
                current = None
        else:
            current = None
            continue
        if current is not None:
            found.append(current)
    return found


def find_subgraph(action: Any) -> Any | None:
    """The compiled graph node action ``action`` runs, or ``None``.

    Example:
        >>> find_subgraph(lambda state: {}) is None
        True
    """
    if is_compiled_graph(action):
        return action
    if not callable(action) or isinstance(action, type):
        return None
    for value in reachable_values(action):
        # A bound method leads on to its object (``graph.invoke`` to the graph).
        owner = getattr(value, "__self__", value)
        if is_compiled_graph(owner):
            return owner
    return None


def subgraph_task_state(
    action: Any, thread_id: Any, parent_ns: str, name: str, task_id: str
) -> dict[str, Any] | None:
    """The config a task's ``state`` shows when its node runs a saving subgraph, else ``None``.

    It names the subgraph's history (thread and namespace, no checkpoint id): the
    sign, in snapshots and ``debug`` checkpoint records, that the task has one.

    Example:
        >>> subgraph_task_state(lambda state: {}, "t", "", "node", "1") is None
        True
    """
    if find_subgraph(action) is None:
        return None
    ns = f"{parent_ns}|{name}:{task_id}" if parent_ns else f"{name}:{task_id}"
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}


def iter_subgraphs(
    graph: Any, namespace: str | None = None, recurse: bool = False
) -> Iterator[tuple[str, Any]]:
    """``(namespace, subgraph)`` for ``graph``'s subgraphs; only the one at ``namespace`` if given.

    A nested namespace (``a|b``) is found only with ``recurse``; each part
    matches a node's name whole.

    Example:
        >>> list(iter_subgraphs(object()))
        []
    """
    nodes = getattr(graph, "nodes", None)
    if not isinstance(nodes, Mapping):
        return
    for name, spec in nodes.items():
        if namespace is not None and namespace != name and not namespace.startswith(f"{name}|"):
            continue
        found = getattr(spec, "subgraphs", None)
        sub = found[0] if found else None
        if sub is None:
            continue
        if name == namespace:
            yield name, sub
            return
        if namespace is None:
            yield name, sub
        if recurse:
            rest = None if namespace is None else namespace[len(name) + 1 :]
            for inner, deeper in iter_subgraphs(sub, rest, recurse):
                yield f"{name}|{inner}", deeper
