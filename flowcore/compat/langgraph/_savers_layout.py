"""The flowcore record of a LangGraph checkpoint, and how a growing list is stored in it.

:mod:`~flowcore.compat.langgraph._savers_core` describes the layout; this
module builds records and reads their parts. A changed channel is stored
whole, except a list that extends what the same core stored for it at the
parent checkpoint: that one is stored as the appended items (a *tail*) plus
the id of the checkpoint holding the rest. To know that a list extends the
stored one without reading it back, the core keeps, per thread, a
:class:`Shadow` of each list it stored: where it is and a *witness* of each
item, a frozen copy that tells whether the item is still what was stored
(see :mod:`~flowcore.compat.langgraph._savers_witness`). Items equal by
``==`` whose stored forms still differ
(a model holding ``1`` where its copy holds ``1.0``) count as unchanged:
the one place a tail may keep the older of two equal values. A core keeps
the shadows of a bounded number of recent threads (see ``_savers_core``); a
thread whose shadows were dropped stores its lists whole once, then tails.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from flowcore.checkpoint import Checkpoint
from flowcore.compat.langgraph._savers_witness import (  # the specs reach these here too
    _COPY,  # noqa: F401
    _MODEL,  # noqa: F401
    _SAME,  # noqa: F401
    Bulk,
    Witness,
    _bulk,
    _bulk_matches,
    _joined,
    _matches,
    _witnesses,
)
from flowcore.errors import CheckpointStoreError

__all__ = [
    "CHANNELS",
    "MAX_CHAIN",
    "MAX_TAILS",
    "SHADOWED_ITEMS",
    "SHADOWED_THREADS",
    "TAILS",
    "Bulk",
    "Layout",
    "Shadow",
    "ShadowCache",
    "channel_versions",
    "full_values",
    "holders",
    "lay_out",
    "ordered_writes",
    "rebuilt_list",
    "stored_list",
    "tails",
    "unending_chain",
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

MAX_CHAIN = 4 * MAX_TAILS
"""Tails a reader follows before it calls the chain damaged: longer than any chain written."""

SHADOWED_THREADS = 64
"""Threads whose list shadows a core keeps (the ones saved last)."""
SHADOWED_ITEMS = 50_000
"""Item copies a core keeps in shadows across threads (the thread saved last always stays)."""

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


def unending_chain(key: str, channel: str, holder: str) -> CheckpointStoreError:
    """The error for a chain of tails that loops or runs past :data:`MAX_CHAIN`."""
    return CheckpointStoreError(
        f"thread {key!r}: the value of channel {channel!r} at checkpoint "
        f"{holder!r} never reaches a whole copy; the stored history is damaged"
    )


def rebuilt_list(
    key: str, channel: str, holder: str, value: Any, pieces: Sequence[Sequence[Any]]
) -> Any:
    """``value`` (the whole copy a chain of tails reached) extended by ``pieces``, newest first.

    Example:
        >>> rebuilt_list("t", "xs", "c3", ["a"], [["c"], ["b"]])
        ['a', 'b', 'c']
    """
    if not pieces:
        return value
    if type(value) is not list:
        raise CheckpointStoreError(
            f"thread {key!r}: channel {channel!r} has tails stored after a value that is "
            f"not a list, at checkpoint {holder!r}; the stored history is damaged"
        )
    rebuilt = list(value)
    for items in reversed(pieces):
        rebuilt.extend(items)
    return rebuilt


def ordered_writes(
    tasks: Iterable[tuple[str, Iterable[Mapping[str, Any]]]],
) -> list[tuple[str, str, Any]]:
    """LangGraph's ``pending_writes``: ``(task_id, channel, value)`` of each task's write
    entries, ordered by task path, task id and write index.

    Example:
        >>> ordered_writes([("t2", [{"path": "~a", "idx": 0, "channel": "x", "value": 1}]),
        ...                 ("t1", [{"path": "~a", "idx": 0, "channel": "y", "value": 2}])])
        [('t1', 'y', 2), ('t2', 'x', 1)]
    """
    flat = [
        (str(e["path"]), task_id, int(e["idx"]), str(e["channel"]), e["value"])
        for task_id, entries in tasks
        for e in entries
    ]
    flat.sort(key=lambda f: (f[0], f[1], f[2]))
    return [(task_id, channel, value) for _, task_id, _, channel, value in flat]


# ---------------------------------------------------------------------- shadows


class Shadow:
    """What a core last stored of one list channel in one thread.

    ``holder``: the checkpoint whose record holds the newest part of the
    value (whole or a tail); a later put may store a tail only against a
    parent whose ``blob_at`` names that same checkpoint. ``witnesses``: one
    per item of the value, or None while witnessing is paused (``wait``
    puts left) after lists that did not extend what was stored (``misses``
    in a row); ``bulk``: the same witnesses as a :class:`Bulk` when they
    have that form. ``whole``: items in the last whole copy; ``since``: items
    stored in tails after it; ``links``: tails after it.

    Example:
        >>> s = Shadow("c1", [], whole=0)
        >>> s.holder, s.links
        ('c1', 0)
    """

    __slots__ = ("bulk", "holder", "links", "misses", "since", "wait", "whole", "witnesses")

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
        bulk: Bulk | None = None,
    ) -> None:
        self.holder = holder
        self.witnesses = witnesses
        self.whole = whole
        self.since = since
        self.links = links
        self.misses = misses
        self.wait = wait
        self.bulk = bulk


def _matched(value: list[Any], shadow: Shadow, known: list[Witness]) -> int:
    """How many leading items of ``value`` still match ``known``, the shadow's witnesses."""
    if shadow.bulk is not None and _bulk_matches(value, shadow.bulk):
        return len(known)
    matched = 0
    n = len(known)
    while matched < n and _matches(value[matched], known[matched]):
        matched += 1
    return matched


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
            matched = _matched(value, shadow, known)
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
                        bulk=shadow.bulk,
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
                        bulk=_joined(shadow.bulk, _bulk(new)),
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
    witnesses = reused + new
    return None, 0, Shadow(cid, witnesses, whole=len(value), misses=misses, bulk=_bulk(witnesses))


