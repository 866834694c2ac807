"""Spec: the superstep loop both planners run on (flowcore.runtime.steps).

A toy planner drives it here: each step's tasks are names, a task's result
is what it did. Both real planners are tested through their graphs (tests/scheduler,
tests/compat, tests/conformance); this file pins what the loop itself promises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from flowcore.runtime.steps import StepWrites, Superstep, run_step, run_supersteps


@dataclass
class Done:
    task: str
    ok: bool = True
    rode: bool = False  # left its write to the step's checkpoint


class Paused(Exception):
    pass


class Failed(Exception):
    pass


@dataclass
class ToyRun:
    """Steps of named tasks; a task named 'x!' fails, 'x?' pauses, 'x~' waits to be cancelled."""

    plan: list[list[str]]
    saved: dict[str, Done] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    applied: list[list[str]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def next_step(self) -> Sequence[str] | None:
        if not self.plan:
            self.log.append("over")
            return None
        return self.plan.pop(0)

    async def before_step(self, tasks: Sequence[str]) -> None:
        self.log.append(f"checkpoint before {','.join(tasks)}")

    def restored(self, task: str) -> Done | None:
        return self.saved.get(task)

    async def run_task(self, task: str, writes: StepWrites) -> Done:
        self.log.append(f"run {task}")
        if task.endswith("~"):
            await self.release.wait()
        await asyncio.sleep(0)
        if task.endswith("!"):
            return Done(task, ok=False)
        if task.endswith("?"):
            return Done(task, ok=False)
        return Done(task, rode=writes.rides_with_checkpoint())

    def stops(self, result: Done) -> bool:
        return result.task.endswith("!")

    def clean(self, result: Done) -> bool:
        return result.ok

    async def after_step(self, tasks: Sequence[str], results: Sequence[Done]) -> None:
        if any(r.task.endswith("!") for r in results):
            raise Failed
        if any(r.task.endswith("?") for r in results):
            raise Paused
        self.applied.append([r.task for r in results])


def _as_superstep(run: ToyRun) -> Superstep[str, Done]:
    return run  # the toy run satisfies the protocol (checked by mypy on this file)


async def test_steps_run_in_order_each_after_its_checkpoint_until_the_planner_says_over() -> None:
    run = ToyRun([["a"], ["b", "c"]])

    await run_supersteps(_as_superstep(run))

    assert run.log == [
        "checkpoint before a",
        "run a",
        "checkpoint before b,c",
        "run b",
        "run c",
        "over",
    ]
    assert run.applied == [["a"], ["b", "c"]]


async def test_results_come_back_in_task_order_not_finish_order() -> None:
    run = ToyRun([])
    run.release.set()

    results = await run_step(run, ["slow~", "b", "c"], limit=None)

    assert [r.task for r in results] == ["slow~", "b", "c"]


async def test_a_task_an_earlier_attempt_saved_is_not_run_again() -> None:
    run = ToyRun([["a", "b", "c"]], saved={"b": Done("b")})

    await run_supersteps(run)

    assert "run b" not in run.log
    assert run.applied == [["a", "b", "c"]]  # the saved result keeps its place


async def test_only_the_last_task_of_a_clean_step_leaves_its_write_to_the_checkpoint() -> None:
    run = ToyRun([])
    run.release.set()

    results = await run_step(run, ["a", "b", "last~"], limit=None)

    assert [r.rode for r in results] == [False, False, True]


async def test_after_a_task_failed_or_paused_no_write_waits_for_the_checkpoint() -> None:
    run = ToyRun([])
    run.release.set()

    results = await run_step(run, ["q?", "b", "last~"], limit=None)

    assert [r.rode for r in results] == [False, False, False]


async def test_a_lone_task_leaves_its_write_to_the_checkpoint() -> None:
    run = ToyRun([])

    (result,) = await run_step(run, ["a"], limit=None)

    assert result.rode


async def test_a_failure_that_stops_the_step_cancels_the_tasks_still_running() -> None:
    run = ToyRun([["wait~", "boom!", "also~"]])

    with pytest.raises(Failed):
        await run_supersteps(run)

    assert run.applied == []  # a failed step applies nothing
    assert run.log[-1] != "over"


async def test_a_pause_ends_the_loop_after_the_step_with_its_siblings_finished() -> None:
    run = ToyRun([["a", "q?"], ["never"]])

    with pytest.raises(Paused):
        await run_supersteps(run)

    assert "run a" in run.log
    assert "checkpoint before never" not in run.log


async def test_no_more_than_limit_tasks_run_at_once() -> None:
    running = 0
    peak = 0

    class Counting(ToyRun):
        async def run_task(self, task: str, writes: StepWrites) -> Done:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            for _ in range(3):
                await asyncio.sleep(0)
            running -= 1
            return Done(task)

    run = Counting([[f"t{i}" for i in range(6)]])

    await run_supersteps(run, limit=2)

    assert peak == 2
    assert run.applied == [[f"t{i}" for i in range(6)]]


async def test_cancelling_the_run_cancels_the_steps_tasks_and_counts_them_unclean() -> None:
    seen: list[StepWrites] = []
    both_started = asyncio.Event()

    class Hanging(ToyRun):
        async def run_task(self, task: str, writes: StepWrites) -> Done:
            seen.append(writes)
            if len(seen) == 2:
                both_started.set()
            await asyncio.Event().wait()
            raise AssertionError("unreachable")  # pragma: no cover

    run = Hanging([["a", "b"]])
    loop_task = asyncio.ensure_future(run_supersteps(run))
    await both_started.wait()
    loop_task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await loop_task

    assert seen[0].unfinished == 0
    assert not seen[0].clean
