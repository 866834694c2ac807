"""Pending writes handed straight to a saver, stored the way a graph stores them.

A graph encodes its task writes before it saves them (``encode_write``): an
``interrupt()``'s :class:`~flowcore.compat.langgraph.Interrupt` objects are
stored as plain dicts, which the serializer takes and a graph reads back as
interrupts. Code that calls ``saver.put_writes`` itself (a migration tool, a
test setting up a thread) may pass the objects; the saver stores them in that
same plain form instead of refusing them.

Example:
    >>> from flowcore.compat.langgraph._types import Interrupt
    >>> stored_writes([("__interrupt__", (Interrupt("ok?", id="i1"),))])
    [('__interrupt__', [{'value': 'ok?', 'id': 'i1'}])]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flowcore.compat.langgraph._savers import INTERRUPT
from flowcore.compat.langgraph._types import Interrupt

__all__ = ["stored_writes"]


def stored_writes(writes: Sequence[tuple[str, Any]]) -> Sequence[tuple[str, Any]]:
    """``writes`` with interrupt objects as the plain dicts graphs store (else as given)."""
    if not any(c == INTERRUPT and _has_objects(v) for c, v in writes):
        return writes
    return [(c, _plain_interrupts(v)) if c == INTERRUPT else (c, v) for c, v in writes]


def _has_objects(value: Any) -> bool:
    return isinstance(value, list | tuple) and any(isinstance(i, Interrupt) for i in value)


def _plain_interrupts(value: Any) -> Any:
    if not isinstance(value, list | tuple):
        return value
    return [_plain(i) if isinstance(i, Interrupt) else i for i in value]


def _plain(interrupt: Interrupt) -> dict[str, Any]:
    plain: dict[str, Any] = {"value": interrupt.value, "id": interrupt.id}
    if interrupt.response_schema is not None:
        plain["response_schema"] = interrupt.response_schema
    return plain
