"""``DeltaChannel``: a state key whose reducer folds a whole superstep's writes at once.

LangGraph 1.x declares such a key as ``Annotated[list, DeltaChannel(reducer)]``.
Its reducer takes the current value and the *list* of the superstep's writes,
``reducer(state, [w1, w2, ...]) -> new_state``, and must not care how the
writes are batched: ``reducer(reducer(s, xs), ys) == reducer(s, xs + ys)``.
LangGraph relies on that to rebuild the value from saved writes instead of
storing it at every checkpoint.

flowcore's savers already store a growing list as the items appended since
the parent checkpoint (see ``_savers_layout``), which is the saving
``DeltaChannel`` is for, so here the channel checkpoints its value like any
reducer key and every fork, time-travel and ``update_state`` reads it back
whole. A snapshot blob LangGraph wrote for the key (``_DeltaSnapshot``, from
``langgraph-checkpoint``) is read back as the value it wraps, and a plain value
(a thread written while the key was an ordinary reducer) is taken as it is.
"""

from __future__ import annotations

import collections.abc
import copy
import inspect
import uuid
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from flowcore.compat.langgraph._channel_api import BaseChannel
from flowcore.compat.langgraph._channels import MISSING, Channel
from flowcore.compat.langgraph._errors import InvalidUpdateError
from flowcore.compat.langgraph._messages import BaseMessage, RemoveMessage, convert_to_messages
from flowcore.compat.langgraph._messages_langchain import langchain_family, to_langchain

__all__ = [
    "DeltaChannel",
    "DeltaValue",
    "message_delta_keys",
    "messages_delta_reducer",
    "overwrite_of",
    "snapshot_value",
    "with_message_ids",
]

_OVERWRITE = "__overwrite__"

_ABSTRACT: dict[Any, type] = {
    collections.abc.Sequence: list,
    collections.abc.MutableSequence: list,
    collections.abc.Set: set,
    collections.abc.MutableSet: set,
    collections.abc.Mapping: dict,
    collections.abc.MutableMapping: dict,
}


def _concrete(typ: Any) -> Any:
    """The class to build an empty value from (``list`` for ``Sequence``, ...)."""
    origin = getattr(typ, "__origin__", None) or typ
    return _ABSTRACT.get(origin, origin)


