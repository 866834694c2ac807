"""The shape of a compiled graph as the scheduler needs it.

Cycles are cut once, at compile time: a depth-first walk from START, taking
edges in the order they were added, marks every edge that closes a cycle as
a *back edge*. What is left is a DAG. A run is a series of *passes* over that
DAG: the first starts at START; every back edge taken during a pass names a
root of the next pass, which covers the nodes reachable from those roots.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from graphlib import TopologicalSorter
from typing import NamedTuple, TypeVar

from flowcore.graph.constants import END, START
from flowcore.graph.sorting import SorterTemplate
from flowcore.graph.spec import EdgeSpec, RouterSpec

T = TypeVar("T")

__all__ = ["NodeTriggers", "PassPlan", "Topology"]


class NodeTriggers(NamedTuple):
    """What can make a node run within a pass.

    A node is *triggered* when it is a root of the pass, when a plain edge's
    source ran, when every source of a join ran, or when a router picked it.
    A named tuple rather than a frozen dataclass: as immutable, and several
    times cheaper to build (one per node of every compiled graph).
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
    _sorters: SorterTemplate | None = field(default=None, compare=False, repr=False)

    def sorter(self) -> TopologicalSorter[str]:
        """A fresh, prepared ``graphlib`` sorter over this plan (see ``flowcore.graph.sorting``).

        Example:
            >>> plan = PassPlan(frozenset({"a"}), ("a", "b"), {"a": (), "b": ("a",)})
            >>> plan.sorter().get_ready()
            ('a',)
        """
        sorters = self._sorters
        if sorters is None:
            sorters = SorterTemplate(self.preds)
            object.__setattr__(self, "_sorters", sorters)
        return sorters.sorter()

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
        destinations: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        # Declared goto destinations are edges a node picks at run time, like a router's.
        routes: list[tuple[str, Sequence[str]]] = [(r.source, r.node_targets) for r in routers]
        if destinations:
            routes.extend((n, [t for t in ts if t != END]) for n, ts in destinations.items())
        self.order: tuple[str, ...] = tuple(order)
        index = self.index = {name: i for i, name in enumerate(self.order)}
        adjacency: dict[str, list[str]] = {START: []}
        for name in self.order:
            adjacency[name] = []
        # Edges into real nodes, kept for the classification below (one pass each).
        inner: list[EdgeSpec] = []
        for edge in edges:
            target = edge.target
            if target == END or target not in index:
                continue
            inner.append(edge)
            for src in edge.sources:
                succ = adjacency.get(src)
                if succ is not None:
                    succ.append(target)
        for source, targets in routes:
            if source in adjacency:
                adjacency[source].extend(t for t in targets if t in index)
        back_edges, reached = _walk(adjacency)
        self.back_edges: frozenset[tuple[str, str]] = back_edges
        self.reachable: frozenset[str] = reached

        plain: dict[str, list[str]] = {}
        joins: dict[str, list[tuple[str, ...]]] = {}
        routed_by: dict[str, list[str]] = {}
        back_plain: dict[str, list[str]] = {}
        entry: list[str] = []
        for edge in inner:
            target = edge.target
            sources = edge.sources
            if len(sources) != 1:
                joins.setdefault(target, []).append(sources)
                continue
            src = sources[0]
            if src == START:
                entry.append(target)
            elif (src, target) in back_edges:
                back_plain.setdefault(src, []).append(target)
            else:
                plain.setdefault(target, []).append(src)
        for source, targets in routes:
            for target in targets:
                if target in index and (source, target) not in back_edges:
                    routed_by.setdefault(target, []).append(source)
        self.entry: tuple[str, ...] = tuple(dict.fromkeys(entry))
        self.back_targets: dict[str, tuple[str, ...]] = {
            n: tuple(dict.fromkeys(ts)) for n, ts in back_plain.items()
        }
        self.triggers: dict[str, NodeTriggers] = {}
        dag_succ: dict[str, list[str]] = {n: [] for n in self.order}
        self.dag_succ = dag_succ
        no_joins: tuple[tuple[str, ...], ...] = ()
        for name in self.order:
            node_plain = plain.get(name, [])
            node_joins = joins.get(name)
            node_routed = routed_by.get(name)
            if node_joins or node_routed or len(node_plain) > 1:
                merged = [
                    *node_plain,
                    *(s for g in node_joins or () for s in g),
                    *(node_routed or ()),
                ]
                preds = tuple(p for p in dict.fromkeys(merged) if p in index)
                triggers = NodeTriggers(
                    _unique(node_plain),
                    _unique(node_joins or []),
                    _unique(node_routed or []),
                    preds,
                )
            else:  # the common case: at most one plain predecessor, no join, no router
                # No generator per node: this loop runs once for every node compiled.
                preds = (node_plain[0],) if node_plain and node_plain[0] in index else ()
                triggers = NodeTriggers(tuple(node_plain), no_joins, (), preds)
            for p in preds:
                dag_succ[p].append(name)
            self.triggers[name] = triggers
        self._plans: dict[frozenset[str], PassPlan] = {}
        self._all_preds: dict[str, set[str]] | None = None

    def picks_in_pass(self, source: str, target: str) -> bool:
        """Whether ``source`` picking ``target`` at run time triggers it in the same pass.

        True for a plain edge or a declared route (router target or goto
        destination) that is not a back edge; anything else the pick starts
        in the next pass.
        """
        trig = self.triggers.get(target)
        return trig is not None and (source in trig.routed_by or source in trig.plain)

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


def _walk(
    adjacency: Mapping[str, Sequence[str]],
) -> tuple[frozenset[tuple[str, str]], frozenset[str]]:
    """One depth-first walk from START: the back edges it meets and the nodes it reaches."""
    # Iterative: a 10,000-node chain must not hit Python's recursion limit.
    grey, black = 1, 2
    colour: dict[str, int] = {START: grey}
    back: set[tuple[str, str]] = set()
    stack: list[tuple[str, Iterator[str]]] = [(START, iter(adjacency[START]))]
    while stack:
        node, succ = stack[-1]
        for nxt in succ:
            c = colour.get(nxt)
            if c is None:
                colour[nxt] = grey
                stack.append((nxt, iter(adjacency[nxt])))
                break
            if c == grey:
                back.add((node, nxt))
        else:
            colour[node] = black
            stack.pop()
    del colour[START]
    return frozenset(back), frozenset(colour)
