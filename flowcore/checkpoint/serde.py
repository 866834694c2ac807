"""How checkpointed values become bytes and back: JSON, with a few tagged types.

Plain JSON types pass through. A small set of other types is written as a
tagged object ``{"__fc__": tag, ...}`` and restored to the same type; anything
else raises :class:`~flowcore.errors.SerializationError` naming where the
value sits. Nothing is ever pickled.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from flowcore.errors import SerializationError

__all__ = ["JsonSerializer", "Serializer"]

_TAG = "__fc__"


class Serializer(Protocol):
    """Turns stored values into bytes and back.

    Example:
        >>> isinstance(JsonSerializer(), Serializer)
        False
    """

    def dumps(self, value: Any, *, path: str = "") -> bytes:
        """Encode ``value``; ``path`` names it in error messages."""
        ...

    def loads(self, data: bytes) -> Any:
        """Decode what :meth:`dumps` produced."""
        ...


class JsonSerializer:
    """The default serializer: JSON plus tagged tuples, sets, bytes and more.

    Example:
        >>> s = JsonSerializer()
        >>> s.loads(s.dumps({"pair": (1, 2)}))
        {'pair': (1, 2)}
    """

    def dumps(self, value: Any, *, path: str = "") -> bytes:
        """Encode ``value`` as UTF-8 JSON.

        Example:
            >>> JsonSerializer().dumps([1, "a"])
            b'[1,"a"]'
        """
        encoded = _encode(value, path or "value")
        return json.dumps(encoded, separators=(",", ":"), ensure_ascii=False).encode()

    def loads(self, data: bytes) -> Any:
        """Decode bytes written by :meth:`dumps`.

        Example:
            >>> JsonSerializer().loads(b'[1,"a"]')
            [1, 'a']
        """
        return _decode(json.loads(data))


def _encode(value: Any, path: str) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, list):
        return [_encode(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {_TAG: "tuple", "v": [_encode(v, f"{path}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and _TAG not in value:
            return {k: _encode(v, f"{path}.{k}") for k, v in value.items()}
        return {
            _TAG: "dict",
            "v": [
                [_encode(k, f"{path}<key>"), _encode(v, f"{path}[{k!r}]")] for k, v in value.items()
            ],
        }
    raise SerializationError(
        f"cannot store {path}: a {type(value).__module__}.{type(value).__qualname__} is not "
        "JSON-serializable by flowcore; keep state to JSON types, tuples, sets, bytes, "
        "dates and pydantic models, or convert it before returning it from the node",
        path=path,
    )


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        tag = value.get(_TAG)
        if tag is None:
            return {k: _decode(v) for k, v in value.items()}
        if tag == "tuple":
            return tuple(_decode(v) for v in value["v"])
        if tag == "dict":
            return {_decode(k): _decode(v) for k, v in value["v"]}
        raise SerializationError(f"unknown stored type tag {tag!r}")
    return value
