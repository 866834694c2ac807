"""What a stored value may hold, checked without encoding it, and the errors that say why not.

The serializer (:mod:`~flowcore.checkpoint.serde`) refuses the same values
when it encodes them; these checks are for values that are judged before
they are stored (run inputs, pipelines, a block's inputs). Both raise the
errors built here, so a refusal reads the same wherever it happens.
"""

from __future__ import annotations

import math
from typing import Any

from flowcore._shown import shown
from flowcore.errors import SerializationError

__all__ = ["MAX_NESTING", "check_json_value", "check_text_and_nesting"]

MAX_NESTING = 100
"""How many containers deep a stored value may nest.

Deeper values are refused with a :class:`~flowcore.errors.SerializationError`
rather than left to hit Python's recursion limit while they are encoded,
copied or, worst, decoded again from a store long after they were written.
"""

# Stores wrap values in records of their own (checkpoint.snapshot.values.<key>): the
# serializer allows that many levels on top of MAX_NESTING, so a value that passed
# check_storable is never refused when it is stored inside a record.
_WRAPPING = 10
_LIMIT = MAX_NESTING + _WRAPPING

# Python refuses to turn ints of more than 4300 digits into text (and so into
# JSON); 14,000 bits stay just below that limit.
_MAX_INT_BITS = 14_000


def check_json_value(value: Any, *, path: str = "value") -> None:
    """Raise :class:`~flowcore.errors.SerializationError` unless ``value`` is plain JSON data.

    Plain JSON data is what a JSON document can hold and read back: dicts
    with string keys, lists (tuples count as lists), strings without lone
    surrogates, bools, None, ints short enough to write as text and finite
    floats (JSON has no NaN or Infinity), nested at most :data:`MAX_NESTING`
    deep. Pipelines, task plans and their run inputs must be plain JSON.
    The error's ``path`` says where the first bad value sits.

    Example:
        >>> check_json_value({"doc": ["a", 1, 2.5, None]})
        >>> try:
        ...     check_json_value({"score": float("nan")}, path="input")
        ... except SerializationError as exc:
        ...     exc.path
        'input.score'
    """
    # Iterative, so a value of any depth is judged without touching the recursion limit.
    todo: list[tuple[Any, str, int]] = [(value, path, 0)]
    while todo:
        item, where, depth = todo.pop()
        kind = type(item)
        if item is None or kind is bool:
            continue
        if kind is str:
            if not _is_utf8(item):
                raise _unwritable(item, where)
            continue
        if kind is int:
            if item.bit_length() > _MAX_INT_BITS:
                raise _unwritable(item, where)
            continue
        if kind is float:
            if not math.isfinite(item):
                raise SerializationError(
                    f"{where}: {item!r} is not a JSON number (JSON has no NaN or Infinity); "
                    "use null or a string instead",
                    path=where,
                )
            continue
        if kind not in (dict, list, tuple):
            raise SerializationError(
                f"{where}: a {type(item).__name__} is not JSON data; use objects, arrays, "
                "strings, numbers, true/false or null",
                path=where,
            )
        if depth >= MAX_NESTING:
            raise _too_deep(where)
        if kind is dict:
            for k, v in item.items():
                if type(k) is not str:
                    raise SerializationError(
                        f"{where}: the key {shown(k)} is not a string; JSON object keys are "
                        "strings",
                        path=where,
                    )
                if not _is_utf8(k):
                    raise _unwritable({k: None}, where)
                todo.append((v, f"{where}.{k}", depth + 1))
        else:
            todo.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))


def check_text_and_nesting(value: Any, *, path: str = "value", text: bool = True) -> None:
    """Raise :class:`~flowcore.errors.SerializationError` for the two faults no consumer takes.

    A string (or dict key) with a lone surrogate cannot be encoded as UTF-8,
    so no model, tool, log or store can take it; containers nested more than
    :data:`MAX_NESTING` deep exhaust Python's recursion limit in whatever
    walks them. Objects of any other type pass: this is the check for values
    that need not be storable, like a block's inputs. With ``text=False`` only
    the nesting is checked.

    Example:
        >>> check_text_and_nesting({"when": object(), "text": "fine"})
        >>> try:
        ...     check_text_and_nesting(["ok", "\\udc80"], path="inputs")
        ... except SerializationError as exc:
        ...     exc.path
        'inputs[1]'
    """
    todo: list[tuple[Any, str, int]] = [(value, path, 0)]
    while todo:
        item, where, depth = todo.pop()
        if isinstance(item, str):
            if text and not _is_utf8(item):
                raise _unwritable(str(item), where)
            continue
        if not isinstance(item, dict | list | tuple | set | frozenset):
            continue
        if depth >= MAX_NESTING:
            raise _too_deep(where)
        if isinstance(item, dict):
            for k, v in item.items():
                if text and isinstance(k, str) and not _is_utf8(k):
                    raise _unwritable({str(k): None}, where)
                todo.append(
                    (v, f"{where}.{k}" if isinstance(k, str) else f"{where}[{shown(k)}]", depth + 1)
                )
        else:
            todo.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))


def _too_deep(path: str) -> SerializationError:
    # The path of a value this deep is long: keep its ends, where the key names are.
    shown = path if len(path) <= 120 else f"{path[:60]}...{path[-50:]}"
    return SerializationError(
        f"cannot store {shown}: it nests lists, dicts or other containers more than "
        f"{MAX_NESTING} levels deep (or contains itself); flatten it, or store it as a "
        "JSON string",
        path=path,
    )


def _unwritable(encoded: Any, path: str) -> SerializationError:
    """The error for the first string or int in ``encoded`` that JSON text cannot hold."""
    todo: list[tuple[Any, str]] = [(encoded, path)]
    while todo:
        value, where = todo.pop()
        kind = type(value)
        if kind is str and not _is_utf8(value):
            return SerializationError(
                f"cannot store {where}: the string holds a lone surrogate "
                f"({_first_surrogate(value)}), which is not valid Unicode text; decode the "
                "text it came from with errors='replace', or drop the character",
                path=where,
            )
        if kind is int and value.bit_length() > _MAX_INT_BITS:
            return SerializationError(
                f"cannot store {where}: an int of about {value.bit_length() * 3 // 10} digits "
                "is too long to write as text; store it as a string, or round it",
                path=where,
            )
        if kind is dict:
            for k, v in value.items():
                if not _is_utf8(k):
                    return SerializationError(
                        f"cannot store {where}: the key {_first_surrogate(k)} holds a lone "
                        "surrogate, which is not valid Unicode text; rename the key",
                        path=where,
                    )
                todo.append((v, f"{where}.{k}"))
        elif kind is list:
            todo.extend((v, f"{where}[{i}]") for i, v in enumerate(value))
    return SerializationError(f"cannot store {path}: it cannot be written as JSON", path=path)


def _is_utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _first_surrogate(text: str) -> str:
    for char in text:
        if 0xD800 <= ord(char) <= 0xDFFF:
            return f"\\u{ord(char):04x}"
    return repr(text[:20])
