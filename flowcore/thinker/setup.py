"""Building a Thinker the way the front doors do: the model it asks, the search it uses.

``flowcore create`` and ``flowcore serve`` pick the model as ``flowcore run``
does (an API key, a local server, else the offline stand-in); the Thinker
then asks that model, or :class:`~flowcore.thinker.ThinkerModel` when the
choice was the offline stand-in (which cannot plan). Block search uses
meaning as well as words when the offline embedder is installed.
"""

from __future__ import annotations

import importlib.util

from flowcore.blocks.postgres_store import PostgresBlockStore
from flowcore.blocks.store import SqliteBlockStore
from flowcore.llm.offline import OfflineProvider
from flowcore.llm.protocol import LLMProvider
from flowcore.search.block_search import BlockSearch
from flowcore.search.embedder import Embedder
from flowcore.thinker.offline_model import ThinkerModel

__all__ = ["default_embedder", "default_search", "thinker_model"]


def thinker_model(provider: LLMProvider) -> LLMProvider:
    """The model the Thinker asks: ``provider``, unless it is the offline stand-in.

    Example:
        >>> thinker_model(OfflineProvider()).name
        'thinker-offline'
    """
    if isinstance(provider, OfflineProvider):
        # Its other requests (the created pipelines' LLM blocks) still go to the stand-in.
        return ThinkerModel(fallback=provider)
    return provider


def default_embedder() -> Embedder | None:
    """WordLlama when ``flowcore[embed]`` is installed, else None (search by words alone).

    Example:
        >>> embedder = default_embedder()  # WordLlamaEmbedder() or None
    """
    if importlib.util.find_spec("wordllama") is None:
        return None
    from flowcore.search.wordllama_embedder import WordLlamaEmbedder

    return WordLlamaEmbedder()


def default_search(store: SqliteBlockStore | PostgresBlockStore) -> BlockSearch:
    """Hybrid block search on ``store`` when an embedder is installed, full text otherwise.

    A Postgres registry is searched by full text (block vectors live in SQLite).

    Example:
        >>> # search = default_search(workspace.blocks)
    """
    if isinstance(store, PostgresBlockStore):
        return BlockSearch(store)
    return BlockSearch(store, default_embedder())
