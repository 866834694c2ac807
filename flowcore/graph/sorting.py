"""Prepared ``graphlib`` sorters for a pass plan, built once and copied per pass.

Every pass runs its plan through a fresh :class:`graphlib.TopologicalSorter`.
Building one means one ``add`` per node and edge, and ``prepare`` walks the
whole graph again looking for a cycle that cannot be there: back edges were
cut at compile time. On a wide pass that is a sizeable share of the run, and
a loop repeats it every pass. So the first pass of a plan builds and prepares
a sorter with graphlib as usual (cycle check included), keeps it untouched as
a template, and every pass gets a copy of its prepared state: one small
object per node, no edge walk, no cycle search.

Copying reads graphlib's internal layout (``_node2info`` and its per-node
records). That layout is checked once at import on a tiny graph; if a future
Python changes it, :class:`SorterTemplate` builds every sorter from scratch,
exactly as before.
"""

from __future__ import annotations

import graphlib
from collections.abc import Mapping, Sequence
from graphlib import TopologicalSorter
from typing import Any

__all__ = ["SorterTemplate"]


def _build(preds: Mapping[str, Sequence[str]]) -> TopologicalSorter[str]:
    sorter: TopologicalSorter[str] = TopologicalSorter(preds)
    sorter.prepare()
    return sorter


def _copy(template: TopologicalSorter[str]) -> TopologicalSorter[str]:
    """A sorter in the state ``template`` was in right after ``prepare``."""
    info_type: Any = graphlib._NodeInfo  # type: ignore[attr-defined]
    node2info: dict[str, Any] = {}
    for node, info in template._node2info.items():  # type: ignore[attr-defined]
        twin = info_type(node)
        twin.npredecessors = info.npredecessors
        # Only read by done(), never changed after add(): safe to share.
        twin.successors = info.successors
        node2info[node] = twin
    sorter: TopologicalSorter[str] = TopologicalSorter()
    sorter._node2info = node2info  # type: ignore[attr-defined]
    sorter._ready_nodes = list(template._ready_nodes)  # type: ignore[attr-defined]
    return sorter


def _drain(sorter: TopologicalSorter[str]) -> list[tuple[str, ...]]:
    order = []
    while sorter.is_active():
        ready = sorter.get_ready()
        order.append(ready)
        sorter.done(*ready)
    return order


def _copy_works() -> bool:
    """True if this Python's graphlib has the layout :func:`_copy` relies on."""
    preds = {"a": (), "b": ("a",), "c": ("a",), "d": ("b", "c")}
    try:
        template = _build(preds)
        first, second = _copy(template), _copy(template)
        expected = _drain(_build(preds))
        return _drain(first) == expected and _drain(second) == expected
    except Exception:  # any surprise in the internals: build sorters the plain way
        return False


_COPYABLE = _copy_works()


class SorterTemplate:
    """Hands out fresh, prepared sorters for one acyclic plan.

    Example:
        >>> template = SorterTemplate({"a": (), "b": ("a",)})
        >>> sorter = template.sorter()
        >>> sorter.get_ready()
        ('a',)
        >>> template.sorter().get_ready()  # each sorter starts from the beginning
        ('a',)
    """

    __slots__ = ("_preds", "_template")

    def __init__(self, preds: Mapping[str, Sequence[str]]) -> None:
        self._preds = preds
        self._template: TopologicalSorter[str] | None = None

    def sorter(self) -> TopologicalSorter[str]:
        """A prepared sorter for the plan; raises ``graphlib.CycleError`` on a cycle."""
        if not _COPYABLE:
            return _build(self._preds)
        template = self._template
        if template is None:
            # Built and checked by graphlib itself, then never handed out.
            template = self._template = _build(self._preds)
        return _copy(template)