class ShadowCache:
    """Per thread, the shadows of the lists a core stored there last, within bounds.

    Shadows hold frozen copies of whole lists, so only the
    :data:`SHADOWED_THREADS` threads saved last keep theirs, and at most
    :data:`SHADOWED_ITEMS` item copies across all but the thread saved last.
    A thread whose shadows were dropped stores its lists whole once, then
    tails again.

    Example:
        >>> cache = ShadowCache()
        >>> cache.remember("t", {"xs": Shadow("c1", [], whole=0)})
        >>> list(cache.get("t"))
        ['xs']
    """

    __slots__ = ("by_thread", "items")

    def __init__(self) -> None:
        self.by_thread: dict[str, dict[str, Shadow]] = {}
        self.items = 0

    def get(self, key: str) -> Mapping[str, Shadow]:
        """The shadows kept for thread ``key`` (empty if none)."""
        return self.by_thread.get(key, _NO_SHADOWS) if self.by_thread else _NO_SHADOWS

    def remember(self, key: str, shadows: dict[str, Shadow]) -> None:
        """Keep ``shadows`` as what was just stored in thread ``key``, in place of older ones."""
        by_thread = self.by_thread
        if not by_thread:
            if not shadows:
                return  # the usual case for threads without lists: nothing to do
        else:
            old = by_thread.pop(key, None)
            if old is not None:
                self.items -= _items(old)
        if not shadows:
            return
        by_thread[key] = shadows
        self.items += _items(shadows)
        while len(by_thread) > 1 and (
            len(by_thread) > SHADOWED_THREADS or self.items > SHADOWED_ITEMS
        ):
            self.items -= _items(by_thread.pop(next(iter(by_thread))))

    def clear(self) -> None:
        """Forget every shadow (after maintenance changed what is stored)."""
        self.by_thread.clear()
        self.items = 0


_NO_SHADOWS: dict[str, Shadow] = {}


def _items(shadows: Mapping[str, Shadow]) -> int:
    """How many item copies these shadows hold."""
    count = 0
    for shadow in shadows.values():  # a plain loop: no generator per save
        if shadow.witnesses is not None:
            count += len(shadow.witnesses)
    return count


# ---------------------------------------------------------------------- laying out a checkpoint


class Layout(NamedTuple):
    """Where the values of one checkpoint go: see :func:`lay_out`."""

    whole: dict[str, Any]
    tail: dict[str, dict[str, Any]]
    blob_at: dict[str, str]
    shadows: dict[str, Shadow]


def lay_out(
    cid: str,
    checkpoint: Mapping[str, Any],
    new_versions: Mapping[str, Any],
    parent_versions: Mapping[str, Any],
    parent_blobs: Mapping[str, str],
    shadows: Mapping[str, Shadow],
) -> Layout:
    """Which values checkpoint ``cid`` stores whole, which as tails, and where each is held.

    A channel not in ``new_versions`` whose version equals the parent's
    (``parent_versions``) is not stored again: ``blob_at`` points where the
    parent's did (``parent_blobs``). A list that extends what ``shadows``
    say is held there is stored as a tail (``{"base", "links", "items"}``);
    anything else whole. ``shadows`` count only while their holder is where
    the parent points. The returned shadows describe the lists as stored.

    Example:
        >>> cp = {"channel_values": {"x": 1}, "channel_versions": {"x": 1}}
        >>> lay_out("c1", cp, {"x": 1}, {}, {}, {}).blob_at
        {'x': 'c1'}
    """
    versions = checkpoint.get("channel_versions") or {}
    whole: dict[str, Any] = {}
    tail: dict[str, dict[str, Any]] = {}
    blob_at: dict[str, str] = {}
    after: dict[str, Shadow] = {}
    for channel, value in (checkpoint.get("channel_values") or {}).items():
        held = parent_blobs.get(channel)
        if held is not None and channel not in new_versions:
            version = versions.get(channel)
            if version is not None and parent_versions.get(channel) == version:
                blob_at[channel] = held
                if shadows:
                    shadow = shadows.get(channel)
                    if shadow is not None and shadow.holder == held:
                        after[channel] = shadow
                continue
        if type(value) is list:
            # Looked up only here: most channels are not lists, most threads have none.
            shadow = shadows.get(channel) if shadows else None
            if shadow is not None and shadow.holder != held:
                shadow = None
            items, links, shadow = stored_list(value, shadow, cid)
            if shadow is not None:
                after[channel] = shadow
            if items is not None:
                assert held is not None  # a tail extends what the parent points to
                if not items:
                    blob_at[channel] = held
                    continue
                tail[channel] = {"base": held, "links": links, "items": items}
                blob_at[channel] = cid
                continue
        whole[channel] = value
        blob_at[channel] = cid
    return Layout(whole, tail, blob_at, after)
