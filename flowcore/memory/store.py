"""Long-term memory: a namespaced key-value ``Store`` that outlives any one run.

Namespaces are tuples of strings, e.g. ``("users", "u42", "preferences")``,
so one store can hold every user's and every agent's memories side by side.
Values are JSON values (dicts, lists, strings, numbers, booleans, None).
"""

from __future__ import annotations

import builtins
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from flowcore.errors import FlowcoreError

if TYPE_CHECKING:
    from flowcore.memory.semantic import DictVectorCache, SemanticRanker
    from flowcore.search.embedder import Embedder

__all__ = [
    "InMemoryStore",
    "MemoryItem",
    "Namespace",
    "Store",
    "check_namespace",
    "rank_items",
    "to_json",
]

Namespace = tuple[str, ...]
"""Where a memory lives, outermost first: ``("users", user_id, "preferences")``."""

_WORD = re.compile(r"[^\W_]+")  # "favourite_food" matches "favourite food"


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One stored memory. ``score`` is set by :meth:`Store.search` (higher is better).

    Example:
        >>> MemoryItem(("users", "u1", "prefs"), "food", "tacos", 0.0).key
        'food'
    """

    namespace: Namespace
    key: str
    value: Any
    updated_at: float
    score: float | None = None


def check_namespace(namespace: Sequence[str]) -> Namespace:
    """Return ``namespace`` as a tuple, or raise naming what is wrong with it.

    Example:
        >>> check_namespace(["users", "u1"])
        ('users', 'u1')
    """
    ns = tuple(namespace)
    if not ns or not all(isinstance(p, str) and p for p in ns):
        raise FlowcoreError(
            f"memory namespace {namespace!r} must be a non-empty tuple of non-empty strings, "
            "e.g. ('users', 'u42', 'preferences')"
        )
    return ns


def _words(value: Any) -> set[str]:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return {w.lower() for w in _WORD.findall(text)}


def to_json(namespace: Namespace, key: str, value: Any) -> str:
    """``value`` as JSON text, or a flowcore error naming where it was to be stored.

    Example:
        >>> to_json(("users", "u1"), "n", [1, 2])
        '[1, 2]'
    """
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise FlowcoreError(
            f"memory {namespace}/{key!r}: value is not JSON-serialisable ({exc}); store "
            "dicts, lists, strings, numbers, booleans or None"
        ) from None


@runtime_checkable
class Store(Protocol):
    """A namespaced long-term store; every method is async.

    Example:
        >>> import asyncio
        >>> store = InMemoryStore()
        >>> asyncio.run(store.put(("users", "u1"), "city", "Lyon"))
        >>> asyncio.run(store.get(("users", "u1"), "city")).value
        'Lyon'
    """

    async def put(self, namespace: Namespace, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` (replacing what was there)."""
        ...

    async def get(self, namespace: Namespace, key: str) -> MemoryItem | None:
        """The item under ``key``, or None."""
        ...

    async def delete(self, namespace: Namespace, key: str) -> bool:
        """Remove ``key``; True if it existed."""
        ...

    async def list(self, namespace: Namespace) -> list[MemoryItem]:
        """Every item directly in ``namespace``, newest first."""
        ...

    async def search(
        self, prefix: Namespace, query: str | None = None, *, limit: int = 10
    ) -> builtins.list[MemoryItem]:
        """Items under ``prefix`` (any depth) ranked by how many query words they share."""
        ...


class InMemoryStore:
    """A :class:`Store` in a dict: for tests, demos and single-process apps.

    With an ``embedder`` (see :mod:`flowcore.search`), :meth:`search` also
    ranks by meaning (:mod:`flowcore.memory.semantic`).

    Example:
        >>> store = InMemoryStore()
    """

    def __init__(self, *, embedder: Embedder | None = None) -> None:
        self._items: dict[Namespace, dict[str, MemoryItem]] = {}
        self.embedder = embedder
        self._ranker: SemanticRanker | None = None
        self._vectors: DictVectorCache | None = None

    async def put(self, namespace: Namespace, key: str, value: Any) -> None:
        """Store ``value`` under ``key``; the value is copied through JSON.

        Example:
            >>> # await store.put(("users", "u1", "prefs"), "food", "tacos")
        """
        ns = check_namespace(namespace)
        copy = json.loads(to_json(ns, key, value))
        self._items.setdefault(ns, {})[key] = MemoryItem(ns, key, copy, time.time())

    async def get(self, namespace: Namespace, key: str) -> MemoryItem | None:
        """The item under ``key``, or None.

        Example:
            >>> # item = await store.get(("users", "u1", "prefs"), "food")
        """
        return self._items.get(check_namespace(namespace), {}).get(key)

    async def delete(self, namespace: Namespace, key: str) -> bool:
        """Remove ``key``; True if it existed.

        Example:
            >>> # await store.delete(("users", "u1", "prefs"), "food")
        """
        ns = check_namespace(namespace)
        if self._vectors is not None:
            self._vectors.forget((ns, key))
        return self._items.get(ns, {}).pop(key, None) is not None

    async def list(self, namespace: Namespace) -> list[MemoryItem]:
        """Every item directly in ``namespace``, newest first.

        Example:
            >>> # items = await store.list(("users", "u1", "prefs"))
        """
        items = self._items.get(check_namespace(namespace), {}).values()
        return sorted(items, key=lambda i: (-i.updated_at, i.key))

    async def search(
        self, prefix: Namespace, query: str | None = None, *, limit: int = 10
    ) -> builtins.list[MemoryItem]:
        """Items under ``prefix`` ranked by shared words with ``query`` (newest first on ties).

        Without a query every item under the prefix matches. With an
        embedder, ranked by words and meaning fused (a memory sharing no word
        with the query can be found).

        Example:
            >>> # hits = await store.search(("users", "u1"), "favourite food")
        """
        pre = check_namespace(prefix)
        under = [
            item
            for ns, items in self._items.items()
            if ns[: len(pre)] == pre
            for item in items.values()
        ]
        if self.embedder is None:
            return rank_items(under, query, limit)
        if self._ranker is None:
            # Imported here: flowcore.search imports the blocks package, which imports memory.
            from flowcore.memory.semantic import DictVectorCache, SemanticRanker

            self._vectors = DictVectorCache()
            self._ranker = SemanticRanker(self.embedder, self._vectors)
        return await self._ranker.rank(under, query, limit)

    @property
    def search_mode(self) -> str | None:
        """What the last :meth:`search` ran: ``"hybrid"``, ``"text"``, or None (no embedder).

        Example:
            >>> InMemoryStore().search_mode is None
            True
        """
        return None if self._ranker is None else self._ranker.mode


def rank_items(items: Sequence[MemoryItem], query: str | None, limit: int) -> list[MemoryItem]:
    """Score ``items`` by the words they share with ``query``; best first, newest on ties.

    Without a query every item matches (score 0), newest first.

    Example:
        >>> hit = MemoryItem(("u",), "food", "tacos", 0.0)
        >>> rank_items([hit], "tacos please", 5)[0].score
        1.0
    """
    wanted = _words(query) if query else set()
    hits: list[MemoryItem] = []
    for item in items:
        score = float(len(wanted & (_words(item.key) | _words(item.value))))
        if wanted and score == 0:
            continue
        hits.append(MemoryItem(item.namespace, item.key, item.value, item.updated_at, score))
    hits.sort(key=lambda i: (-(i.score or 0.0), -i.updated_at, i.namespace, i.key))
    return hits[:limit]
