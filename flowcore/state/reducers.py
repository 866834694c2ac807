"""Built-in state reducers: how a node's write to a key combines with its old value.

A reducer is any callable ``(old, new) -> value``. Attach one to a state key
with ``Annotated``::

    class State(TypedDict):
        log: Annotated[list[str], append]
        facts: Annotated[dict[str, str], merge]
        answer: str  # replace, the default

Reducers must not mutate ``old``: flowcore hands the same value to every
node of a superstep, so an in-place change would leak between them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Reducer", "append", "merge", "replace"]

Reducer = Callable[[Any, Any], Any]
"""The shape of a reducer: ``(old_value, new_value) -> combined_value``."""


def replace(old: Any, new: Any) -> Any:
    """Keep the newest value (the default for keys without a reducer).

    Two writes to a replace-key in one superstep are an error, because which
    one should win would depend on timing.

    Example:
        >>> replace([1], [2])
        [2]
    """
    return new


def append(old: Any, new: Any) -> list[Any]:
    """Extend the old list with the items of ``new`` (a list or tuple).

    Example:
        >>> append([1, 2], [3])
        [1, 2, 3]
    """
    if not isinstance(new, list | tuple):
        raise TypeError(
            f"append expects a list of items to add, got {type(new).__name__}; "
            "wrap a single item in a list, e.g. {'key': [item]}"
        )
    if old is None:
        return list(new)
    if not isinstance(old, list):
        raise TypeError(f"append needs the current value to be a list, got {type(old).__name__}")
    return [*old, *new]


def merge(old: Any, new: Any) -> dict[Any, Any]:
    """Shallow-merge ``new`` into the old dict; keys in ``new`` win.

    Example:
        >>> merge({"a": 1, "b": 2}, {"b": 3})
        {'a': 1, 'b': 3}
    """
    if not isinstance(new, Mapping):
        raise TypeError(f"merge expects a mapping to merge in, got {type(new).__name__}")
    if old is None:
        return dict(new)
    if not isinstance(old, Mapping):
        raise TypeError(f"merge needs the current value to be a mapping, got {type(old).__name__}")
    return {**old, **new}
