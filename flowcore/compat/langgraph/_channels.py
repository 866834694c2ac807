"""Channels: where a LangGraph-style run keeps each state key and each trigger.

Every state key is a channel that takes the values written to it in one
superstep at once: a plain key keeps the one value it was given (two values
in one superstep are an error), a key with a reducer folds them in. The
other channels say which nodes run next: a node's ``branch:to:`` channel is
written by the edges that lead to it, and a join's barrier opens only once
every source of the join has written to it. Deferred nodes' channels open
only when the run would otherwise end.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from flowcore.compat.langgraph._errors import InvalidUpdateError
from flowcore.compat.langgraph._types import Overwrite, overwritten

__all__ = [
    "MISSING",
    "BinaryOperatorAggregate",
    "Channel",
    "EphemeralValue",
    "LastValue",
    "LastValueAfterFinish",
    "NamedBarrierValue",
    "clear",
    "mark_seen",
    "pure_reducer",
    "read_available",
]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""A channel that holds no value."""


class Channel:
    """A channel's contract; each subclass keeps ``value`` and answers these calls."""

    __slots__ = ("key", "value")
    _copied_slots: tuple[str, ...] = ()
    plain_read: bool = True
    """True when the class keeps :meth:`get` and :meth:`is_available` as they are here.

    The run loop then reads ``value`` itself (``MISSING``: empty) instead of
    making two calls per key and step.
    """

    def __init__(self, key: str) -> None:
        self.key = key
        self.value: Any = MISSING

    def update(self, values: Sequence[Any]) -> bool:
        """Take this superstep's writes (maybe none); return whether the channel changed."""
        raise NotImplementedError

    def is_available(self) -> bool:
        """Whether the channel holds a value a node may read or be triggered by."""
        return self.value is not MISSING

    def get(self) -> Any:
        """The value (``MISSING`` when empty)."""
        return self.value

    def consume(self) -> bool:
        """A node triggered by this channel has run; return whether that changed it."""
        return False

    def finish(self) -> bool:
        """The run is about to end; return whether that changed the channel."""
        return False

    def snapshot(self) -> Any:
        """What a checkpoint stores for this channel."""
        return self.value

    def restore(self, stored: Any) -> None:
        """Load what :meth:`snapshot` stored."""
        self.value = stored

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.plain_read = cls.get is Channel.get and cls.is_available is Channel.is_available
        # The slots a copy takes besides key and value (which every channel sets), worked
        # out once per class: a router reads a copy of what its node wrote at every step.
        cls._copied_slots = tuple(
            slot
            for klass in cls.__mro__
            for slot in getattr(klass, "__slots__", ())
            if slot not in ("key", "value")
        )

    def copy(self) -> Channel:
        """An independent channel with the same value."""
        cls = self.__class__
        clone = cls.__new__(cls)
        clone.key = self.key
        clone.value = self.value
        for slot in cls._copied_slots:
            try:  # noqa: SIM105 - suppress() costs a context manager per slot
                setattr(clone, slot, getattr(self, slot))
            except AttributeError:  # a slot never set stays unset in the copy
                pass
        return clone

    def preview(self, values: Sequence[Any]) -> Channel:
        """A copy of this channel with ``values`` applied (this channel is unchanged).

        Example:
            >>> LastValue("x").preview([1]).get()
            1
        """
        clone = self.copy()
        clone.update(values)
        return clone


class LastValue(Channel):
    """A plain state key: at most one value per superstep."""

    __slots__ = ()

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        if len(values) != 1:
            raise InvalidUpdateError(
                f"At key '{self.key}': Can receive only one value per step. "
                "Use an Annotated key to handle multiple values."
            )
        self.value = values[-1]
        return True


