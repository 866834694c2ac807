"""Dropping function words from a query before word matching.

Word matching ranks by shared words; "where do I like to eat" shares "to"
with half of any collection, which says nothing about meaning and, fused
with vector ranks, would drown the semantic match. Only word matching sees
the trimmed query; embeddings always get the whole query.
"""

from __future__ import annotations

import re

__all__ = ["STOP_WORDS", "content_words"]

STOP_WORDS = frozenset(
    {
        # Contraction pieces: "what's" and "I'd" split into "what" + "s", "i" + "d".
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "want",
        "need",
        "like",
        "please",
        "get",
        "let",
        "make",
        "something",
        "someone",
        "thing",
        "things",
    }
)
"""English function words (and a few filler verbs of requests) left out of word matching."""

_WORD = re.compile(r"[^\W_]+")


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry meaning, lower-cased, in order.

    Falls back to every word when all are function words, so a query is
    never emptied by this.

    Example:
        >>> content_words("Where do I like to eat?")
        ['eat']
        >>> content_words("to be")
        ['to', 'be']
    """
    words = [w.lower() for w in _WORD.findall(text)]
    kept = [w for w in words if w not in STOP_WORDS]
    return kept or words
