"""Spec: a ``@task`` with a ``CachePolicy`` in an entrypoint compiled with ``cache=``
runs once per distinct arguments; ``clear_cache`` forgets only that task's results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flowcore.compat.langgraph import CachePolicy, entrypoint, task


class DictCache:
    """LangGraph's cache interface over a dict (no expiry)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[Any, str], Any] = {}

    async def aget(self, keys: Sequence[tuple[Any, str]]) -> dict[tuple[Any, str], Any]:
        return {k: self.entries[k] for k in keys if k in self.entries}

    async def aset(self, pairs: Mapping[tuple[Any, str], tuple[Any, int | None]]) -> None:
        self.entries.update({k: value for k, (value, _ttl) in pairs.items()})

    def clear(self, namespaces: Sequence[tuple[str, ...]] | None = None) -> None:
        self.entries = {
            k: v
            for k, v in self.entries.items()
            if namespaces is not None and k[0] not in namespaces
        }

    async def aclear(self, namespaces: Sequence[tuple[str, ...]] | None = None) -> None:
        self.clear(namespaces)


def _workflow(cache: DictCache, calls: list[int]) -> tuple[Any, Any]:
    @task(cache_policy=CachePolicy())
    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    @task
    def plain(x: int) -> int:
        calls.append(-x)
        return x

    @entrypoint(cache=cache)
    def work(xs: list[int]) -> list[int]:
        return [double(x).result() + plain(x).result() for x in xs]

    return work, double


def test_a_cached_task_runs_once_per_argument() -> None:
    calls: list[int] = []
    work, _ = _workflow(DictCache(), calls)
    assert work.invoke([1, 1, 2]) == [3, 3, 6]
    assert work.invoke([2]) == [6]
    # The uncached task ran every time; the cached one once for 1 and once for 2.
    assert sorted(c for c in calls if c > 0) == [1, 2]
    assert sorted(c for c in calls if c < 0) == [-2, -2, -1, -1]


def test_clear_cache_makes_the_task_run_again() -> None:
    calls: list[int] = []
    cache = DictCache()
    work, double = _workflow(cache, calls)
    work.invoke([5])
    double.clear_cache(cache)
    work.invoke([5])
    assert [c for c in calls if c > 0] == [5, 5]
