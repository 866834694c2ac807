"""The shape of a compiled graph as the scheduler needs it.

Cycles are cut once, at compile time: a depth-first walk from START, taking
edges in the order they were added, marks every edge that closes a cycle as
a *back edge*. What is left is a DAG. A run is a series of *passes* over that
DAG: the first starts at START; every back edge taken during a pass names a
root of the next pass, which covers the nodes reachable from those roots.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from flowcore.graph.constants import END, START
from flowcore.graph.spec import EdgeSpec, RouterSpec

T = TypeVar("T")

__all__ = ["NodeTriggers", "PassPlan", "Topology"]


@dataclass(frozen=True, slots=True)
class NodeTriggers:
    """What can make a node run within a pass.

    A node is *triggered* when it is a root of the pass, when a plain edge's
    source ran, when every source of a join ran, or when a router picked it.
    """

    plain: tuple[str, ...]
    joins: tuple[tuple[str, ...], ...]
    routed_by: tuple[str, ...]
    preds: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PassPlan:
    """The sub-DAG one pass runs: its nodes and each node's predecessors in it."""

    roots: frozenset[str]
    nodes: tuple[str, ...]
    preds: Mapping[str, tuple[str, ...]]
    _ancestors: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)

    def ancestors(self, node: str) -> frozenset[str]:
        """Every node of this plan with a path to ``node`` (cached per node).

        Only asked for at joins, so a long chain never builds a set per link.

        Example:
            >>> plan = PassPlan(frozenset({"a"}), ("a", "b", "c"),
            ...                 {"a": (), "b": ("a",), "c": ("a", "b")})
            >>> sorted(plan.ancestors("c"))
            ['a', 'b']
        """
        found = self._ancestors.get(node)
        if found is not None:
            return found
        preds = self.preds
        seen: set[str] = set()
        stack = list(preds[node])
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(preds[n])
        found = frozenset(seen)
        self._ancestors[node] = found
        return found