class BinaryOperatorAggregate(Channel):
    """A state key with a reducer: every value of a superstep is folded in, in order.

    A router reads its node's writes folded in ahead of the superstep's own
    fold (:meth:`preview`). When the reducer is one known to be a pure
    function of its arguments (:func:`pure_reducer`), the folded value is
    kept, and the superstep's fold of the very same writes onto the very same
    value takes it instead of calling the reducer again: a chat's
    ``add_messages`` would otherwise merge the whole message list twice per
    step.
    """

    __slots__ = ("ahead", "operator")

    def __init__(self, key: str, operator: Callable[[Any, Any], Any], initial: Any) -> None:
        super().__init__(key)
        self.operator = operator
        self.value = initial
        # (value folded onto, the writes, a private copy of the result) of the last preview.
        self.ahead: tuple[Any, list[Any], Any] | None = None

    def update(self, values: Sequence[Any]) -> bool:
        ahead = self.ahead
        if ahead is not None:
            self.ahead = None
            if ahead[0] is self.value and _same_items(ahead[1], values):
                self.value = ahead[2]
                return True
        if not values:
            return False
        replaced = False
        for value in values:
            # Only these two types can be one: the usual write skips the call.
            is_overwrite, new = (
                overwritten(value) if isinstance(value, Overwrite | dict) else (False, None)
            )
            if is_overwrite:
                if replaced:
                    raise InvalidUpdateError(
                        f"At key '{self.key}': Can receive only one Overwrite value per super-step."
                    )
                self.value, replaced = new, True
            elif self.value is MISSING:
                self.value = value
            elif not replaced:
                # What the superstep wrote before the Overwrite is replaced by it, and
                # what it wrote after is dropped, as in LangGraph.
                self.value = self.operator(self.value, value)
        return True

    def copy(self) -> Channel:
        if type(self) is BinaryOperatorAggregate:
            # This class's own slots, set directly: a router reads a copy at every step.
            clone = BinaryOperatorAggregate.__new__(BinaryOperatorAggregate)
            clone.key, clone.value, clone.operator = self.key, self.value, self.operator
        else:
            copied = super().copy()
            assert isinstance(copied, BinaryOperatorAggregate)
            clone = copied
        clone.ahead = None  # a kept result belongs to this channel alone
        return clone

    def preview(self, values: Sequence[Any]) -> Channel:
        """A copy of this channel with ``values`` folded in (this channel is unchanged).

        Example:
            >>> import operator
            >>> channel = BinaryOperatorAggregate("xs", operator.add, [1])
            >>> channel.preview([[2]]).get(), channel.get()
            ([1, 2], [1])
        """
        clone = self.copy()
        clone.update(values)
        self.ahead = None
        if values and self.operator in _PURE_REDUCERS:
            result = clone.value
            kind = type(result)
            if kind is list:
                # The caller may change the list it reads; the fold gets a copy of its own.
                self.ahead = (self.value, list(values), list(result))
            elif kind in _IMMUTABLE_RESULTS:
                self.ahead = (self.value, list(values), result)
        return clone


# Reducers whose result depends only on their arguments (see BinaryOperatorAggregate.preview).
_PURE_REDUCERS: set[Any] = {operator.add}
_IMMUTABLE_RESULTS = frozenset({int, float, str, bytes, tuple, bool, type(None)})


def read_available(channels: Mapping[str, Channel], keys: Iterable[str]) -> dict[str, Any]:
    """The values of the channels named ``keys`` that hold one, in the order of ``keys``.

    A channel of a class with :attr:`Channel.plain_read` is read through
    ``value`` (no ``get()``/``is_available()`` call); names not in
    ``channels`` are left out.

    Example:
        >>> x, y = LastValue("x"), LastValue("y")
        >>> x.update([1])
        True
        >>> read_available({"x": x, "y": y}, ["x", "y", "z"])
        {'x': 1}
    """
    values: dict[str, Any] = {}
    for key in keys:
        channel = channels.get(key)
        if channel is None:
            continue
        if channel.plain_read:
            value = channel.value
            if value is not MISSING:
                values[key] = value
        elif channel.is_available():
            values[key] = channel.get()
    return values


