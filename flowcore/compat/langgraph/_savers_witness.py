"""Witnesses: frozen copies that tell whether a stored list item is still what was stored.

:mod:`~flowcore.compat.langgraph._savers_layout` stores a list that only
grew as a tail, and proves it only grew with these. Plain data (exact
dicts, lists, tuples, strings, numbers, bytes) is compared by its marshal
bytes, so ``1`` and ``1.0`` or ``True`` differ as they do once stored;
immutable scalars and enum members by type and value; pydantic models by
class and copies of their field and extra dicts; anything else with ``==``
against a deep copy. A list whose items are all of one kind is checked in
bulk: one or two list comparisons run in C (:func:`_bulk_matches`).
"""

from __future__ import annotations

import copy
import enum
import marshal
import operator
from collections.abc import Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel

__all__ = ["Bulk", "Witness"]


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


def _witnesses(items: Sequence[Any]) -> list[Witness] | None:
    out: list[Witness] = []
    for item in items:
        w = _witness(item)
        if w is None:
            return None
        out.append(w)
    return out