class DeltaChannel(BaseChannel):
    """A state key whose reducer gets each superstep's writes as one list.

    Used two ways, as in LangGraph: declared on a state key
    (``Annotated[list, DeltaChannel(reducer)]``, the key's type filling in
    ``typ``), or named as a channel of a low-level ``Pregel`` graph. Either way
    the run's channel is a :class:`DeltaChannel` too (see :meth:`bound` and
    :meth:`from_checkpoint`).

    ``reducer(state, writes) -> new_state`` must be deterministic and give the
    same result however the writes are split into batches. ``typ`` is the
    value's type (``list`` when left out and no annotation gives one); a fresh
    channel starts from its empty value. ``snapshot_frequency`` is accepted
    for LangGraph's API (a positive int): flowcore stores the value at every
    checkpoint as list growth, so it needs no periodic snapshot.

    Example:
        >>> from typing import Annotated, TypedDict
        >>> class State(TypedDict):
        ...     log: Annotated[list, DeltaChannel(lambda s, ws: [*s, *ws])]
        >>> channel = DeltaChannel(lambda s, ws: [*s, *ws]).from_checkpoint(MISSING)
        >>> channel.update([1, 2]), channel.get()
        (True, [1, 2])
    """

    __slots__ = ("reducer", "snapshot_frequency", "start")

    def __init__(
        self,
        reducer: Callable[[Any, Sequence[Any]], Any],
        typ: type[Any] | None = None,
        *,
        snapshot_frequency: int = 100,
    ) -> None:
        if not callable(reducer):
            raise TypeError(
                f"DeltaChannel needs a callable reducer(state, writes), got {reducer!r}"
            )
        if (
            isinstance(snapshot_frequency, bool)
            or not isinstance(snapshot_frequency, int)
            or snapshot_frequency <= 0
        ):
            raise ValueError(
                f"snapshot_frequency must be a positive int, got {snapshot_frequency!r}"
            )
        super().__init__(_concrete(typ) if typ is not None else None)
        self.reducer = reducer
        self.snapshot_frequency = snapshot_frequency
        # The value a fresh channel holds: the empty value of its type (MISSING: none).
        self.start: Any = _empty_of(list if typ is None else self.typ)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeltaChannel):
            return NotImplemented
        return (
            self.reducer is other.reducer or self.reducer == other.reducer
        ) and self.snapshot_frequency == other.snapshot_frequency

    def __hash__(self) -> int:
        return hash((DeltaChannel, self.snapshot_frequency))

    def __repr__(self) -> str:
        name = getattr(self.reducer, "__name__", repr(self.reducer))
        return f"DeltaChannel({name}, snapshot_frequency={self.snapshot_frequency})"

    @property
    def ValueType(self) -> Any:
        """The type of the value (``list`` unless given)."""
        return list if self.typ is None else self.typ

    @property
    def UpdateType(self) -> Any:
        """The type of one write."""
        return self.ValueType

    # ------------------------------------------------------------ making
    def _blank(self) -> DeltaChannel:
        """A new channel with this one's settings and key, holding nothing."""
        cls = self.__class__
        new = cls.__new__(cls)
        Channel.__init__(new, self.key)
        new.typ = self.typ
        new.reducer = self.reducer
        new.snapshot_frequency = self.snapshot_frequency
        new.start = self.start
        return new

    def bound(self, key: str, declared: Any) -> DeltaChannel:
        """The run's channel for state key ``key`` declared with type ``declared``.

        Without its own ``typ`` the channel takes the declared one; it reads
        as that type's empty value before anything is written.

        Example:
            >>> DeltaChannel(lambda s, ws: s).bound("tags", set).get()
            set()
        """
        new = self._blank()
        new.key = key
        if self.typ is None:
            new.start = _empty_of(_concrete(declared))
        new.value = new._fresh()
        return new

    def _fresh(self) -> Any:
        # A copy per use: a reducer may change the value it is given in place.
        return MISSING if self.start is MISSING else copy.copy(self.start)

    def copy(self) -> DeltaChannel:
        """An independent channel holding (a shallow copy of) the same value."""
        new = self._blank()
        new.value = self.value if self.value is MISSING else copy.copy(self.value)
        return new

    def from_checkpoint(self, checkpoint: Any) -> DeltaChannel:
        """A new channel holding what ``checkpoint`` stored.

        ``MISSING`` gives the empty value, a LangGraph snapshot blob the value
        it wraps, anything else (a plain reducer's stored value) itself.

        Example:
            >>> DeltaChannel(lambda s, ws: s).from_checkpoint([1]).get()
            [1]
        """
        new = self._blank()
        new._load(checkpoint)
        return new

    def _load(self, checkpoint: Any) -> None:
        self.value = self._fresh() if checkpoint is MISSING else snapshot_value(checkpoint)

    # ---------------------------------------------------------- storing
    def checkpoint(self) -> Any:
        """``MISSING``, as LangGraph's: the value is rebuilt from writes, not stored whole.

        flowcore's savers store the value through :meth:`snapshot` instead.
        """
        return MISSING

    def snapshot(self) -> Any:
        return self.value

    def restore(self, stored: Any) -> None:
        self.value = snapshot_value(stored)

    # ---------------------------------------------------------- writing
    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        replaced = [found for found in map(overwrite_of, values) if found is not None]
        if len(replaced) > 1:
            raise InvalidUpdateError(
                f"At key '{self.key}': Can receive only one Overwrite value per super-step."
            )
        if replaced:
            # The Overwrite wins over the superstep's other writes.
            self.value = self._overwritten(replaced[0][0])
            return True
        base = self._fresh() if self.value is MISSING else self.value
        if base is MISSING:
            base = None
        writes = list(values) if self.reducer is messages_delta_reducer else _with_ids(values)
        self.value = self.reducer(base, writes)
        return True

    def _overwritten(self, new: Any) -> Any:
        """The value an ``Overwrite(new)`` leaves (``None``: the empty value)."""
        if new is None:
            return self._fresh()
        if self.reducer is messages_delta_reducer and isinstance(new, list | tuple):
            return messages_delta_reducer([], [list(new)])
        if isinstance(new, list | tuple):
            for item in new:
                if _is_message(item):
                    _stamped(item, in_list=False)
        return copy.copy(new)

    def replay_writes(self, writes: Sequence[Any]) -> None:
        """Fold saved writes, oldest first, in one reducer call.

        Each write is a ``(task_id, channel, value)`` triple. The last
        ``Overwrite`` among them resets the value; only the writes after it
        are folded in.

        Example:
            >>> channel = DeltaChannel(lambda s, ws: [*s, *ws]).from_checkpoint([0])
            >>> channel.replay_writes([("t", "k", 1), ("t", "k", 2)]); channel.get()
            [0, 1, 2]
        """
        values = [write[2] for write in writes]
        if not values:
            return
        base = self.value
        rest = values
        for at, value in enumerate(values):
            found = overwrite_of(value)
            if found is not None:
                base = self._overwritten(found[0])
                rest = values[at + 1 :]
        if base is MISSING:
            base = self._fresh()
        self.value = self.reducer(None if base is MISSING else base, list(rest)) if rest else base


