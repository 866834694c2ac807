"""Running the tasks of a step together: one TaskGroup, a concurrency limit, fail-fast.

Both planners hand their ready tasks to :func:`run_batch` (a superstep's
tasks, all known up front) or start them one by one in a :class:`TaskPool`
(the native dataflow mode, which starts a node as soon as its own
predecessors are done). Every task started is awaited or cancelled: the
pool is an :class:`asyncio.TaskGroup`, so cancelling the run cancels its
tasks and waits for them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from types import TracebackType
from typing import Any, TypeVar

__all__ = ["TaskPool", "run_batch"]

T = TypeVar("T")
R = TypeVar("R")


class TaskPool:
    """Tasks of one step, started as they become ready, at most ``limit`` running at once.

    Example:
        >>> import asyncio
        >>> async def main():
        ...     async with TaskPool(limit=2) as pool:
        ...         tasks = [pool.start(asyncio.sleep(0, n)) for n in range(3)]
        ...     return [t.result() for t in tasks]
        >>> asyncio.run(main())
        [0, 1, 2]
    """

    __slots__ = ("_group", "_limit", "_tasks")

    def __init__(self, limit: int | None = None) -> None:
        self._group = asyncio.TaskGroup()
        self._limit = asyncio.Semaphore(limit) if limit else None
        self._tasks: list[asyncio.Task[Any]] = []

    async def __aenter__(self) -> TaskPool:
        await self._group.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._group.__aexit__(exc_type, exc, tb)

    def start(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Start ``work`` as a task of this pool (it waits its turn under the limit)."""
        limit = self._limit
        task = self._group.create_task(work if limit is None else _limited(limit, work))
        self._tasks.append(task)
        return task

    def cancel_others(self) -> None:
        """Cancel every task of the pool but the one calling (the fail-fast rule)."""
        me = asyncio.current_task()
        for task in self._tasks:
            if task is not me:
                task.cancel()


async def _limited(limit: asyncio.Semaphore, work: Coroutine[Any, Any, T]) -> T:
    async with limit:
        return await work


async def run_batch(
    items: Sequence[T],
    run_one: Callable[[T], Awaitable[R]],
    *,
    limit: int | None = None,
    stops: Callable[[R], bool] | None = None,
) -> list[R | None]:
    """``run_one`` on every item at once; results in ``items`` order.

    When ``stops(result)`` is true for a finished task (a failure under
    fail-fast), the tasks still running are cancelled; their places hold
    None. ``run_one`` is expected to report failures in its result, not
    raise them.

    Example:
        >>> import asyncio
        >>> async def double(n): return n * 2
        >>> asyncio.run(run_batch([1, 2, 3], double))
        [2, 4, 6]
    """
    results: list[R | None] = [None] * len(items)

    async def one(i: int, item: T) -> None:
        result = await run_one(item)
        results[i] = result
        if stops is not None and stops(result):
            pool.cancel_others()

    async with TaskPool(limit) as pool:
        for i, item in enumerate(items):
            pool.start(one(i, item))
    return results
