"""LangGraph's public channel classes (``langgraph.channels.*``) on flowcore's channels.

A low-level ``Pregel`` graph names its channels itself: ``LastValue(int)``,
``Topic(str, accumulate=True)``, ``BinaryOperatorAggregate(int, operator.add)``
and so on. These classes are the planner's channels (:mod:`._channels`) with
LangGraph's public surface on top: the value type as the first argument,
``get()`` raising :class:`EmptyChannelError` when empty, and
``checkpoint()`` / ``from_checkpoint()`` for what a checkpoint stores. The
planner keeps talking to them through ``snapshot()`` / ``restore()`` as it
does to every other channel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from flowcore.compat.langgraph._channels import MISSING, Channel, clear, mark_seen
from flowcore.compat.langgraph._channels import EphemeralValue as _Ephemeral
from flowcore.compat.langgraph._channels import LastValue as _LastValue
from flowcore.compat.langgraph._errors import EmptyChannelError, InvalidUpdateError

__all__ = [
    "AnyValue",
    "BaseChannel",
    "BinaryOperatorAggregate",
    "EphemeralValue",
    "LastValue",
    "NamedBarrierValue",
    "Topic",
    "UntrackedValue",
    "is_one_step",
]


class BaseChannel(Channel):
    """What every public channel adds to the planner's channel: LangGraph's API.

    Example:
        >>> LastValue(int).from_checkpoint(3).get()
        3
    """

    __slots__ = ("typ",)

    def __init__(self, typ: Any, key: str = "") -> None:
        Channel.__init__(self, key)
        self.typ = typ

    @property
    def ValueType(self) -> Any:
        """The type of what :meth:`get` returns."""
        return self.typ

    @property
    def UpdateType(self) -> Any:
        """The type of one value passed to :meth:`update`."""
        return self.typ

    def get(self) -> Any:
        """The current value; raises ``EmptyChannelError`` when there is none."""
        if not self.is_available():
            raise EmptyChannelError(f"channel {self.key!r} is empty")
        return self.value

    def checkpoint(self) -> Any:
        """What a checkpoint stores for this channel (``MISSING`` when nothing)."""
        return self.value

    def _load(self, checkpoint: Any) -> None:
        self.value = checkpoint

    def from_checkpoint(self, checkpoint: Any) -> Any:
        """A new channel like this one, holding what ``checkpoint`` stored."""
        clone = self.copy()
        assert isinstance(clone, BaseChannel)
        clone._load(checkpoint)
        return clone

    def snapshot(self) -> Any:
        return self.checkpoint()

    def restore(self, stored: Any) -> None:
        self._load(stored)


class LastValue(BaseChannel, _LastValue):
    """The last value written; two writes in one superstep are an error.

    Example:
        >>> channel = LastValue(int)
        >>> channel.update([3]), channel.get()
        (True, 3)
    """

    __slots__ = ()


class UntrackedValue(BaseChannel):
    """The last value written, never stored in a checkpoint (``guard``: one write a step).

    Example:
        >>> channel = UntrackedValue(dict)
        >>> channel.update([{"a": 1}]), channel.checkpoint() is MISSING
        (True, True)
    """

    __slots__ = ("guard",)

    def __init__(self, typ: Any, guard: bool = True, key: str = "") -> None:
        super().__init__(typ, key)
        self.guard = guard

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        if self.guard and len(values) != 1:
            raise InvalidUpdateError(
                f"At key '{self.key}': UntrackedValue(guard=True) can receive only one "
                "value per step. Use guard=False if you want to store any one of multiple "
                "values."
            )
        self.value = values[-1]
        return True

    def checkpoint(self) -> Any:
        return MISSING

    def _load(self, checkpoint: Any) -> None:
        self.value = MISSING


class EphemeralValue(BaseChannel, _Ephemeral):
    """A value that lasts one superstep (``guard``: at most one write per step).

    Example:
        >>> channel = EphemeralValue(int)
        >>> channel.update([1]), channel.update([]), channel.is_available()
        (True, True, False)
    """

    __slots__ = ("guard",)

    def __init__(self, typ: Any, guard: bool = True, key: str = "") -> None:
        super().__init__(typ, key)
        self.guard = guard

    def update(self, values: Sequence[Any]) -> bool:
        if self.guard and len(values) > 1:
            raise InvalidUpdateError(
                f"At key '{self.key}': EphemeralValue(guard=True) can receive only one "
                "value per step. Use guard=False if you want to store any one of multiple "
                "values."
            )
        return _Ephemeral.update(self, values)


class AnyValue(BaseChannel):
    """The last of the values written in a superstep; cleared by a step that writes none.

    Example:
        >>> channel = AnyValue(int)
        >>> channel.update([1, 2]), channel.get()
        (True, 2)
    """

    __slots__ = ()

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return clear(self)
        self.value = values[-1]
        return True


class BinaryOperatorAggregate(BaseChannel):
    """Every write folded in with ``operator``, starting from ``typ()`` when it has one.

    Example:
        >>> import operator
        >>> channel = BinaryOperatorAggregate(int, operator.add)
        >>> channel.update([1, 2]), channel.get()
        (True, 3)
    """

    __slots__ = ("operator",)

    def __init__(self, typ: Any, operator: Callable[[Any, Any], Any], key: str = "") -> None:
        super().__init__(typ, key)
        self.operator = operator
        self.value = _initial(typ)

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        rest = list(values)
        if self.value is MISSING:
            self.value = rest.pop(0)
        for value in rest:
            self.value = self.operator(self.value, value)
        return True

    def _load(self, checkpoint: Any) -> None:
        self.value = _initial(self.typ) if checkpoint is MISSING else checkpoint


def _initial(typ: Any) -> Any:
    # LangGraph starts from the type's empty value when it can make one (0, [], {}).
    origin = getattr(typ, "__origin__", typ)
    try:
        return origin()
    except Exception:
        return MISSING


class Topic(BaseChannel):
    """Many values per superstep, as a list; kept across steps only with ``accumulate``.

    A written list is spread into its items.

    Example:
        >>> channel = Topic(str)
        >>> channel.update(["a", ["b", "c"]]), channel.get()
        (True, ['a', 'b', 'c'])
    """

    __slots__ = ("accumulate",)

    def __init__(self, typ: Any, accumulate: bool = False, key: str = "") -> None:
        super().__init__(typ, key)
        self.accumulate = accumulate
        self.value = []

    @property
    def ValueType(self) -> Any:
        return Sequence[self.typ]  # type: ignore[name-defined]

    @property
    def UpdateType(self) -> Any:
        return self.typ | list[self.typ]  # type: ignore[name-defined]

    def update(self, values: Sequence[Any]) -> bool:
        changed = False
        if not self.accumulate:
            changed = bool(self.value)
            self.value = []
        flat = [item for v in values for item in (v if isinstance(v, list) else [v])]
        if flat:
            self.value = [*self.value, *flat]
            changed = True
        return changed

    def is_available(self) -> bool:
        return bool(self.value)

    def checkpoint(self) -> Any:
        return list(self.value) if self.value else MISSING

    def _load(self, checkpoint: Any) -> None:
        self.value = [] if checkpoint is MISSING or checkpoint is None else list(checkpoint)

    def copy(self) -> Channel:
        clone = super().copy()
        clone.value = list(self.value)
        return clone


class NamedBarrierValue(BaseChannel):
    """Available (as None) once each of ``names`` has been written; reading it resets it.

    Example:
        >>> channel = NamedBarrierValue(str, {"a", "b"})
        >>> channel.update(["a"]), channel.is_available()
        (True, False)
    """

    __slots__ = ("names", "seen")

    def __init__(self, typ: Any, names: set[Any], key: str = "") -> None:
        super().__init__(typ, key)
        self.names = frozenset(names)
        self.seen: set[Any] = set()

    def update(self, values: Sequence[Any]) -> bool:
        return mark_seen(self.key, self.names, self.seen, values)

    def is_available(self) -> bool:
        return self.seen == self.names

    def consume(self) -> bool:
        if self.seen == self.names:
            self.seen = set()
            return True
        return False

    def get(self) -> Any:
        if not self.is_available():
            raise EmptyChannelError(f"channel {self.key!r} is empty")
        return None

    def checkpoint(self) -> Any:
        return set(self.seen)

    def _load(self, checkpoint: Any) -> None:
        self.seen = set() if checkpoint is MISSING or checkpoint is None else set(checkpoint)

    def snapshot(self) -> Any:
        return sorted(self.seen, key=str) if self.seen else None

    def copy(self) -> Channel:
        clone = NamedBarrierValue(self.typ, set(self.names), self.key)
        clone.seen = set(self.seen)
        return clone


def is_one_step(channel: Channel) -> bool:
    """Whether a public channel forgets its value after a superstep that did not write it.

    Example:
        >>> is_one_step(Topic(str)), is_one_step(Topic(str, accumulate=True))
        (True, False)
    """
    if isinstance(channel, Topic):
        return not channel.accumulate
    return isinstance(channel, _Ephemeral | AnyValue)
