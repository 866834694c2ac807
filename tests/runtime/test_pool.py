"""Spec: the tasks of a step run together in one TaskGroup, under a limit, failing fast."""

from __future__ import annotations

import asyncio

import pytest

from flowcore.runtime import TaskPool, run_batch


async def test_results_come_back_in_item_order_whatever_finishes_first() -> None:
    gates = {n: asyncio.Event() for n in range(3)}

    async def work(n: int) -> int:
        await gates[n].wait()
        if n > 0:
            gates[n - 1].set()  # 2 finishes first, then 1, then 0
        return n * 10

    gates[2].set()
    assert await run_batch([0, 1, 2], work) == [0, 10, 20]


async def test_no_more_than_limit_tasks_run_at_once() -> None:
    running = 0
    peak = 0

    async def work(n: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        for _ in range(3):
            await asyncio.sleep(0)
        running -= 1
        return n

    assert await run_batch(list(range(8)), work, limit=2) == list(range(8))
    assert peak == 2


async def test_a_stopping_result_cancels_the_tasks_still_running() -> None:
    cancelled: list[int] = []
    never = asyncio.Event()

    async def work(n: int) -> str:
        if n == 1:
            await asyncio.sleep(0)
            return "failed"
        try:
            await never.wait()
        except asyncio.CancelledError:
            cancelled.append(n)
            raise
        return "done"  # pragma: no cover - cancelled first

    results = await run_batch([0, 1, 2], work, stops=lambda r: r == "failed")

    assert results == [None, "failed", None]
    assert sorted(cancelled) == [0, 2]


async def test_cancelling_the_caller_cancels_and_awaits_every_task() -> None:
    started = asyncio.Event()
    finished_cleanup: list[int] = []

    async def work(n: int) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            finished_cleanup.append(n)

    outer = asyncio.create_task(run_batch([1, 2], work))
    await started.wait()
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert sorted(finished_cleanup) == [1, 2]


async def test_a_pool_starts_tasks_as_they_become_ready() -> None:
    order: list[str] = []

    async def step(name: str) -> str:
        order.append(name)
        return name

    async with TaskPool() as pool:
        first = pool.start(step("a"))
        await first
        second = pool.start(step(first.result() + "b"))
    assert second.result() == "ab"
    assert order == ["a", "ab"]
