"""The flowcore record of a LangGraph checkpoint, and how a growing list is stored in it.

:mod:`~flowcore.compat.langgraph._savers_core` describes the layout; this
module builds records and reads their parts. A changed channel is stored
whole, except a list that extends what the same core stored for it at the
parent checkpoint: that one is stored as the appended items (a *tail*) plus
the id of the checkpoint holding the rest. To know that a list extends the
stored one without reading it back, the core keeps, per thread, a
:class:`Shadow` of each list it stored: where it is and a *witness* of each
item, a frozen copy that tells whether the item is still what was stored.

Plain data (exact dicts, lists, tuples, strings, numbers, bytes) is
compared by its marshal bytes, so ``1`` and ``1.0`` or ``True`` differ as
they do once stored; immutable scalars and enum members by type and value;
anything else (models, datetimes, ...) with ``==`` against a deep copy taken
when it was stored. Items equal by ``==`` whose stored forms still differ
(a model holding ``1`` where its copy holds ``1.0``) count as unchanged:
the one place a tail may keep the older of two equal values. A core keeps
the shadows of a bounded number of recent threads (see ``_savers_core``); a
thread whose shadows were dropped stores its lists whole once, then tails.
"""

from __future__ import annotations

import copy
import enum
import marshal
from collections.abc import Mapping, Sequence
from typing import Any

from flowcore.checkpoint import Checkpoint

__all__ = [
    "CHANNELS",
    "MAX_TAILS",
    "TAILS",
    "Shadow",
    "channel_versions",
    "full_values",
    "holders",
    "stored_list",
    "tails",
    "write_groups",
]

CHANNELS = "channels"
"""The write-group entry holding whole channel values."""
TAILS = "tails"
"""The write-group entry holding list tails: ``{channel: {"base", "links", "items"}}``."""

MAX_TAILS = 200
"""Tails allowed in a row before a list is stored whole again, however small they are.

The same bound as native flowcore's ``MAX_DELTAS_PER_SNAPSHOT``: reading a
value replays at most this many tails.
"""

_BACKOFF_LIMIT = 64


# ---------------------------------------------------------------------- reading a record


def full_values(cp: Checkpoint | None) -> Mapping[str, Any]:
    """The channels ``cp`` stores whole: ``{channel: value}``."""
    return _entry(cp, CHANNELS)


def tails(cp: Checkpoint | None) -> Mapping[str, Mapping[str, Any]]:
    """The list tails ``cp`` stores: ``{channel: {"base": id, "links": n, "items": [...]}}``."""
    return _entry(cp, TAILS)


def _entry(cp: Checkpoint | None, name: str) -> Mapping[str, Any]:
    if cp is None or not cp.writes:
        return {}
    for node, values in cp.writes[0]:
        if node == name:
            return values
    return {}


def holders(cp: Checkpoint) -> Mapping[str, str]:
    """For each channel with a value at ``cp``: the checkpoint whose record holds it."""
    return (cp.cursor or {}).get("blob_at", {})  # type: ignore[no-any-return]


def channel_versions(cp: Checkpoint) -> Mapping[str, Any]:
    """The LangGraph ``channel_versions`` of ``cp``."""
    return (cp.cursor or {}).get("checkpoint", {}).get("channel_versions", {})  # type: ignore[no-any-return]


def write_groups(
    full: Mapping[str, Any], tail: Mapping[str, Any]
) -> tuple[tuple[tuple[str, Mapping[str, Any]], ...], ...]:
    """``Checkpoint.writes`` for these whole values and tails (empty parts left out)."""
    if tail:
        return (((CHANNELS, full), (TAILS, tail)),)
    return (((CHANNELS, full),),) if full else ()


# ---------------------------------------------------------------------- witnesses


_IMMUTABLE = frozenset({str, int, bool, type(None), bytes})
_PLAIN = _IMMUTABLE | {float}

# How a witness holds its item: the item itself (immutable), the repr of a float
# (-0.0 == 0.0, yet they are stored differently), marshal bytes of exact builtin
# data, or a deep copy of anything else that compares by value.
_SAME, _FLOAT, _BYTES, _COPY = range(4)

Witness = tuple[int, Any, Any]
_IDENTITY_EQ: Any = object.__eq__


def _plain(value: Any) -> bool:
    """True if ``value`` is made only of exact builtin types, which marshal copies exactly."""
    kind = type(value)
    if kind is dict:
        for k, v in value.items():
            if type(k) not in _PLAIN and not _plain(k):
                return False
            if type(v) not in _PLAIN and not _plain(v):
                return False
        return True
    if kind is list or kind is tuple:
        for v in value:  # noqa: SIM110 - a plain loop, no generator per container
            if type(v) not in _PLAIN and not _plain(v):
                return False
        return True
    return kind in _PLAIN


