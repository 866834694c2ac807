"""The serializer's fast path: values made only of plain JSON types, encoded as they are.

Most of what a checkpoint holds is plain JSON: exact dicts with string keys,
lists, strings, ints, bools, None and finite floats. Such a value needs no
tags, so :mod:`~flowcore.checkpoint.serde` checks it with
:func:`is_plain_json` (one walk, no copy) and hands it to the C JSON encoder
(:func:`to_json`) as it is; anything else is rebuilt with tags first.

:func:`is_plain_json_or` and :func:`encoder_with` let a caller that knows how
to write some other objects (a saver that already holds a chat message's
bytes) keep the fast path for a value holding them: the walk asks the caller
about each such object, and the encoder's ``default`` hook, which the C
encoder calls only for objects that are not JSON types, writes them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from flowcore.checkpoint.value_checks import _LIMIT

__all__ = ["TAG", "encoder_with", "is_plain_json", "is_plain_json_or", "to_json"]

TAG = "__fc__"
"""The key that marks a tagged value (``{"__fc__": tag, "v": ...}``) in stored JSON."""

_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encoder_with(default: Callable[[Any], Any]) -> Callable[[Any], str] | None:
    """The serializer's JSON encoder with ``default`` for objects that are not JSON types.

    Compact, UTF-8 text (no ``\\u`` escapes but for control characters), NaN
    and infinities refused with a ``ValueError``, and no circular-reference
    check: callers walk the value first (:func:`is_plain_json_or`), which
    ends on a cycle. None on a Python without the C accelerator.

    Example:
        >>> encode = encoder_with(lambda obj: f"<{type(obj).__name__}>")
        >>> encode({"a": [1, "é"], "b": object()})
        '{"a":[1,"é"],"b":"<object>"}'
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # a Python without the C accelerator
        return None
    # JSONEncoder.encode builds a new C encoder per call, a noticeable share of
    # encoding one small checkpoint record: callers keep this one.
    c_encode = make(
        None, default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )

    def encode(value: Any) -> str:
        return "".join(c_encode(value, 0))

    return encode


to_json: Callable[[Any], str] = encoder_with(_not_json) or _JSON.encode
"""Encode a plain JSON value (see :func:`is_plain_json`) as the serializer writes it.

Example:
    >>> to_json({"a": [1, 2.5, None, True]})
    '{"a":[1,2.5,null,true]}'
"""


def is_plain_json(value: Any, depth: int) -> bool:
    """True if ``value`` is made only of types JSON writes and reads back unchanged.

    Exact types only: a subclass (an enum, an ``OrderedDict``) needs a tag,
    and so do tuples, non-finite floats and dicts with a key that is not a
    string or that looks like a tag. ``value`` sits ``depth`` containers deep
    in what is stored: containers as deep as the serializer's nesting limit
    are not plain (the slow path names them).

    Example:
        >>> is_plain_json({"a": [1, "x", None]}, 0), is_plain_json({"a": (1,)}, 0)
        (True, False)
    """
    kind = type(value)
    if kind in _LEAVES:
        return True
    if kind is dict:
        if TAG in value or depth >= _LIMIT:
            return False
        depth += 1
        # Plain loops, not all(): no generator per container on this hot path; leaves
        # (most values of a record) are checked here, without a call each.
        # An empty dict or list below is plain where a call would say so: under the limit.
        shallow = depth < _LIMIT
        for k, v in value.items():
            if type(k) is not str:
                return False
            if type(v) in _LEAVES or (shallow and not v and type(v) in _EMPTIES):
                continue
            if not is_plain_json(v, depth):
                return False
        return True
    if kind is list:
        if depth >= _LIMIT:
            return False
        depth += 1
        shallow = depth < _LIMIT
        for v in value:
            if type(v) in _LEAVES or (shallow and not v and type(v) in _EMPTIES):
                continue
            if not is_plain_json(v, depth):
                return False
        return True
    if kind is float:
        return math.isfinite(value)
    return False


def is_plain_json_or(value: Any, depth: int, other: Callable[[Any, int], bool]) -> bool:
    """:func:`is_plain_json`, where ``other(obj, depth)`` judges each object of another type.

    ``other`` is called with every object that is not a plain JSON value or
    container (a tuple, a model, a NaN, ...) and how many containers deep it
    sits; the value passes only if ``other`` says True for each. Everything
    else is judged exactly as :func:`is_plain_json` judges it.

    Example:
        >>> is_plain_json_or({"a": (1, 2)}, 0, lambda obj, depth: type(obj) is tuple)
        True
        >>> is_plain_json_or({1: "int key"}, 0, lambda obj, depth: True)
        False
    """
    kind = type(value)
    if kind in _LEAVES:
        return True
    if kind is dict:
        if TAG in value or depth >= _LIMIT:
            return False
        depth += 1
        shallow = depth < _LIMIT
        for k, v in value.items():
            if type(k) is not str:
                return False
            item = type(v)
            if item in _LEAVES or (shallow and item in _EMPTIES and not v):
                continue
            if not is_plain_json_or(v, depth, other):
                return False
        return True
    if kind is list:
        if depth >= _LIMIT:
            return False
        depth += 1
        shallow = depth < _LIMIT
        for v in value:
            item = type(v)
            if item in _LEAVES or (shallow and item in _EMPTIES and not v):
                continue
            if not is_plain_json_or(v, depth, other):
                return False
        return True
    if kind is float and math.isfinite(value):
        return True
    return other(value, depth)


# Exact types is_plain_json accepts as they are (None's type included), and the
# containers it accepts empty below its nesting limit.
_LEAVES = frozenset({str, int, bool, type(None)})
_EMPTIES = frozenset({dict, list})
