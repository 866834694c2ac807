"""The superstep loop both planners run on.

A run in supersteps repeats four things until its planner says it is over:
pick the tasks of the next step, save where the run stands (and pause there
if asked), run the step's tasks together, then fold their writes into the
state in the order the graph kind defines (and pause after, if asked).
:func:`run_supersteps` is that loop, once for both kinds of graph; a
:class:`Superstep` supplies what differs:

* the planner's decisions: which tasks are next (``next_step``), in which
  order their writes apply and what a failure or a pause does to the run
  (``after_step``);
* the engine's I/O: the checkpoint before a step (``before_step``), one
  task's run and its saved write (``run_task``).

:func:`run_step` runs one step's tasks: a task whose write an earlier
attempt of the run already saved is not run again (``restored`` hands back
its result), the others run at once under the concurrency limit, and the
first failure that ``stops`` the step cancels the tasks still running.

Per-step durability commits once per step: each task saves its write as it
finishes, except the last task of a step in which none failed or paused,
whose write can ride with the checkpoint that closes the step. Each step's
:class:`StepWrites` tells a task which case it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Protocol, TypeVar

from flowcore.runtime.pool import run_batch

__all__ = ["StepWrites", "Superstep", "run_step", "run_supersteps"]

T = TypeVar("T")
R = TypeVar("R")


class StepWrites:
    """How far one step has got: tasks still running, and whether all so far ended cleanly.

    A task about to save its write asks :meth:`rides_with_checkpoint`: when it
    is the step's last task and every other one finished cleanly, its write
    may be left to the checkpoint that closes the step (one commit for the
    step instead of two). If the run stops before that checkpoint, the engine
    stores the write alone.

    Example:
        >>> writes = StepWrites(2)
        >>> writes.rides_with_checkpoint()
        False
        >>> writes.finished(clean=True)
        >>> writes.rides_with_checkpoint()
        True
    """

    __slots__ = ("clean", "unfinished")

    def __init__(self, tasks: int) -> None:
        self.unfinished = tasks
        self.clean = True

    def rides_with_checkpoint(self) -> bool:
        """True for the last running task of a step whose other tasks all ended cleanly."""
        return self.unfinished == 1 and self.clean

    def finished(self, *, clean: bool) -> None:
        """Count one task as done; ``clean`` is False when it failed or paused."""
        if self.unfinished:
            self.unfinished -= 1
        if not clean:
            self.clean = False

    def cancelled(self) -> None:
        """Count one task as stopped before it finished (the step is no longer clean)."""
        self.finished(clean=False)


class Superstep(Protocol[T, R]):
    """What a run in supersteps supplies to :func:`run_supersteps`.

    ``T`` is the planner's task, ``R`` the result of running one.
    """

    def next_step(self) -> Sequence[T] | None:
        """The tasks of the next step, or None when the run is over (a pure decision)."""
        ...

    async def before_step(self, tasks: Sequence[T]) -> None:
        """Save where the run stands before ``tasks`` run; raise to pause there."""
        ...

    def restored(self, task: T) -> R | None:
        """The result an earlier attempt of this run saved for ``task``, or None."""
        ...

    def run_task(self, task: T, writes: StepWrites) -> Awaitable[R]:
        """Run one task and save its write; report a failure in the result, do not raise it."""
        ...

    def stops(self, result: R) -> bool:
        """Whether ``result`` (a failure) stops the step's other tasks."""
        ...

    def clean(self, result: R) -> bool:
        """Whether ``result`` ended cleanly: neither failed nor paused."""
        ...

    async def after_step(self, tasks: Sequence[T], results: Sequence[R]) -> None:
        """Fold the step's results into the run; raise to fail or pause it."""
        ...


async def run_step(steps: Superstep[T, R], tasks: Sequence[T], *, limit: int | None) -> list[R]:
    """Run one step's tasks; results in task order.

    Tasks an earlier attempt finished are not run again. When a result
    ``stops`` the step, the tasks still running are cancelled and have no
    result.

    Example:
        >>> results = await run_step(steps, ["a", "b"], limit=None)  # doctest: +SKIP
    """
    saved: dict[int, R] = {}
    todo: list[T] = []
    for i, task in enumerate(tasks):
        result = steps.restored(task)
        if result is None:
            todo.append(task)
        else:
            saved[i] = result
    writes = StepWrites(len(todo))
    ran: list[R | None]
    if not todo:
        ran = []
    elif len(todo) == 1:
        # The common case of a loop: one task, run inline (no task group, no wrapper).
        # Its StepWrites is not read once it has returned: nothing to count after it.
        only: R = await steps.run_task(todo[0], writes)
        if not saved:
            return [only]
        ran = [only]
    else:

        async def one(task: T) -> R:
            return await _run_one(steps, task, writes)

        ran = await run_batch(todo, one, limit=limit, stops=steps.stops)
    if not saved:
        return [r for r in ran if r is not None]
    fresh = iter(ran)
    ordered = [saved[i] if i in saved else next(fresh) for i in range(len(tasks))]
    return [r for r in ordered if r is not None]


async def _run_one(steps: Superstep[T, R], task: T, writes: StepWrites) -> R:
    try:
        result = await steps.run_task(task, writes)
    except asyncio.CancelledError:
        writes.cancelled()
        raise
    writes.finished(clean=steps.clean(result))
    return result


async def run_supersteps(
    steps: Superstep[T, R], *, limit: int | None = None, step_timeout: float | None = None
) -> None:
    """Run steps until ``steps.next_step()`` says the run is over.

    ``step_timeout`` (seconds) caps how long one step's tasks may run: past it
    the tasks still running are cancelled and ``TimeoutError`` ends the run.

    Example:
        >>> await run_supersteps(my_run, limit=8)  # doctest: +SKIP
    """
    while (tasks := steps.next_step()) is not None:
        await steps.before_step(tasks)
        if step_timeout is None:
            results = await run_step(steps, tasks, limit=limit)
        else:
            async with asyncio.timeout(step_timeout):
                results = await run_step(steps, tasks, limit=limit)
        await steps.after_step(tasks, results)