class Topology:
    """Edges of a compiled graph split into DAG edges and back edges.

    Example:
        >>> from flowcore.graph.spec import EdgeSpec
        >>> topo = Topology(["a", "b"], [EdgeSpec((START,), "a"), EdgeSpec(("a",), "b"),
        ...                              EdgeSpec(("b",), "a")], [])
        >>> sorted(topo.back_edges)
        [('b', 'a')]
    """

    def __init__(
        self,
        order: Sequence[str],
        edges: Sequence[EdgeSpec],
        routers: Sequence[RouterSpec],
    ) -> None:
        self.order: tuple[str, ...] = tuple(order)
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.order)}
        adjacency: dict[str, list[str]] = {START: []}
        for name in self.order:
            adjacency[name] = []
        for edge in edges:
            for src in edge.sources:
                if edge.target != END and src in adjacency and edge.target in self.index:
                    adjacency[src].append(edge.target)
        for router in routers:
            if router.source in adjacency:
                adjacency[router.source].extend(t for t in router.node_targets if t in self.index)
        self.back_edges: frozenset[tuple[str, str]] = _find_back_edges(adjacency)
        self.reachable: frozenset[str] = _reachable(adjacency, START)

        plain: dict[str, list[str]] = {n: [] for n in self.order}
        joins: dict[str, list[tuple[str, ...]]] = {n: [] for n in self.order}
        routed_by: dict[str, list[str]] = {n: [] for n in self.order}
        back_plain: dict[str, list[str]] = {n: [] for n in self.order}
        self.entry: tuple[str, ...] = ()
        entry: list[str] = []
        for edge in edges:
            target = edge.target
            if target == END or target not in self.index:
                continue
            if edge.sources == (START,):
                entry.append(target)
            elif len(edge.sources) == 1:
                src = edge.sources[0]
                if (src, target) in self.back_edges:
                    back_plain[src].append(target)
                else:
                    plain[target].append(src)
            else:
                joins[target].append(edge.sources)
        for router in routers:
            for target in router.node_targets:
                if target in self.index and (router.source, target) not in self.back_edges:
                    routed_by[target].append(router.source)
        self.entry = tuple(dict.fromkeys(entry))
        self.back_targets: dict[str, tuple[str, ...]] = {
            n: tuple(dict.fromkeys(ts)) for n, ts in back_plain.items() if ts
        }
        self.triggers: dict[str, NodeTriggers] = {}
        self.dag_succ: dict[str, list[str]] = {n: [] for n in self.order}
        index = self.index
        for name in self.order:
            node_plain, node_joins, node_routed = plain[name], joins[name], routed_by[name]
            if node_joins or node_routed or len(node_plain) > 1:
                merged = [*node_plain, *(s for g in node_joins for s in g), *node_routed]
                preds = [p for p in dict.fromkeys(merged) if p in index]
            else:  # the common case of at most one plain predecessor
                preds = [p for p in node_plain if p in index]
            for p in preds:
                self.dag_succ[p].append(name)
            self.triggers[name] = NodeTriggers(
                plain=_unique(node_plain),
                joins=_unique(node_joins),
                routed_by=_unique(node_routed),
                preds=tuple(preds),
            )
        self._plans: dict[frozenset[str], PassPlan] = {}
        self._all_preds: dict[str, set[str]] | None = None

    def is_back_edge(self, source: str, target: str) -> bool:
        """Whether taking ``source -> target`` starts a new pass."""
        return (source, target) in self.back_edges

    def pass_plan(self, roots: Iterable[str]) -> PassPlan:
        """The nodes reachable from ``roots`` over DAG edges, with their in-pass preds.

        Plans are cached per root set: loops revisit the same few.
        """
        key = frozenset(roots)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        seen: set[str] = set()
        stack = list(key)
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            stack.extend(s for s in self.dag_succ[node] if s not in seen)
        nodes = tuple(sorted(seen, key=self.index.__getitem__))
        preds = {n: tuple(p for p in self.triggers[n].preds if p in seen) for n in nodes}
        plan = PassPlan(key, nodes, preds)
        self._plans[key] = plan
        return plan

    def ancestors(self, node: str) -> frozenset[str]:
        """Every node with a path to ``node`` over any edge, back edges included."""
        preds = self._all_preds
        if preds is None:
            preds = {}
            for name in self.order:
                preds[name] = set(self.triggers[name].preds)
            for src, target in self.back_edges:
                if target in preds:
                    preds[target].add(src)
            self._all_preds = preds
        seen: set[str] = set()
        stack = list(preds.get(node, ()))
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            stack.extend(preds.get(n, ()))
        return frozenset(seen)


def _unique(items: list[T]) -> tuple[T, ...]:
    """``items`` without repeats, in order (most lists here hold zero or one item)."""
    return tuple(items) if len(items) < 2 else tuple(dict.fromkeys(items))


def _find_back_edges(adjacency: Mapping[str, Sequence[str]]) -> frozenset[tuple[str, str]]:
    # Iterative DFS: a 10,000-node chain must not hit Python's recursion limit.
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(adjacency, white)
    back: set[tuple[str, str]] = set()
    colour[START] = grey
    stack: list[tuple[str, int]] = [(START, 0)]
    while stack:
        node, i = stack[-1]
        succ = adjacency[node]
        if i < len(succ):
            stack[-1] = (node, i + 1)
            nxt = succ[i]
            c = colour[nxt]
            if c == grey:
                back.add((node, nxt))
            elif c == white:
                colour[nxt] = grey
                stack.append((nxt, 0))
        else:
            colour[node] = black
            stack.pop()
    return frozenset(back)


def _reachable(adjacency: Mapping[str, Sequence[str]], root: str) -> frozenset[str]:
    seen = {root}
    stack = [root]
    while stack:
        for nxt in adjacency[stack.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    seen.discard(root)
    return frozenset(seen)
