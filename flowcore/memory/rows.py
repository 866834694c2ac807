"""What the SQLite and Postgres memory stores share: namespace keys, rows, ranking.

Both stores keep a namespace as one text column (its parts joined by
``\\x1f``, with a trailing one so a prefix never splits a part), values as
the JSON text they were given, and rank a search the same way: by shared
words, or with an embedder by words and meaning. Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from flowcore.errors import FlowcoreError
from flowcore.memory.store import MemoryItem, Namespace, check_namespace, rank_items

if TYPE_CHECKING:
    from flowcore.memory.semantic import MemoryVectorCache, SemanticRanker
    from flowcore.search.embedder import Embedder

__all__ = ["RankedSearch", "decode_namespace", "encode_namespace", "item_rows", "match_vectors"]

# Namespace parts are joined with a separator that no sane part contains, and
# every stored namespace ends with it, so a prefix match never splits a part.
SEP = "\x1f"


def encode_namespace(namespace: Namespace) -> str:
    """The stored text of ``namespace`` (checked first).

    Example:
        >>> encode_namespace(("users", "ada"))
        'users\\x1fada\\x1f'
    """
    ns = check_namespace(namespace)
    if any(SEP in part for part in ns):
        raise FlowcoreError(f"memory namespace {ns!r} contains a control character (\\x1f)")
    return SEP.join(ns) + SEP


def decode_namespace(text: str) -> Namespace:
    """The namespace a stored text stands for.

    Example:
        >>> decode_namespace("users\\x1fada\\x1f")
        ('users', 'ada')
    """
    return tuple(text.split(SEP)[:-1])


def item_rows(rows: Iterable[Sequence[Any]]) -> list[MemoryItem]:
    """Items from ``(namespace, key, value JSON, updated_at)`` rows.

    Example:
        >>> item_rows([("u\\x1f", "k", '"v"', 1.0)])[0].value
        'v'
    """
    return [MemoryItem(decode_namespace(r[0]), r[1], json.loads(r[2]), r[3]) for r in rows]


def match_vectors(
    wanted: Mapping[tuple[str, str], tuple[Namespace, str]],
    rows: Iterable[Sequence[Any]],
    found: dict[tuple[Namespace, str], tuple[str, bytes]],
) -> None:
    """Put into ``found`` the ``(namespace, key, hash, vector)`` rows that were ``wanted``.

    Example:
        >>> found = {}
        >>> match_vectors({("u\\x1f", "k"): (("u",), "k")}, [("u\\x1f", "k", "h", b"v")], found)
        >>> found
        {(('u',), 'k'): ('h', b'v')}
    """
    for ns, key, digest, blob in rows:
        target = wanted.get((ns, key))
        if target is not None:
            found[target] = (str(digest), bytes(blob))


class RankedSearch:
    """The ranking step of a memory store's ``search``, and its ``search_mode``.

    A store mixing this in sets ``embedder`` and ``_ranker = None`` and
    provides the vector cache methods (``load_vectors``, ``save_vectors``).

    Example:
        >>> # class MyStore(RankedSearch): ...; await self._rank(items, query, limit)
    """

    embedder: Embedder | None
    _ranker: SemanticRanker | None

    async def _rank(
        self, items: list[MemoryItem], query: str | None, limit: int
    ) -> list[MemoryItem]:
        if self.embedder is None:
            return rank_items(items, query, limit)
        if self._ranker is None:
            # Imported here: flowcore.search imports the blocks package, which imports memory.
            from flowcore.memory.semantic import SemanticRanker

            # The store mixing this in is its own vector cache.
            self._ranker = SemanticRanker(self.embedder, cast("MemoryVectorCache", self))
        return await self._ranker.rank(items, query, limit)

    @property
    def search_mode(self) -> str | None:
        """What the last :meth:`search` ran: ``"hybrid"``, ``"text"``, or None (no embedder).

        Example:
            >>> # SqliteStore("memory.db").search_mode is None
        """
        return None if self._ranker is None else self._ranker.mode
