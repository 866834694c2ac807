"""A sequential model of flowcore's documented scheduling semantics, for property tests.

This module never imports the engine: it re-derives, in one thread and with
no event loop, what a run of an acyclic graph must produce, straight from the
rules the design states:

* a pass covers the nodes reachable from its roots (START edges plus what a
  START router picked); a node is *ready* once every in-pass predecessor is
  resolved (ran or skipped), and then runs only if it is *triggered*: it is a
  root, a plain edge's source ran, every source of one of its joins ran, or a
  router whose source ran picked it; otherwise it is skipped at once;
* ``supersteps``: ready, triggered nodes form a batch; every node of the batch
  sees the state as of the batch start and the batch's writes are applied in
  node declaration order;
* ``dataflow``: a node sees the start state plus the writes of its executed
  ancestors folded in (level, declaration index) order, where
  ``level(v) = 1 + max(res(p))`` over its in-pass predecessors,
  ``res(executed p) = level(p)`` and ``res(skipped p) = max(res of its preds)``
  (0 when it has none); the final state is every write folded in that order.

The graphs are described as plain data (:class:`DagSpec`) so a failing
hypothesis example prints as something one can paste into a repro.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from graphlib import TopologicalSorter
from typing import Any

from flowcore import END, START

__all__ = [
    "DagSpec",
    "ReferenceRun",
    "RouterDef",
    "apply_writes",
    "initial_state",
    "node_update",
    "reference_run",
]

Update = dict[str, Any]


@dataclass(frozen=True)
class RouterDef:
    """A conditional edge: after ``source`` runs, pick path_map keys from the state.

    ``choices`` lists what the router may return (one key, or several keys to
    fan out); which one is a deterministic function of the ``log`` it sees.
    """

    source: str
    path_map: tuple[tuple[str, str], ...]
    choices: tuple[tuple[str, ...], ...]
    salt: int = 0

    def pick(self, log: Sequence[str], reads_state: bool = True) -> str | list[str]:
        """What the router returns when it sees ``log``."""
        digest = zlib.crc32("|".join(log).encode()) if reads_state else 0
        choice = self.choices[(digest + self.salt) % len(self.choices)]
        return choice[0] if len(choice) == 1 else list(choice)

    def targets(self, picked: str | list[str]) -> list[str]:
        """The nodes a returned value selects (END dropped)."""
        mapping = dict(self.path_map)
        keys = [picked] if isinstance(picked, str) else picked
        return [mapping[k] for k in keys if mapping[k] != END]

    @property
    def node_targets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t for _, t in self.path_map if t != END))


@dataclass(frozen=True)
class DagSpec:
    """An acyclic graph as data.

    ``order`` is the node declaration order; ``edges`` are ``(sources,
    target)`` with START as a possible single source and END as a possible
    target; a tuple of several sources is a join.
    """

    order: tuple[str, ...]
    edges: tuple[tuple[tuple[str, ...], str], ...]
    routers: tuple[RouterDef, ...] = ()
    delays_ms: Mapping[str, int] = field(default_factory=dict)
    sync_nodes: frozenset[str] = frozenset()
    silent_nodes: frozenset[str] = frozenset()
    reads_state: bool = True


def initial_state() -> dict[str, Any]:
    """The state every run starts from (the reducer keys' defaults)."""
    return {"log": [], "seen": {}}


def node_update(spec: DagSpec, name: str, log: Sequence[str]) -> Update | None:
    """What node ``name`` returns when it sees ``log``.

    The written values depend on what the node saw, so any difference in the
    state a node is shown (order, missing or extra writes) shows up in the
    final state.
    """
    if name in spec.silent_nodes:
        return None
    if not spec.reads_state:
        return {"log": [name], "seen": {name: ()}}
    return {"log": [f"{name}:{len(log)}"], "seen": {name: tuple(log)}}


def apply_writes(state: Mapping[str, Any], updates: Sequence[Update | None]) -> dict[str, Any]:
    """Fold updates in the given order: ``log`` appends, ``seen`` merges."""
    log = list(state["log"])
    seen = dict(state["seen"])
    for update in updates:
        if not update:
            continue
        log.extend(update.get("log", ()))
        seen.update(update.get("seen", {}))
    return {"log": log, "seen": seen}


@dataclass
class ReferenceRun:
    """What a correct run of a :class:`DagSpec` produces."""

    state: dict[str, Any]
    executed: dict[str, int]  # node -> superstep (supersteps) or level (dataflow)
    skipped: dict[str, int]
    outputs: dict[str, Update | None]
    supersteps: int
    preds: dict[str, tuple[str, ...]]


class _Shape:
    """Triggers and in-pass predecessors, derived from the spec's edges and routers."""

    def __init__(self, spec: DagSpec) -> None:
        self.spec = spec
        self.index = {name: i for i, name in enumerate(spec.order)}
        self.plain: dict[str, list[str]] = {n: [] for n in spec.order}
        self.joins: dict[str, list[tuple[str, ...]]] = {n: [] for n in spec.order}
        self.routed_by: dict[str, list[str]] = {n: [] for n in spec.order}
        self.routers: dict[str, list[RouterDef]] = {}
        self.entry: list[str] = []
        for sources, target in spec.edges:
            if target == END:
                continue
            if sources == (START,):
                self.entry.append(target)
            elif len(sources) == 1:
                self.plain[target].append(sources[0])
            else:
                self.joins[target].append(sources)
        for router in spec.routers:
            self.routers.setdefault(router.source, []).append(router)
            if router.source != START:
                for t in router.node_targets:
                    self.routed_by[t].append(router.source)

    def all_preds(self, node: str) -> list[str]:
        found = [*self.plain[node], *(s for g in self.joins[node] for s in g)]
        found += self.routed_by[node]
        return list(dict.fromkeys(found))

    def roots(self) -> set[str]:
        roots = set(self.entry)
        for router in self.routers.get(START, ()):
            roots.update(router.targets(router.pick(initial_state()["log"], self.spec.reads_state)))
        return roots

    def plan(self, roots: set[str]) -> dict[str, tuple[str, ...]]:
        """In-pass predecessors of every node reachable from ``roots``."""
        succ: dict[str, set[str]] = {n: set() for n in self.spec.order}
        for node in self.spec.order:
            for p in self.all_preds(node):
                succ[p].add(node)
        seen: set[str] = set()
        stack = list(roots)
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(succ[node])
        return {n: tuple(p for p in self.all_preds(n) if p in seen) for n in seen}

    def triggered(
        self,
        node: str,
        roots: set[str],
        executed: Mapping[str, int],
        selected: Mapping[str, set[str]],
    ) -> bool:
        if node in roots:
            return True
        if any(p in executed for p in self.plain[node]):
            return True
        if any(all(s in executed for s in group) for group in self.joins[node]):
            return True
        return any(node in selected.get(src, ()) for src in self.routed_by[node])

    def route(self, node: str, seen_after: Mapping[str, Any]) -> set[str]:
        picked: set[str] = set()
        for router in self.routers.get(node, ()):
            picked.update(router.targets(router.pick(seen_after["log"], self.spec.reads_state)))
        return picked


def reference_run(spec: DagSpec, mode: str) -> ReferenceRun:
    """Execute ``spec`` sequentially under ``mode`` ("supersteps" or "dataflow")."""
    shape = _Shape(spec)
    roots = shape.roots()
    preds = shape.plan(roots)
    if mode == "supersteps":
        return _supersteps(spec, shape, roots, preds)
    if mode == "dataflow":
        return _dataflow(spec, shape, roots, preds)
    raise ValueError(mode)


def _supersteps(
    spec: DagSpec, shape: _Shape, roots: set[str], preds: dict[str, tuple[str, ...]]
) -> ReferenceRun:
    state = initial_state()
    resolved: dict[str, int] = {}
    executed: dict[str, int] = {}
    skipped: dict[str, int] = {}
    selected: dict[str, set[str]] = {}
    outputs: dict[str, Update | None] = {}
    remaining = set(preds)
    step = 0
    while remaining:
        batch: list[str] = []
        changed = True
        while changed:  # skipping is instant: it may make more nodes ready now
            changed = False
            for node in sorted(remaining - set(batch), key=shape.index.__getitem__):
                if not all(p in resolved for p in preds[node]):
                    continue
                if shape.triggered(node, roots, executed, selected):
                    batch.append(node)
                else:
                    skipped[node] = resolved[node] = max(
                        (resolved[p] for p in preds[node]), default=0
                    )
                    remaining.discard(node)
                    changed = True
        if not batch:
            break
        step += 1
        batch.sort(key=shape.index.__getitem__)
        updates = []
        for node in batch:
            update = node_update(spec, node, state["log"])
            outputs[node] = update
            updates.append(update)
            if node in shape.routers:
                selected[node] = shape.route(node, apply_writes(state, [update]))
        state = apply_writes(state, updates)
        for node in batch:
            executed[node] = resolved[node] = step
            remaining.discard(node)
    assert not remaining, f"reference stalled with {sorted(remaining)} unresolved"
    return ReferenceRun(state, executed, skipped, outputs, step, preds)


def _dataflow(
    spec: DagSpec, shape: _Shape, roots: set[str], preds: dict[str, tuple[str, ...]]
) -> ReferenceRun:
    start = initial_state()
    res: dict[str, int] = {}
    executed: dict[str, int] = {}
    skipped: dict[str, int] = {}
    selected: dict[str, set[str]] = {}
    outputs: dict[str, Update | None] = {}
    ancestors: dict[str, set[str]] = {}
    writes: dict[str, tuple[int, int, Update | None]] = {}

    def fold(nodes: set[str]) -> dict[str, Any]:
        ordered = sorted((writes[n] for n in nodes), key=lambda w: (w[0], w[1]))
        return apply_writes(start, [update for _, _, update in ordered])

    for node in TopologicalSorter(preds).static_order():
        anc: set[str] = set()
        for p in preds[node]:
            anc |= ancestors[p]
            if p in executed:
                anc.add(p)
        ancestors[node] = anc
        if not shape.triggered(node, roots, executed, selected):
            skipped[node] = res[node] = max((res[p] for p in preds[node]), default=0)
            continue
        level = 1 + max((res[p] for p in preds[node]), default=0)
        view = fold(anc)
        update = node_update(spec, node, view["log"])
        outputs[node] = update
        writes[node] = (level, shape.index[node], update)
        if node in shape.routers:
            selected[node] = shape.route(node, apply_writes(view, [update]))
        executed[node] = res[node] = level
    return ReferenceRun(
        fold(set(executed)), executed, skipped, outputs, max(executed.values(), default=0), preds
    )