def pure_reducer(reducer: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """Mark ``reducer`` as a pure function of its two arguments (flowcore's own reducers).

    A fold may then reuse a result computed for the same value and writes.

    Example:
        >>> def longest(a, b): return max(a, b, key=len)
        >>> pure_reducer(longest) is longest
        True
    """
    _PURE_REDUCERS.add(reducer)
    return reducer


def _same_items(first: list[Any], second: Sequence[Any]) -> bool:
    """Whether two write lists hold the very same objects, in order."""
    if len(first) != len(second):
        return False
    for a, b in zip(first, second, strict=True):  # noqa: SIM110 - no generator per fold
        if a is not b:
            return False
    return True


def clear(channel: Channel) -> bool:
    """Empty a one-step channel that got no write this step; whether it held a value.

    Example:
        >>> channel = EphemeralValue("x")
        >>> channel.update([1])
        True
        >>> clear(channel), channel.value
        (True, MISSING)
    """
    if channel.value is MISSING:
        return False
    channel.value = MISSING
    return True


def mark_seen(key: str, names: frozenset[Any], seen: set[Any], values: Sequence[Any]) -> bool:
    """Add a barrier's writes to ``seen``; whether any was new. A name not awaited raises.

    Example:
        >>> seen: set[str] = set(); mark_seen("k", frozenset({"a", "b"}), seen, ["a"]), seen
        (True, {'a'})
    """
    changed = False
    for value in values:
        if value not in names:
            raise InvalidUpdateError(
                f"At key '{key}': Value {value!r} not in {sorted(names, key=str)}"
            )
        if value not in seen:
            seen.add(value)
            changed = True
    return changed


class EphemeralValue(Channel):
    """A trigger that holds a value for one superstep only (``branch:to:<node>``)."""

    __slots__ = ()

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return clear(self)
        self.value = values[-1]
        return True


class LastValueAfterFinish(Channel):
    """The trigger of a deferred node: it opens only when the run would otherwise end."""

    __slots__ = ("finished",)

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.finished = False

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        self.value = values[-1]
        self.finished = False
        return True

    def is_available(self) -> bool:
        return self.value is not MISSING and self.finished

    def consume(self) -> bool:
        if self.finished:
            self.finished = False
            self.value = MISSING
            return True
        return False

    def finish(self) -> bool:
        if not self.finished and self.value is not MISSING:
            self.finished = True
            return True
        return False

    def snapshot(self) -> Any:
        return None if self.value is MISSING else [self.value, self.finished]

    def restore(self, stored: Any) -> None:
        if stored is None:
            self.value, self.finished = MISSING, False
        else:
            self.value, self.finished = stored[0], bool(stored[1])


class NamedBarrierValue(Channel):
    """A join's barrier: available once every named source has written to it."""

    __slots__ = ("deferred", "finished", "names", "seen")

    def __init__(self, key: str, names: set[str], *, deferred: bool = False) -> None:
        super().__init__(key)
        self.names = frozenset(names)
        self.seen: set[str] = set()
        self.deferred = deferred
        self.finished = False

    def update(self, values: Sequence[Any]) -> bool:
        return mark_seen(self.key, self.names, self.seen, values)

    def is_available(self) -> bool:
        full = self.seen == self.names
        return full and (self.finished or not self.deferred)

    def get(self) -> Any:
        return None if self.is_available() else MISSING

    def consume(self) -> bool:
        if self.seen == self.names and (self.finished or not self.deferred):
            self.seen = set()
            self.finished = False
            return True
        return False

    def finish(self) -> bool:
        if self.deferred and not self.finished and self.seen == self.names:
            self.finished = True
            return True
        return False

    def snapshot(self) -> Any:
        if self.finished:
            # A deferred join that opened: a pause right after must find it still open.
            return {"seen": sorted(self.seen), "finished": True}
        return sorted(self.seen) if self.seen else None

    def restore(self, stored: Any) -> None:
        if isinstance(stored, dict):
            self.seen = set(stored.get("seen") or ())
            self.finished = bool(stored.get("finished"))
            return
        self.seen = set(stored or ())
        self.finished = False

    def copy(self) -> Channel:
        clone = NamedBarrierValue(self.key, set(self.names), deferred=self.deferred)
        clone.seen = set(self.seen)
        clone.finished = self.finished
        return clone
