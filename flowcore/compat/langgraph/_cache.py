"""Node caching: a node with a ``CachePolicy`` on a graph compiled with ``cache=`` is
run once per distinct input, and later tasks with the same input reuse its writes.

The cache is any object with LangGraph's cache interface (``langgraph.cache``'s
``InMemoryCache`` or ``SqliteCache``, or one of your own): ``aget(keys)`` gives
the entries found, ``aset({key: (value, ttl)})`` stores, ``aclear(namespaces)``
forgets. Keys are ``(namespace, key)`` with one namespace per node, so the
cache of one node can be cleared alone. Only a node that finished is stored: a
failure or a pause must run again.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["CACHE_NS", "CachePolicy", "NodeCache", "default_cache_key"]

CACHE_NS = "__pregel_ns_writes"
"""The first part of every namespace a node's cached writes are stored under."""


def _freeze(value: Any) -> Any:
    # Equal dicts and sets give equal keys whatever their order.
    if isinstance(value, dict):
        return tuple(sorted(((k, _freeze(v)) for k, v in value.items()), key=repr))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, set | frozenset):
        return tuple(sorted((_freeze(v) for v in value), key=repr))
    return value


def default_cache_key(*args: Any, **kwargs: Any) -> bytes:
    """The default cache key of a node input: its pickled, order-free form.

    Example:
        >>> default_cache_key({"a": 1, "b": 2}) == default_cache_key({"b": 2, "a": 1})
        True
    """
    return pickle.dumps((_freeze(args), _freeze(kwargs)), protocol=5)


@dataclass(frozen=True)
class CachePolicy:
    """How a node's results are cached: ``key_func(input)`` names an entry, kept ``ttl`` seconds.

    ``ttl=None`` keeps entries until the cache is cleared.

    Example:
        >>> CachePolicy(ttl=60).ttl
        60
    """

    key_func: Callable[..., str | bytes] = default_cache_key
    ttl: int | None = None


def node_namespace(node: str) -> tuple[str, ...]:
    """The cache namespace of node ``node``'s writes.

    Example:
        >>> node_namespace("search")
        ('__pregel_ns_writes', 'search')
    """
    return (CACHE_NS, node)


class NodeCache:
    """The cache of one compiled graph, as its run loop uses it."""

    def __init__(self, cache: Any) -> None:
        self.cache = cache

    def key(self, node: str, policy: CachePolicy, node_input: Any) -> tuple[Any, str]:
        """The full key of ``node``'s entry for ``node_input``."""
        raw = policy.key_func(node_input)
        data = raw.encode() if isinstance(raw, str) else raw
        return node_namespace(node), hashlib.sha256(data).hexdigest()[:32]

    async def lookup(self, key: tuple[Any, str]) -> list[tuple[str, Any]] | None:
        """The writes stored under ``key``, or ``None``."""
        found = await self.cache.aget([key])
        if key not in found:
            return None
        return [(str(c), v) for c, v in found[key]]

    async def store(
        self, key: tuple[Any, str], writes: Sequence[tuple[str, Any]], ttl: int | None
    ) -> None:
        """Keep ``writes`` under ``key`` for ``ttl`` seconds (``None``: until cleared)."""
        await self.cache.aset({key: (list(writes), ttl)})

    async def clear(self, nodes: Sequence[str]) -> None:
        """Forget the cached writes of ``nodes``."""
        await self.cache.aclear([node_namespace(n) for n in nodes])
