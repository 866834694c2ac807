"""Semantic and hybrid search: the ``Embedder`` port, block search, match validation.

* :class:`Embedder` turns texts into vectors: :class:`WordLlamaEmbedder`
  (offline, CPU, ``pip install 'flowcore[embed]'``) or :class:`OpenAIEmbedder`.
* :class:`BlockSearch` finds blocks by words (FTS5/BM25) and by meaning
  (vectors stored beside the blocks), fused with reciprocal rank fusion,
  validated with :func:`io_compatible`, falling back to text on failure.
* Long-term memory stores take an ``embedder=`` for the same search
  (:mod:`flowcore.memory`).
"""

from flowcore.search.block_search import BlockSearch, SearchHit, SearchMode
from flowcore.search.block_vectors import BlockVectors, embedded_text
from flowcore.search.embedder import Embedder, EmbeddingError, Vector, check_vectors
from flowcore.search.fusion import RRF_K, reciprocal_rank_fusion
from flowcore.search.matching import IOMatch, execution_type_matches, io_compatible
from flowcore.search.openai_embedder import OpenAIEmbedder
from flowcore.search.vectors import decode_vector, encode_vector, rank_by_cosine, text_hash
from flowcore.search.wordllama_embedder import WordLlamaEmbedder

__all__ = [
    "RRF_K",
    "BlockSearch",
    "BlockVectors",
    "Embedder",
    "EmbeddingError",
    "IOMatch",
    "OpenAIEmbedder",
    "SearchHit",
    "SearchMode",
    "Vector",
    "WordLlamaEmbedder",
    "check_vectors",
    "decode_vector",
    "embedded_text",
    "encode_vector",
    "execution_type_matches",
    "io_compatible",
    "rank_by_cosine",
    "reciprocal_rank_fusion",
    "text_hash",
]