def _witness(item: Any) -> Witness | None:
    """A frozen copy of ``item`` that :func:`_matches` compares later items with.

    None when there is none worth keeping: an object compared by identity
    (no ``__eq__``) cannot be told apart from a changed copy of itself.
    """
    kind = type(item)
    if kind in _IMMUTABLE or isinstance(item, enum.Enum):  # enum members are singletons
        return _SAME, item, None
    if kind is float:
        return _FLOAT, item, repr(item)
    if _plain(item):
        return _BYTES, item, marshal.dumps(item)
    if getattr(kind, "__eq__", None) is _IDENTITY_EQ:
        return None
    try:
        return _COPY, item, copy.deepcopy(item)
    except Exception:
        return None


def _matches(item: Any, witness: Witness) -> bool:
    """Whether ``item`` is still what was stored when ``witness`` was taken.

    Identity alone is not enough: the same object may have been changed in
    place since, so a mutable item is compared with its frozen copy.
    """
    how, original, frozen = witness
    if how == _SAME:
        return item is original or (type(item) is type(original) and item == original)
    if how == _COPY:
        return type(item) is type(frozen) and bool(item == frozen)
    if how == _BYTES:
        return _plain(item) and marshal.dumps(item) == frozen
    return type(item) is float and repr(item) == frozen


# ---------------------------------------------------------------------- shadows


class Shadow:
    """What a core last stored of one list channel in one thread.

    ``holder``: the checkpoint whose record holds the newest part of the
    value (whole or a tail); a later put may store a tail only against a
    parent whose ``blob_at`` names that same checkpoint. ``witnesses``: one
    per item of the value, or None while witnessing is paused (``wait``
    puts left) after lists that did not extend what was stored (``misses``
    in a row). ``whole``: items in the last whole copy; ``since``: items
    stored in tails after it; ``links``: tails after it.

    Example:
        >>> s = Shadow("c1", [], whole=0)
        >>> s.holder, s.links
        ('c1', 0)
    """

    __slots__ = ("holder", "links", "misses", "since", "wait", "whole", "witnesses")

    def __init__(
        self,
        holder: str,
        witnesses: list[Witness] | None,
        *,
        whole: int,
        since: int = 0,
        links: int = 0,
        misses: int = 0,
        wait: int = 0,
    ) -> None:
        self.holder = holder
        self.witnesses = witnesses
        self.whole = whole
        self.since = since
        self.links = links
        self.misses = misses
        self.wait = wait


def _witnesses(items: Sequence[Any]) -> list[Witness] | None:
    out: list[Witness] = []
    for item in items:
        w = _witness(item)
        if w is None:
            return None
        out.append(w)
    return out


def stored_list(
    value: list[Any], shadow: Shadow | None, cid: str
) -> tuple[list[Any] | None, int, Shadow | None]:
    """How to store list ``value`` at checkpoint ``cid``: ``(tail, links, shadow)``.

    ``shadow`` describes the value stored for the channel at the parent
    (None if unknown). A ``tail`` of None means: store ``value`` whole; an
    empty tail means ``value`` equals the stored one (point to
    ``shadow.holder``); otherwise store the tail against ``shadow.holder``,
    as the ``links``-th tail since the last whole copy. The returned shadow
    describes what is then stored (None: nothing known). The value is stored
    whole again once its tails outnumber the items of its last whole copy
    (or after :data:`MAX_TAILS` tails), so storage grows linearly and a
    read replays at most about one value.

    Example:
        >>> tail, links, shadow = stored_list(["a"], None, "c1")
        >>> tail is None, stored_list(["a", "b"], shadow, "c2")[:2]
        (True, (['b'], 1))
    """
    misses = 0 if shadow is None else shadow.misses
    matched = 0
    if shadow is not None and shadow.witnesses is not None:
        known = shadow.witnesses
        n = len(known)
        if len(value) >= n:
            while matched < n and _matches(value[matched], known[matched]):
                matched += 1
        if matched == n:
            added = len(value) - n
            if added == 0:
                if misses:
                    shadow = Shadow(
                        shadow.holder,
                        known,
                        whole=shadow.whole,
                        since=shadow.since,
                        links=shadow.links,
                    )
                return [], 0, shadow
            if shadow.links < MAX_TAILS and shadow.since + added <= shadow.whole:
                new = _witnesses(value[n:])
                after = None
                if new is not None:
                    after = Shadow(
                        cid,
                        known + new,
                        whole=shadow.whole,
                        since=shadow.since + added,
                        links=shadow.links + 1,
                    )
                return value[n:], shadow.links + 1, after
            misses = 0
        else:
            misses += 1
            if misses > 1:
                # A list that keeps changing other than by appending: stop paying for
                # witnesses a while, longer each time it happens again.
                wait = min(2 ** (misses - 1), _BACKOFF_LIMIT)
                return None, 0, Shadow(cid, None, whole=len(value), misses=misses, wait=wait)
    elif shadow is not None and shadow.wait > 0:
        return None, 0, Shadow(cid, None, whole=len(value), misses=misses, wait=shadow.wait - 1)
    reused = shadow.witnesses[:matched] if shadow is not None and shadow.witnesses else []
    new = _witnesses(value[matched:])
    if new is None:
        return None, 0, None
    return None, 0, Shadow(cid, reused + new, whole=len(value), misses=misses)
