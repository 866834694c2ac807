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
from collections.abc import Callable, Sequence
from typing import Any

from flowcore.compat.langgraph._channels import MISSING, Channel

__all__ = ["DeltaChannel", "DeltaValue", "snapshot_value"]

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


class DeltaChannel:
    """Declares a state key whose reducer gets each superstep's writes as one list.

    ``reducer(state, writes) -> new_state`` must be deterministic and give the
    same result however the writes are split into batches. ``typ`` is the
    value's type (taken from the ``Annotated`` type when left out); the key
    starts from its empty value. ``snapshot_frequency`` is accepted for
    LangGraph's API (a positive int): flowcore stores the value at every
    checkpoint as list growth, so it needs no periodic snapshot.

    Example:
        >>> from typing import Annotated, TypedDict
        >>> class State(TypedDict):
        ...     log: Annotated[list, DeltaChannel(lambda s, ws: [*s, *ws])]
    """

    __slots__ = ("reducer", "snapshot_frequency", "typ")

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
        self.reducer = reducer
        self.typ: Any = _concrete(typ) if typ is not None else None
        self.snapshot_frequency = snapshot_frequency

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

    def empty(self, declared: Any) -> Any:
        """A fresh empty value: of ``typ`` when given, else of the declared type."""
        kind = self.typ if self.typ is not None else _concrete(declared)
        if not isinstance(kind, type) or kind is object or inspect.isabstract(kind):
            return MISSING
        try:
            return kind()
        except Exception:  # a type with required arguments has no empty value
            return MISSING


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


class DeltaValue(Channel):
    """The run's channel for a :class:`DeltaChannel` key: one reducer call per superstep."""

    __slots__ = ("empty", "reducer")

    def __init__(self, key: str, reducer: Callable[[Any, Sequence[Any]], Any], empty: Any) -> None:
        super().__init__(key)
        self.reducer = reducer
        self.empty = empty

    def _base(self) -> Any:
        if self.value is not MISSING:
            return self.value
        # Each run gets its own empty value: a reducer may extend it in place.
        return copy.copy(self.empty) if self.empty is not MISSING else None

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        self.value = self.reducer(self._base(), list(values))
        return True

    def restore(self, stored: Any) -> None:
        self.value = snapshot_value(stored)
