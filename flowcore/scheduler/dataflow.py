"""Dataflow mode: one pass of the DAG, each node started as soon as its own predecessors are done.

:class:`~flowcore.scheduler.engine.RunEngine` runs a ``mode="dataflow"``
pass through :class:`DataflowPass` (a ``mode="supersteps"`` pass through
:class:`~flowcore.scheduler.supersteps.SuperstepPass`). The pass gets what it
needs explicitly: the graph's topology and state schema, its node specs, the
limits, and callbacks into the run for what the run owns (running one node,
recording a finished or skipped node, the errors list, the run's step
counter). It starts no work of its own outside its
:class:`~flowcore.runtime.TaskPool` and saves nothing: dataflow mode runs
without a thread.

What a node sees does not depend on timing: the pass-start state plus the
writes of its own executed ancestors, folded level by level, each level in
node declaration order (:func:`~flowcore.scheduler.planner.write_levels`).
The pass ends in the state supersteps mode would reach: every write of the
pass folded in that same order.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar

from flowcore.errors import GraphRecursionError, InvalidUpdateError
from flowcore.runtime import TaskPool
from flowcore.scheduler.outcome import ends_run
from flowcore.scheduler.planner import PassState, Write, decide, write_levels
from flowcore.state.schema import replace_conflict

if TYPE_CHECKING:
    from flowcore.graph.spec import NodeSpec
    from flowcore.graph.topology import PassPlan, Topology
    from flowcore.state.schema import StateSchema

__all__ = ["DataflowEnd", "DataflowPass", "Finished"]


class Finished(Protocol):
    """What a dataflow pass reads of a finished node's outcome (the run's own type).

    Example:
        >>> from types import SimpleNamespace
        >>> out: Finished = SimpleNamespace(node="a", level=1, update={"x": 1})
    """

    @property
    def node(self) -> str:
        """The node's name."""
        ...

    @property
    def level(self) -> int:
        """The level (superstep) it ran at."""
        ...

    @property
    def update(self) -> Mapping[str, Any] | None:
        """Its write, or None if it wrote nothing (or failed)."""
        ...


OutcomeT = TypeVar("OutcomeT", bound=Finished)


class DataflowEnd(NamedTuple):
    """How a dataflow pass ended.

    Example:
        >>> DataflowEnd({"x": 1}, {"b"}, None).stopped_at is None
        True
    """

    values: dict[str, Any]
    """The state after the pass: its writes below ``stopped_at``, folded in order."""
    next_roots: set[str]
    """The nodes that start the next pass (behind back edges)."""
    stopped_at: int | None
    """The level a failure stopped the run at (its errors are recorded), or None."""


class _FoldFailed(Exception):
    """Internal: the writes of ``level`` could not be folded into ``values``."""

    def __init__(self, level: int, error: InvalidUpdateError, values: dict[str, Any]) -> None:
        super().__init__(level)
        self.level = level
        self.error = error
        self.values = values


