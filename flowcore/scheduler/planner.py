"""The graphlib planner's decisions: pure functions of the pass so far.

The engine (:mod:`flowcore.scheduler.engine`) runs tasks, saves and emits;
what it asks here has no I/O and starts nothing:

* :func:`decide` — does a ready node run, or is it skipped (and why);
* :func:`route_targets` — which nodes (or ``Send`` tasks) a router's value picks;
* :func:`write_levels` — in what order a pass's writes are applied: level by
  level (superstep by superstep), each level in node declaration order and,
  within a node, in the order its ``Send`` tasks were sent, whatever order
  the tasks finished in;
* :class:`PassState` — what has been decided in the pass, saved in a
  checkpoint's cursor so a resumed run decides the same.

The LangGraph planner's counterparts live in :mod:`flowcore.compat.langgraph`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flowcore.errors import RoutingError
from flowcore.graph.commands import Send
from flowcore.graph.constants import END
from flowcore.graph.spec import RouterSpec

if TYPE_CHECKING:
    from flowcore.graph.topology import NodeTriggers, PassPlan

__all__ = ["PassState", "decide", "route_targets", "write_levels"]

Write = tuple[int, int, str, Mapping[str, Any]]
"""One task's write: (level, declaration index of its node, task key, update)."""


class PassState:
    """What the planner decided in one pass so far: who ran, who was skipped, who was picked.

    Example:
        >>> ps = PassState()
        >>> ps.executed.add("a")
        >>> PassState.from_cursor(ps.to_cursor()).executed
        {'a'}
    """

    __slots__ = (
        "executed",
        "next_roots",
        "next_sends",
        "poisoned",
        "res",
        "selected",
        "send_roots",
        "sends",
        "writes",
    )

    def __init__(self) -> None:
        self.executed: set[str] = set()
        self.poisoned: dict[str, str] = {}
        self.selected: dict[str, set[str]] = {}
        self.res: dict[str, int] = {}
        self.next_roots: set[str] = set()
        self.writes: list[tuple[int, int, str, Mapping[str, Any]]] = []
        # Send args waiting for their node in this pass, in the order sent;
        # roots of this pass that only Sends started (they run no task of their own);
        # Send args for the next pass (their node is behind a back edge).
        self.sends: dict[str, list[Any]] = {}
        self.send_roots: set[str] = set()
        self.next_sends: dict[str, list[Any]] = {}

    def to_cursor(self) -> dict[str, Any]:
        """The decisions of this pass so far, as plain data for a checkpoint.

        The Send fields are written only when there are Sends, so a graph
        without them saves exactly what it saved before Send existed.
        """
        cursor: dict[str, Any] = {
            "res": dict(self.res),
            "executed": sorted(self.executed),
            "poisoned": dict(self.poisoned),
            "selected": {k: sorted(v) for k, v in self.selected.items()},
            "next_roots": sorted(self.next_roots),
        }
        if self.sends:
            cursor["sends"] = {k: list(v) for k, v in self.sends.items()}
        if self.send_roots:
            cursor["send_roots"] = sorted(self.send_roots)
        if self.next_sends:
            cursor["next_sends"] = {k: list(v) for k, v in self.next_sends.items()}
        return cursor

    @classmethod
    def from_cursor(cls, cursor: Mapping[str, Any]) -> PassState:
        """Rebuild the decisions saved by :meth:`to_cursor`."""
        ps = cls()
        ps.res = {str(k): int(v) for k, v in cursor["res"].items()}
        ps.executed = set(cursor["executed"])
        ps.poisoned = dict(cursor["poisoned"])
        ps.selected = {k: set(v) for k, v in cursor["selected"].items()}
        ps.next_roots = set(cursor["next_roots"])
        ps.sends = {k: list(v) for k, v in cursor.get("sends", {}).items()}
        ps.send_roots = set(cursor.get("send_roots", ()))
        ps.next_sends = {k: list(v) for k, v in cursor.get("next_sends", {}).items()}
        return ps


