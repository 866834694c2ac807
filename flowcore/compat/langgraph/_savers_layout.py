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
import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel

from flowcore.checkpoint import Checkpoint
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


# ---------------------------------------------------------------------- witnesses


_IMMUTABLE = frozenset({str, int, bool, type(None), bytes})
_PLAIN = _IMMUTABLE | {float}

# How a witness holds its item: the item itself (immutable), the repr of a float
# (-0.0 == 0.0, yet they are stored differently), marshal bytes of exact builtin
# data, a deep copy of anything else that compares by value, or, for a pydantic
# model compared by pydantic's own ``__eq__``, its class and copies of its field
# and extra dicts (what that ``__eq__`` compares, without its Python-level steps).
_SAME, _FLOAT, _BYTES, _COPY, _MODEL = range(5)

Witness = tuple[int, Any, Any]
_IDENTITY_EQ: Any = object.__eq__
_MODEL_EQ: Any = BaseModel.__eq__
# What a model witness holds, read from a model in one C call: (class, fields, extra).
_MODEL_PARTS = operator.attrgetter("__class__", "__dict__", "__pydantic_extra__")

_model_classes: dict[type, bool] = {}


def _is_model_class(kind: type) -> bool:
    """Whether ``kind``'s instances are equal exactly when their field and extra dicts are.

    True for pydantic models that keep pydantic's ``__eq__`` and have no private
    attributes (which that ``__eq__`` also compares). Where pydantic's ``__eq__``
    would still call two models equal whose ``__dict__`` differ (keys that are
    not fields, such as a cached property), the dicts differ and the list is
    stored whole: never a wrong tail, at worst a whole copy.
    """
    known = _model_classes.get(kind)
    if known is None:
        known = _model_classes[kind] = (
            issubclass(kind, BaseModel)
            and _model_eq(getattr(kind, "__eq__", None))
            and not getattr(kind, "__private_attributes__", None)
        )
    return known


def _model_eq(eq: Any) -> bool:
    """pydantic's ``__eq__``, or one that says it is that for two models of one class."""
    return eq is _MODEL_EQ or getattr(eq, "model_eq_within_class", False) is True


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


def _frozen(value: Any) -> Any:
    """A deep copy of ``value`` that shares its immutable leaves, as ``copy.deepcopy`` does.

    Shared leaves keep later comparisons cheap: ``==`` on the same string object
    is an identity check, not a comparison of its characters.
    """
    try:
        return _plain_copy(value)
    except _NotPlain:
        return copy.deepcopy(value)


class _NotPlain(Exception):
    """The value holds something :func:`_plain` would refuse."""


def _plain_copy(value: Any) -> Any:
    """:func:`_frozen` of plain data (see :func:`_plain`) in one pass; else :class:`_NotPlain`."""
    kind = type(value)
    if kind is dict:
        out = {}
        for k, v in value.items():
            if type(k) not in _PLAIN and not _plain(k):  # a plain key is immutable: kept
                raise _NotPlain
            kind = type(v)
            if kind in _PLAIN:
                out[k] = v
            elif not v and (kind is list or kind is dict):
                out[k] = kind()  # an empty field (most of a message's): no call
            else:
                out[k] = _plain_copy(v)
        return out
    if kind is list:
        return [v if type(v) in _PLAIN else _plain_copy(v) for v in value]
    if kind is tuple:
        return tuple([v if type(v) in _PLAIN else _plain_copy(v) for v in value])
    if kind in _PLAIN:
        return value
    raise _NotPlain


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
        if _is_model_class(kind):
            # The class too: ``item.__class__`` may be reassigned later.
            extra = getattr(item, "__pydantic_extra__", None)
            return _MODEL, item, (kind, _frozen(item.__dict__), _frozen(extra))
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
    if how == _MODEL:
        kind, fields, extra = frozen
        return (
            type(item) is kind
            and item.__dict__ == fields
            and getattr(item, "__pydantic_extra__", None) == extra
        )
    if how == _COPY:
        return type(item) is type(frozen) and bool(item == frozen)
    if how == _BYTES:
        return _plain(item) and marshal.dumps(item) == frozen
    return type(item) is float and repr(item) == frozen


class Bulk(NamedTuple):
    """The witnesses of a list whose items are all of one kind, as parallel lists.

    ``how`` is ``_SAME`` (``values``: the items themselves) or ``_MODEL``
    (``values``: per item, the ``(class, fields, extra)`` triple of its
    witness, with copies of its field and extra dicts; ``extras`` unused).
    :func:`_bulk_matches` then compares a whole prefix with one or two list
    comparisons run in C, rather than one :func:`_matches` call per item:
    a chat's messages are re-checked at every step.
    """

    how: int
    types: list[type]
    values: list[Any]
    extras: list[Any]


def _bulk(witnesses: Sequence[Witness]) -> Bulk | None:
    """The :class:`Bulk` form of ``witnesses``, if they are all of one kind that has one."""
    if not witnesses:
        return None
    how = witnesses[0][0]
    if how == _MODEL:
        frozen = [w[2] for w in witnesses if w[0] == _MODEL]
        if len(frozen) != len(witnesses):
            return None
        return Bulk(_MODEL, [f[0] for f in frozen], frozen, [])
    if how == _SAME:
        same = [w[1] for w in witnesses if w[0] == _SAME]
        if len(same) != len(witnesses):
            return None
        return Bulk(_SAME, list(map(type, same)), same, [])
    return None


def _joined(bulk: Bulk | None, more: Bulk | None) -> Bulk | None:
    if bulk is None or more is None or bulk.how != more.how:
        return None
    return Bulk(
        bulk.how, bulk.types + more.types, bulk.values + more.values, bulk.extras + more.extras
    )


def _bulk_matches(value: list[Any], bulk: Bulk) -> bool:
    """Whether the first items of ``value`` all match ``bulk`` (as :func:`_matches` would).

    Each list comparison runs in C. Scalars: equal types first, then the
    values by ``==``. Models: one ``(class, fields, extra)`` triple per item,
    compared with its witness's in one pass; a tuple comparison stops at the
    first part that differs, so fields are compared only under the same class.
    """
    n = len(bulk.types)
    prefix = value[:n] if len(value) > n else value
    if bulk.how == _SAME:
        return list(map(type, prefix)) == bulk.types and prefix == bulk.values
    if len(prefix) != n:
        return False
    try:
        return list(map(_MODEL_PARTS, prefix)) == bulk.values
    except AttributeError:  # a model built without its extra dict: compare one by one
        return False


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


def _witnesses(items: Sequence[Any]) -> list[Witness] | None:
    out: list[Witness] = []
    for item in items:
        w = _witness(item)
        if w is None:
            return None
        out.append(w)
    return out


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
