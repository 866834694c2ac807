"""A node's ``config`` parameter must be typed as ``RunnableConfig`` (or left untyped).

LangGraph once took any type there and now warns, at ``add_node``, about a
``config`` parameter annotated with anything else (``dict``, ``Any``, ...).
flowcore passes the config to such a node all the same; the warning only
tells the author what LangGraph expects.

Example:
    >>> def node(state, config): ...
    >>> warn_misstyped_config(node)
"""

from __future__ import annotations

import inspect
import re
import types
import typing
import warnings
from typing import Any

__all__ = ["config_type_ok", "warn_misstyped_config"]

_NAME = "RunnableConfig"
_WORDS = re.compile(r"[A-Za-z_][A-Za-z_0-9.]*")
_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def config_type_ok(annotation: Any) -> bool:
    """Whether ``annotation`` types a ``config`` parameter as LangGraph asks.

    ``RunnableConfig`` (LangChain's or flowcore's), optional or not, as a type
    or as the string of one; no annotation at all.

    Example:
        >>> config_type_ok(inspect.Parameter.empty), config_type_ok("RunnableConfig | None")
        (True, True)
        >>> config_type_ok(dict)
        False
    """
    if annotation is inspect.Parameter.empty:
        return True
    if isinstance(annotation, str):
        words = [w.rsplit(".", 1)[-1] for w in _WORDS.findall(annotation)]
        return _NAME in words and set(words) <= {_NAME, "Optional", "None"}
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(members) == 1 and config_type_ok(members[0])
    return getattr(annotation, "__name__", None) == _NAME


def warn_misstyped_config(func: Any) -> None:
    """Warn (``UserWarning``) when ``func`` takes a ``config`` typed other than ``RunnableConfig``.

    Example:
        >>> def node(state, config: dict): ...
        >>> with warnings.catch_warnings(record=True) as seen:
        ...     warnings.simplefilter("always")
        ...     warn_misstyped_config(node)
        >>> len(seen)
        1
    """
    if not (inspect.isfunction(func) or inspect.ismethod(func)):
        return
    code = getattr(getattr(func, "__func__", func), "__code__", None)
    if code is not None:
        # Most nodes take no ``config``: the code object says so without a signature,
        # which costs more than the rest of add_node.
        named = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if "config" not in named:
            return
    try:
        param = inspect.signature(func).parameters.get("config")
    except (TypeError, ValueError):
        return
    if param is None or param.kind not in _KINDS or config_type_ok(param.annotation):
        return
    warnings.warn(
        f"The 'config' parameter should be typed as 'RunnableConfig' or "
        f"'RunnableConfig | None', not '{param.annotation}'. ",
        UserWarning,
        stacklevel=3,
    )
