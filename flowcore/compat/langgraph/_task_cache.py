"""Caching of ``@task`` calls: a task with a ``CachePolicy``, called in a graph compiled
with ``cache=``, runs once per distinct arguments; later calls reuse its return value.

Entries live in the graph's cache (see ``_cache``) under one namespace per
task name, apart from the nodes' entries, so ``my_task.clear_cache(cache)``
forgets exactly that task's results. As for nodes, only a call that returned
is stored: a failure or a pause runs again.

Example:
    >>> task_namespace("double")
    ('__pregel_ns_writes', 'task:double')
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from flowcore.compat.langgraph._cache import CACHE_NS, CachePolicy, NodeCache

__all__ = [
    "TaskCacheEntry",
    "aclear_task_cache",
    "clear_task_cache",
    "find_cached",
    "task_namespace",
]

_RETURN = "__return__"


def task_namespace(name: str) -> tuple[str, ...]:
    """The cache namespace of task ``name``'s results."""
    return (CACHE_NS, f"task:{name}")


class TaskCacheEntry:
    """Where one call's result is (or will be) cached, and for how long."""

    __slots__ = ("cache", "key", "ttl")

    def __init__(self, cache: NodeCache, key: tuple[Any, str], ttl: int | None) -> None:
        self.cache = cache
        self.key = key
        self.ttl = ttl

    async def keep(self, value: Any) -> None:
        """Store the call's return value."""
        await self.cache.store(self.key, [(_RETURN, value)], self.ttl)


async def find_cached(
    cache: NodeCache | None,
    name: str,
    policy: Any,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
) -> tuple[TaskCacheEntry | None, bool, Any]:
    """``(entry, found, value)`` for one call: ``entry`` None when the call is not cached."""
    if cache is None or not isinstance(policy, CachePolicy):
        return None, False, None
    raw = policy.key_func(*args, **kwargs)
    data = raw.encode() if isinstance(raw, str) else raw
    entry = TaskCacheEntry(
        cache, (task_namespace(name), hashlib.sha256(data).hexdigest()[:32]), policy.ttl
    )
    writes = await cache.lookup(entry.key)
    for channel, value in writes or ():
        if channel == _RETURN:
            return entry, True, value
    return entry, False, None


def clear_task_cache(cache: Any, name: str) -> None:
    """Forget task ``name``'s results in ``cache`` (a LangGraph-style cache object)."""
    cache.clear([task_namespace(name)])


async def aclear_task_cache(cache: Any, name: str) -> None:
    """The async form of :func:`clear_task_cache`."""
    await cache.aclear([task_namespace(name)])