DeltaValue = DeltaChannel
"""The run's channel for a delta key (the same class; kept for the runtime's checks)."""


def _empty_of(kind: Any) -> Any:
    """A fresh empty value of ``kind`` (MISSING when it has none)."""
    if not isinstance(kind, type) or kind is object or inspect.isabstract(kind):
        return MISSING
    try:
        return kind()
    except Exception:  # a type with required arguments has no empty value
        return MISSING


def overwrite_of(write: Any) -> tuple[Any] | None:
    """``(value,)`` when ``write`` replaces the key's value outright, else None.

    An ``Overwrite(value)`` object (told by its class name and ``value`` field,
    so LangGraph's own works too) or its wire form ``{"__overwrite__": value}``.

    Example:
        >>> overwrite_of({"__overwrite__": [1]}), overwrite_of([1])
        (([1],), None)
    """
    if isinstance(write, dict):
        return (write[_OVERWRITE],) if len(write) == 1 and _OVERWRITE in write else None
    if type(write).__name__ == "Overwrite" and hasattr(write, "value"):
        return (write.value,)
    return None


def snapshot_value(stored: Any) -> Any:
    """The value a stored blob holds: a LangGraph snapshot blob is unwrapped.

    The blob class lives in ``langgraph-checkpoint``, which flowcore does not
    import, so it is told by its name and its one ``value`` field.

    Example:
        >>> snapshot_value([1, 2])
        [1, 2]
    """
    if type(stored).__name__ == "_DeltaSnapshot" and hasattr(stored, "value"):
        return stored.value
    return stored


def _is_message(item: Any) -> bool:
    """A message object, flowcore's or another library's (told by its fields)."""
    if isinstance(item, BaseMessage):
        return True
    return not isinstance(item, str | dict | list | tuple) and all(
        hasattr(item, field) for field in ("id", "type", "content")
    )


_ROLES = frozenset({"user", "human", "assistant", "ai", "tool", "system", "function", "remove"})


def _is_message_dict(item: Any) -> bool:
    return isinstance(item, dict) and (item.get("role") in _ROLES or item.get("type") in _ROLES)


def _stamped(item: Any, *, in_list: bool) -> Any:
    """``item`` with a message id when it is a message without one."""
    if _is_message(item):
        if not item.id:
            item.id = str(uuid.uuid4())
        return item
    if _is_message_dict(item) and not item.get("id"):
        if in_list:
            return _stamped(_as_message(item, langchain_family([item])), in_list=False)
        return {**item, "id": str(uuid.uuid4())}
    return item


def _with_ids(values: Sequence[Any]) -> list[Any]:
    """The writes with every message given an id, so a message can be targeted later
    (by ``RemoveMessage`` or a replacement) whatever reducer the key has."""
    out: list[Any] = []
    for value in values:
        if isinstance(value, list):
            stamped = [_stamped(item, in_list=True) for item in value]
            changed = any(new is not old for new, old in zip(stamped, value, strict=True))
            out.append(stamped if changed else value)
        else:
            out.append(_stamped(value, in_list=False))
    return out


