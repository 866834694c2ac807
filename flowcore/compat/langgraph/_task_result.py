"""A task's result as LangGraph shows it: its writes by key.

A key the task wrote once shows the value; a key it wrote several times
shows ``{"$writes": [first, second, ...]}``, so no write is hidden. Used for
the ``tasks`` stream and for the tasks of a ``StateSnapshot``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

__all__ = ["MULTIPLE", "task_result"]

MULTIPLE = "$writes"
"""The key under which a key's several writes are listed."""


def task_result(writes: Sequence[tuple[str, Any]], keys: Collection[str]) -> dict[str, Any]:
    """The writes to ``keys`` folded into one dict (see the module docstring).

    Example:
        >>> task_result([("a", 1), ("b", 2), ("a", 3)], {"a", "b"})
        {'a': {'$writes': [1, 3]}, 'b': 2}
    """
    result: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for chan, value in writes:
        if chan not in keys:
            continue
        seen = counts.get(chan, 0)
        counts[chan] = seen + 1
        if seen == 0:
            result[chan] = value
        elif seen == 1:
            result[chan] = {MULTIPLE: [result[chan], value]}
        else:
            result[chan][MULTIPLE].append(value)
    return result
