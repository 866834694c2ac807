"""One pass of a native run in supersteps, as the runtime's step loop drives it.

A pass walks the graph's DAG (back edges removed) in topological order. Its
steps are the batches of ready nodes the planner lets run (the others are
skipped: not triggered, or downstream of a failure), plus the ``Send``
tasks aimed at them. :class:`SuperstepPass` is the native run's
:class:`~flowcore.runtime.steps.Superstep`: it asks the planner
(:mod:`flowcore.scheduler.planner`) which nodes run, has the engine save
the checkpoint before each batch and run each task, and folds the batch's
writes into the state in node declaration order.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from flowcore.graph.commands import split_task_key, task_key
from flowcore.runtime.steps import StepWrites, run_supersteps
from flowcore.scheduler.outcome import NO_ARG, Outcome, RunFailed, RunPaused, Task, ends_run
from flowcore.scheduler.planner import PassState

if TYPE_CHECKING:
    from flowcore.graph.topology import PassPlan
    from flowcore.scheduler.engine import RunEngine

__all__ = ["SuperstepPass"]


class SuperstepPass:
    """The steps of one pass: the runtime runs them, the engine does their I/O.

    Example:
        >>> roots = await SuperstepPass(engine, plan, 1).run()  # doctest: +SKIP
    """

    def __init__(
        self,
        engine: RunEngine,
        plan: PassPlan,
        pass_index: int,
        restored: PassState | None = None,
    ) -> None:
        self.engine = engine
        self.plan = plan
        self.pass_index = pass_index
        ps = restored or PassState()
        if restored is None:
            engine._pass_base = engine.step
            if engine._carry is not None:
                ps.sends, ps.send_roots = engine._carry
                engine._carry = None
        self.ps = ps
        self.base = engine._pass_base
        self.sorter = plan.sorter()
        # A restored pass starts from the nodes its cursor left undecided.
        self.carried: list[str] = engine._replay_decided(self.sorter, ps) if restored else []
        self.batch: list[str] = []
        self.has_sends = False

    async def run(self) -> list[str]:
        """Run the pass's steps; return the roots of the next pass (none: the run is over)."""
        engine = self.engine
        await run_supersteps(self, limit=engine._limit)
        ps = self.ps
        if ps.next_sends:
            engine._carry = (ps.next_sends, set(ps.next_sends) - ps.next_roots)
            return engine._ordered(ps.next_roots | set(ps.next_sends))
        return engine._ordered(ps.next_roots)

    def next_step(self) -> list[Task] | None:
        """The next batch the planner lets run, each node's task then its Sends'."""
        engine = self.engine
        plan, ps, sorter = self.plan, self.ps, self.sorter
        while sorter.is_active():
            batch: list[str] = []
            send_only: set[str] = set()
            pending = self.carried or list(sorter.get_ready())
            self.carried = []
            while pending:
                skipped = []
                for node in pending:
                    reason = engine._decide(node, plan, ps)
                    if reason is None:
                        batch.append(node)
                    elif reason == "not_triggered" and node in ps.sends:
                        batch.append(node)
                        send_only.add(node)
                    else:
                        engine._skip(node, reason, plan, ps, self.base, self.pass_index)
                        skipped.append(node)
                if not skipped:
                    break
                sorter.done(*skipped)
                pending = list(sorter.get_ready())
            if not batch:
                continue
            batch.sort(key=engine._topo.index.__getitem__)
            self.batch = batch
            self.has_sends = bool(ps.sends)
            if not self.has_sends:
                return [(node, node, NO_ARG) for node in batch]
            tasks: list[Task] = []
            for node in batch:
                if node not in send_only:
                    tasks.append((node, node, NO_ARG))
                for i, arg in enumerate(ps.sends.get(node, ())):
                    tasks.append((task_key(node, i), node, arg))
            return tasks
        return None

    async def before_step(self, tasks: Sequence[Task]) -> None:
        """Save the checkpoint the batch starts from (pausing there if asked); count the step."""
        engine = self.engine
        level = engine.step + 1
        if engine._thread is not None:
            await engine._checkpoint_before(
                self.batch, self.plan, self.ps, self.pass_index, self.base
            )
        engine._check_limit(level)
        engine.step = level
        # A write left to the next checkpoint was stored by it before this step began.
        assert engine._deferred is None

    def restored(self, task: Task) -> Outcome | None:
        """The outcome an earlier attempt saved for ``task`` (a resumed step), if any."""
        engine = self.engine
        thread = engine._thread
        if thread is None or not thread.pending:
            return None
        key, node, _ = task
        return engine._saved_outcome(node, engine.step, key)

    def run_task(self, task: Task, writes: StepWrites) -> Coroutine[Any, Any, Outcome]:
        """Run one task through the engine (which saves its write)."""
        engine = self.engine
        key, node, arg = task
        # The engine's coroutine itself, not a wrapper around it: one less frame per task.
        return engine._run_node_now(
            engine._specs[node],
            engine.values,
            engine.step,
            None if key == node else key,
            arg,
            writes=writes,
        )

    def stops(self, out: Outcome) -> bool:
        """Under ``fail_fast`` a failure cancels the batch's other tasks."""
        return ends_run(out.error, self.engine._fail_fast)

    def clean(self, out: Outcome) -> bool:
        """Whether a task ended neither failed nor paused."""
        return out.error is None and out.interrupt is None

    async def after_step(self, tasks: Sequence[Task], outcomes: Sequence[Outcome]) -> None:
        """Record the batch's outcomes; fail or pause the run, or apply its writes in order."""
        engine = self.engine
        ps = self.ps
        thread = engine._thread
        if thread is not None:
            thread.pending.clear()
            thread.answers.clear()
        ps.writes.clear()
        stop = False
        paused = False
        for out in outcomes:
            if out.interrupt is not None:
                paused = True
                engine.interrupts.append(out.interrupt)
                continue
            if not engine._absorb(out, self.pass_index, ps):
                stop = stop or ends_run(out.error, engine._fail_fast)
        if stop:
            raise RunFailed
        if paused:
            # Completed siblings keep their saved writes; the step is applied
            # when the interrupted nodes have answered.
            raise RunPaused
        batch = self.batch
        group = [(node, upd) for _, _, node, upd in ps.writes]
        if group:
            engine.values = engine._schema.apply(engine.values, group)
            if thread is not None:
                if self.has_sends:  # state and outputs are kept by node name
                    group = [(split_task_key(key)[0], upd) for key, upd in group]
                thread.groups.append(group)
        if self.has_sends:
            for node in batch:
                ps.sends.pop(node, None)
        if thread is not None and thread.interrupt_after.intersection(batch):
            engine._pause_next = "after"
        self.sorter.done(*batch)
