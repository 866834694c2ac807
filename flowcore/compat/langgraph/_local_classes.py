"""Storing instances of classes defined inside a function, as LangGraph's savers do.

flowcore's serializer writes a pydantic model or dataclass with the import
path of its class, so a class defined inside a function (``<locals>`` in its
qualified name) cannot be written: nothing could import it back. LangGraph's
serde writes such an object anyway and, when it cannot rebuild the class on
load, hands back the object's fields (``model_dump()`` for a pydantic model,
the fields of a dataclass) instead. Compat's savers do the same, so a graph
whose state or input classes live inside a function (a test, a factory)
checkpoints on flowcore as it does on LangGraph: the value reads back as a
dict of its fields, which a pydantic state schema validates into the model
again when a node next receives it.

Only the error path pays for this: a saver encodes as usual and, when the
serializer refuses the value, :func:`dumps_with_local_fields` encodes it
again with those objects replaced by their fields. A value that holds no such
object re-raises the serializer's own error unchanged.

Example:
    >>> import dataclasses
    >>> def make():
    ...     @dataclasses.dataclass
    ...     class Point:
    ...         x: int
    ...     return Point(1)
    >>> local_fields({"at": [make()]})
    {'at': [{'x': 1}]}
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from pydantic import BaseModel

from flowcore.errors import SerializationError

__all__ = ["dumps_with_local_fields", "local_fields"]

# Deeper than flowcore's serializer nests anyway: past it the value is left as it is
# and the serializer names the depth problem itself.
_MAX_DEPTH = 128


class _Dumps(Protocol):
    def dumps(self, value: Any, *, path: str = "") -> Any: ...


def _is_local(cls: type) -> bool:
    return "<locals>" in cls.__qualname__


def _walk(value: Any, depth: int) -> Any:
    """``value`` with local-class objects replaced by their fields; ``value`` itself if none."""
    if depth > _MAX_DEPTH:
        return value
    kind = type(value)
    if kind is dict:
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new = _walk(item, depth + 1)
            changed = changed or new is not item
            out[key] = new
        return out if changed else value
    if kind in (list, tuple, set, frozenset):
        items = [_walk(item, depth + 1) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return kind(items)
    if isinstance(value, BaseModel) and _is_local(kind):
        # model_dump turns nested models into dicts too, as LangGraph's serde writes them.
        return _walk(value.model_dump(), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and _is_local(kind):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _walk(fields, depth + 1)
    return value


def local_fields(value: Any) -> Any:
    """``value`` with each object of a class defined inside a function replaced by its fields.

    Pydantic models become their ``model_dump()``, dataclasses a dict of their
    fields, inside dicts, lists, tuples and sets at any depth. A value without
    such objects is returned as it is (the same object).

    Example:
        >>> local_fields([1, {"a": 2}])
        [1, {'a': 2}]
    """
    return _walk(value, 0)


def dumps_with_local_fields(
    codec: _Dumps, value: Any, path: str, refused: SerializationError
) -> Any:
    """Encode ``value`` with its local-class objects stored as their fields.

    Called after ``codec.dumps(value, path=path)`` raised ``refused``: when
    ``value`` holds no object of a class defined inside a function, ``refused``
    is raised again, so the serializer's message still names what it cannot
    store.

    Example:
        >>> from flowcore.checkpoint import JsonSerializer
        >>> err = SerializationError("cannot store value")
        >>> try:
        ...     dumps_with_local_fields(JsonSerializer(), object(), "value", err)
        ... except SerializationError as exc:
        ...     exc is err
        True
    """
    portable = _walk(value, 0)
    if portable is value:
        raise refused
    return codec.dumps(portable, path=path)