@dataclass(slots=True)
class DataflowPass(Generic[OutcomeT]):
    """Runs one pass in dataflow mode for a run, through the run's callbacks.

    Example:
        >>> # Built by RunEngine for each pass (a sketch):
        >>> # end = await DataflowPass(topology=graph.topology, schema=graph.schema,
        >>> #     specs=graph.nodes, pool_limit=None, recursion_limit=25,
        >>> #     fail_fast=True, errors=errors, run_node=run_node, absorb=absorb,
        >>> #     skip=skip, recursion_error=make_error, reach=reach,
        >>> # ).run(plan, pass_index=1, start_values=values, base=0)
    """

    topology: Topology
    schema: StateSchema
    specs: Mapping[str, NodeSpec]
    pool_limit: int | None
    """At most this many nodes run at once (None: no limit)."""
    recursion_limit: int
    """No node starts above this level; one that would stops the run."""
    fail_fast: bool
    """A failed node stops the run at its level (else only its descendants are skipped)."""
    errors: list[BaseException]
    """The run's errors: a failure the pass finds itself is appended once."""
    run_node: Callable[[NodeSpec, Mapping[str, Any], int], Awaitable[OutcomeT]]
    """Run one node on a state at a level; never raises for the node's own failure."""
    absorb: Callable[[OutcomeT, int, PassState], bool]
    """Record a finished node (outcome, pass index, pass state); False if it failed."""
    skip: Callable[[str, str, PassPlan, PassState, int, int], None]
    """Record a skipped node (node, reason, plan, pass state, base level, pass index)."""
    recursion_error: Callable[[], GraphRecursionError]
    """The error for a node that would start above ``recursion_limit``."""
    reach: Callable[[int], None]
    """Told each level a node starts at, before it starts (the run's step counter)."""

    async def run(
        self, plan: PassPlan, pass_index: int, start_values: Mapping[str, Any], base: int
    ) -> DataflowEnd:
        """Start each node as soon as its own predecessors are done.

        To end in the state supersteps mode would reach, a failure that stops
        the run at level L sets a *ceiling*: nodes at levels >= L are cancelled
        or never started and their writes dropped, while nodes below L still
        run to the end. Supersteps mode likewise commits every step before L
        and none from L on.
        """
        ps = PassState()
        errors = self.errors
        index = self.topology.index
        triggers = self.topology.triggers
        specs = self.specs
        run_node = self.run_node
        sorter = plan.sorter()
        done_q: asyncio.Queue[OutcomeT] = asyncio.Queue()
        views: dict[str, Mapping[str, Any]] = {}
        updates: dict[str, Mapping[str, Any] | None] = {}
        running: dict[str, tuple[asyncio.Task[None], int]] = {}
        replace_owner: dict[tuple[int, str], str] = {}
        ceiling = math.inf

        def stop_at(level: int, error: BaseException | None) -> None:
            nonlocal ceiling
            if error is not None and error not in errors:
                errors.append(error)
            if level >= ceiling:
                return
            ceiling = level
            for name, (task, lvl) in list(running.items()):
                # A task that already finished has its outcome queued: keep it.
                if lvl >= level and task.cancel():
                    del running[name]

        async def one(spec: NodeSpec, view: Mapping[str, Any], level: int) -> None:
            done_q.put_nowait(await run_node(spec, view, level))

        async with TaskPool(self.pool_limit) as pool:
            pending = sorter.get_ready()
            while True:
                while pending:
                    finished = []
                    for node in sorted(pending, key=index.__getitem__):
                        preds = plan.preds[node]
                        level = 1 + max((ps.res[p] for p in preds), default=base)
                        if level >= ceiling:
                            continue  # abandoned: never started, never marked done
                        reason = decide(node, plan, ps, triggers[node])
                        if reason is not None:
                            self.skip(node, reason, plan, ps, base, pass_index)
                            finished.append(node)
                            continue
                        if level > self.recursion_limit:
                            stop_at(level, self.recursion_error())
                            continue
                        try:
                            view = self._view(node, plan, ps, views, updates, start_values)
                        except _FoldFailed as failed:
                            # A reducer rejected an ancestor's write: as in
                            # supersteps mode, that write's level is not applied.
                            stop_at(failed.level, failed.error)
                            continue
                        views[node] = view
                        self.reach(level)
                        task = pool.start(one(specs[node], view, level))
                        running[node] = (task, level)
                    if not finished:
                        break
                    sorter.done(*finished)
                    pending = sorter.get_ready()
                if not running:
                    break
                out = await done_q.get()
                if running.pop(out.node, None) is None:
                    continue  # cancelled by stop_at, but returned anyway
                ok = self.absorb(out, pass_index, ps)
                updates[out.node] = out.update
                if not ok:
                    # A budget stop ends the run under any policy (read loosely: the
                    # pass's contract does not require outcomes to carry their error).
                    if self.fail_fast or ends_run(getattr(out, "error", None), False):
                        stop_at(out.level, None)
                elif out.update and out.level < ceiling:
                    conflict = self._replace_conflict(out, replace_owner)
                    if conflict is not None:
                        stop_at(out.level, conflict)
                sorter.done(out.node)
                pending = sorter.get_ready()
        writes = ps.writes if ceiling == math.inf else [w for w in ps.writes if w[0] < ceiling]
        try:
            values = _fold(self.schema, start_values, writes)
        except _FoldFailed as failed:
            values = failed.values
            stop_at(failed.level, failed.error)
        stopped_at = None if ceiling == math.inf else int(ceiling)
        return DataflowEnd(values, ps.next_roots, stopped_at)

    def _replace_conflict(
        self, out: OutcomeT, owners: dict[tuple[int, str], str]
    ) -> InvalidUpdateError | None:
        """Find two writes to one replace-key at one level as soon as both exist."""
        assert out.update is not None
        schema = self.schema
        for key in out.update:
            if schema.reducer(key) is not None:
                continue
            first = owners.setdefault((out.level, key), out.node)
            if first != out.node:
                # Name them in declaration order, as supersteps mode does.
                a, b = sorted((first, out.node), key=self.topology.index.__getitem__)
                return replace_conflict(key, a, b)
        return None

    def _view(
        self,
        node: str,
        plan: PassPlan,
        ps: PassState,
        views: Mapping[str, Mapping[str, Any]],
        updates: Mapping[str, Mapping[str, Any] | None],
        start_values: Mapping[str, Any],
    ) -> Mapping[str, Any]:
        """The pass-start state plus the writes of ``node``'s executed ancestors."""
        preds = plan.preds[node]
        if not preds:
            return start_values
        if len(preds) == 1 and preds[0] in ps.executed:
            # A chain link: the parent's view plus the parent's own write, which
            # comes last in (level, declaration) order.
            parent = preds[0]
            upd = updates.get(parent)
            if not upd:
                return views[parent]
            try:
                return self.schema.apply(views[parent], [(parent, upd)])
            except InvalidUpdateError as exc:
                raise _FoldFailed(ps.res[parent], exc, dict(views[parent])) from exc
        anc = plan.ancestors(node)
        return _fold(self.schema, start_values, [w for w in ps.writes if w[2] in anc])


def _fold(
    schema: StateSchema, values: Mapping[str, Any], writes: Sequence[Write]
) -> dict[str, Any]:
    """Apply writes level by level, each level in declaration order.

    If a level cannot be applied, raise :class:`_FoldFailed` carrying the
    state before that level.
    """
    out = dict(values)
    for level, group in write_levels(writes):
        try:
            out = schema.apply(out, group)
        except InvalidUpdateError as exc:
            raise _FoldFailed(level, exc, out) from exc
    return out
