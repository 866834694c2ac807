"""Dataclass instances in checkpoints: which fields are stored, and how one is rebuilt.

A module-level dataclass is stored as its class reference and its fields (see
:mod:`flowcore.checkpoint.serde`), as a pydantic model is. Loading imports that
class only if it is a dataclass, then calls its constructor with the fields
it takes and sets the others (``field(init=False)``) after, so a frozen
dataclass and one with a ``__post_init__`` come back as they were written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

__all__ = ["dataclass_fields", "is_dataclass_class", "is_dataclass_value", "rebuild_dataclass"]


def is_dataclass_value(value: Any) -> bool:
    """Whether ``value`` is a dataclass instance (not a dataclass class).

    Example:
        >>> @dataclasses.dataclass
        ... class P:
        ...     x: int
        >>> is_dataclass_value(P(1)), is_dataclass_value(P)
        (True, False)
    """
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def is_dataclass_class(target: Any) -> bool:
    """Whether ``target`` is a dataclass class: the only kind of class a load calls.

    Example:
        >>> is_dataclass_class(dict)
        False
    """
    return isinstance(target, type) and dataclasses.is_dataclass(target)


def dataclass_fields(value: Any) -> dict[str, Any]:
    """The stored form of a dataclass instance: each field's name and value, not deep-copied.

    Example:
        >>> @dataclasses.dataclass
        ... class P:
        ...     x: int
        ...     tags: list[str]
        >>> dataclass_fields(P(1, ["a"]))
        {'x': 1, 'tags': ['a']}
    """
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}


def rebuild_dataclass(cls: type, stored: Mapping[str, Any]) -> Any:
    """An instance of dataclass ``cls`` from its stored fields.

    Fields the constructor takes go to it; ``init=False`` fields are set on
    the instance after (through ``object.__setattr__``, so frozen classes work).

    Raises:
        TypeError: the stored fields do not fit the class (it changed since).

    Example:
        >>> @dataclasses.dataclass(frozen=True)
        ... class P:
        ...     x: int
        ...     y: int = dataclasses.field(init=False, default=0)
        >>> rebuild_dataclass(P, {"x": 1, "y": 2})
        P(x=1, y=2)
    """
    fields = dataclasses.fields(cls)
    known = {f.name for f in fields}
    unknown = sorted(set(stored) - known)
    if unknown:
        raise TypeError(f"{cls.__qualname__} has no fields {unknown}")
    instance = cls(**{f.name: stored[f.name] for f in fields if f.init and f.name in stored})
    for f in fields:
        if not f.init and f.name in stored:
            object.__setattr__(instance, f.name, stored[f.name])
    return instance