def decide(node: str, plan: PassPlan, ps: PassState, triggers: NodeTriggers) -> str | None:
    """None if ``node`` runs in this pass; else why it is skipped.

    A node below a failed one is ``upstream_failed`` (and remembers the node
    that failed); a root of the pass runs; any other node runs when one of
    its plain predecessors ran, one of its join groups ran whole, or a
    router picked it; otherwise it is ``not_triggered``.

    Example:
        >>> # decide("b", plan, ps, topology.triggers["b"]) -> None or "not_triggered"
    """
    for p in plan.preds[node]:
        root = ps.poisoned.get(p)
        if root is not None:
            # Name the node that failed, not the nearest skipped one.
            ps.poisoned[node] = root
            return "upstream_failed"
    if node in plan.roots and node not in ps.send_roots:
        return None
    executed = ps.executed
    for p in triggers.plain:
        if p in executed:
            return None
    for group in triggers.joins:
        if all(s in executed for s in group):
            return None
    for src in triggers.routed_by:
        sel = ps.selected.get(src)
        if sel is not None and node in sel:
            return None
    return "not_triggered"


def write_levels(
    writes: Sequence[Write],
) -> list[tuple[int, list[tuple[str, Mapping[str, Any]]]]]:
    """``writes`` grouped by level, in application order: ``[(level, [(task, update)])]``.

    Example:
        >>> write_levels([(2, 0, "a", {"x": 1}), (1, 1, "b", {"x": 2}), (1, 0, "c", {"x": 3})])
        [(1, [('c', {'x': 3}), ('b', {'x': 2})]), (2, [('a', {'x': 1})])]
    """
    levels: list[tuple[int, list[tuple[str, Mapping[str, Any]]]]] = []
    # sorted() is stable: a node's Send tasks keep the order they were recorded in.
    for level, _, key, update in sorted(writes, key=lambda w: (w[0], w[1])):
        if not levels or levels[-1][0] != level:
            levels.append((level, []))
        levels[-1][1].append((key, update))
    return levels


def route_targets(router: RouterSpec, raw: Any) -> list[str | Send]:
    """The targets a router's return value ``raw`` picks, checked against its declaration.

    A set is ordered by repr so the pick never depends on hashing; a Send
    must name a declared target; with a ``path_map`` the value is a key of it.
    Raises :class:`RoutingError` naming the router's node and what to fix.

    Example:
        >>> # route_targets(router, ["a", Send("b", 1)]) -> ["a", Send("b", 1)]
    """
    items = list(raw) if isinstance(raw, list | tuple | set | frozenset) else [raw]
    if isinstance(raw, set | frozenset):
        items.sort(key=repr)
    out: list[str | Send] = []
    for item in items:
        if isinstance(item, Send):
            # A Send names its node directly, whatever the path_map's keys are.
            if item.node not in router.node_targets:
                raise RoutingError(
                    f"router of node {router.source!r} returned Send({item.node!r}, ...), "
                    f"whose node is not one of its declared targets "
                    f"({', '.join(map(repr, router.targets))}); declare it in path_map or in "
                    "the router's Literal[...] return type",
                    node=router.source,
                )
            out.append(item)
            continue
        if router.path_map is not None:
            try:
                target = router.path_map[item]
            except (KeyError, TypeError):
                raise RoutingError(
                    f"router of node {router.source!r} returned {item!r}, which is not a key "
                    f"of its path_map (keys: {', '.join(map(repr, router.path_map))}); "
                    "return one of those keys or add it to path_map",
                    node=router.source,
                ) from None
        else:
            target = item
        if target == END:
            out.append(END)
            continue
        if target not in router.targets:
            raise RoutingError(
                f"router of node {router.source!r} returned {item!r}, which is not one of its "
                f"declared targets ({', '.join(map(repr, router.targets))}); declare it in "
                "path_map or in the router's Literal[...] return type",
                node=router.source,
            )
        out.append(target)
    return out