def messages_delta_reducer(state: Any, writes: Sequence[Any]) -> list[Any]:
    """A :class:`DeltaChannel` reducer for chat messages, merged by id in one pass.

    Each write is a message-like value or a list of them (coerced like
    ``add_messages`` does). A message whose id is already held replaces it in
    place, ``RemoveMessage(id=...)`` drops the held message (an unknown id is
    ignored, so batching never matters), and a message without an id is given
    a fresh one and appended. ``REMOVE_ALL_MESSAGES`` is not understood here:
    use ``Overwrite`` or ``add_messages`` for that. LangGraph names it
    ``_messages_delta_reducer``.

    Example:
        >>> from flowcore.compat.langgraph import AIMessage, HumanMessage
        >>> out = messages_delta_reducer([HumanMessage("hi", id="1")], [[AIMessage("yo", id="2")]])
        >>> [m.id for m in out]
        ['1', '2']
    """
    flat: list[Any] = []
    for write in writes:
        if isinstance(write, list):
            flat.extend(write)
        else:
            flat.append(write)
    # Strings, pairs and dicts become messages of the family add_messages would pick.
    family = langchain_family(state or (), flat)
    result: list[Any] = [_as_message(m, family) for m in state or ()]
    index = {m.id: i for i, m in enumerate(result) if m.id is not None}
    for message in (_as_message(m, family) for m in flat):
        if not message.id:  # None or an empty id
            message.id = str(uuid.uuid4())
        if isinstance(message, RemoveMessage) or getattr(message, "type", None) == "remove":
            at = index.pop(message.id, None)
            if at is not None:
                result[at] = None
        elif message.id in index:
            result[index[message.id]] = message
        else:
            index[message.id] = len(result)
            result.append(message)
    return [m for m in result if m is not None]


def message_delta_keys(channels: Any) -> frozenset[str]:
    """The keys of ``channels`` that are :class:`DeltaChannel` s of chat messages.

    Example:
        >>> message_delta_keys({"m": DeltaChannel(messages_delta_reducer), "x": None})
        frozenset({'m'})
    """
    return frozenset(
        key
        for key, channel in channels.items()
        if isinstance(channel, DeltaChannel) and channel.reducer is messages_delta_reducer
    )


def with_message_ids(channels: Any, writes: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``writes`` with each message-like written to a messages :class:`DeltaChannel` a message.

    For a channel whose reducer is :func:`messages_delta_reducer`, a string,
    role pair or message dict (alone or in a list) becomes a message, and
    every message gets an id, before the writes are saved: a message reads
    back with the same id each time, and a write that cannot be a message
    fails its task instead of being saved. The writes given are not changed.

    Example:
        >>> channel = DeltaChannel(messages_delta_reducer).bound("m", list)
        >>> [(key, message)] = with_message_ids({"m": channel}, [("m", "hi")])
        >>> key, message.content, bool(message.id)
        ('m', 'hi', True)
    """
    out = writes
    for at, (key, value) in enumerate(writes):
        channel = channels.get(key)
        if (
            not isinstance(channel, DeltaChannel)
            or channel.reducer is not messages_delta_reducer
            or overwrite_of(value) is not None
        ):
            continue
        items = value if isinstance(value, list) else [value]
        family = langchain_family(channel.value if isinstance(channel.value, list) else (), items)
        made = [_message_with_id(item, family) for item in items]
        if out is writes:
            out = list(writes)
        out[at] = (key, made if isinstance(value, list) else made[0])
    return out


def _message_with_id(item: Any, family: ModuleType | None) -> Any:
    message = _as_message(item, family)
    if not message.id:
        message.id = str(uuid.uuid4())
    return message


def _as_message(item: Any, family: ModuleType | None = None) -> Any:
    """A message object for ``item``; another library's message (LangChain's) is kept as is.

    A string, role pair or role dict becomes a LangChain message when ``family``
    (``langchain_core.messages``) is given, else one of flowcore's.
    """
    if _is_message(item):
        return item
    if family is not None:
        return to_langchain([item], family)[0]
    return convert_to_messages([item])[0]
