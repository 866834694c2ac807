"""Frozen descriptions of nodes, edges and routers, as kept by a compiled graph."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, get_args, get_origin

from flowcore._shown import shown
from flowcore.graph.constants import END
from flowcore.graph.policy import RetryPolicy
from flowcore.refs import ValueTemplate

__all__ = ["CallableShape", "EdgeSpec", "NodeSpec", "RouterSpec", "inspect_callable"]


@dataclass(frozen=True, slots=True)
class CallableShape:
    """How to call a user function: async or not, and whether it takes ``ctx``."""

    is_async: bool
    takes_context: bool


def inspect_callable(func: Callable[..., Any], what: str) -> CallableShape | str:
    """Work out how to call ``func``; on failure return a problem message.

    Example:
        >>> async def node(state, ctx): ...
        >>> inspect_callable(node, "node 'n'")
        CallableShape(is_async=True, takes_context=True)
    """
    if not callable(func):
        return f"{what}: {shown(func)} is not callable; pass a function (state) -> update"
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        # Builtins without a signature: assume the simplest shape.
        return CallableShape(is_async=_is_async(func), takes_context=False)
    positional = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    required = [p for p in positional if p.default is p.empty]
    has_varargs = any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())
    if not positional and not has_varargs:
        return f"{what}: {_name(func)} takes no arguments; it must accept (state) or (state, ctx)"
    if len(required) > 2:
        return (
            f"{what}: {_name(func)} requires {len(required)} arguments; "
            "it must accept (state) or (state, ctx)"
        )
    takes_context = len(positional) >= 2 or (has_varargs and len(positional) < 2)
    return CallableShape(is_async=_is_async(func), takes_context=takes_context)


def _is_async(func: Callable[..., Any]) -> bool:
    while isinstance(func, functools.partial):
        func = func.func
    if inspect.iscoroutinefunction(func):
        return True
    call = getattr(func, "__call__", None)  # noqa: B004 - we want the bound method
    return call is not None and inspect.iscoroutinefunction(call)


def _name(func: Callable[..., Any]) -> str:
    return getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)


def literal_targets(func: Callable[..., Any]) -> tuple[str, ...]:
    """Targets declared by a router's ``Literal[...]`` return annotation.

    Example:
        >>> from typing import Literal
        >>> def route(state) -> Literal["a", "b"]: ...
        >>> literal_targets(route)
        ('a', 'b')
    """
    try:
        hints = typing.get_type_hints(func)
    except Exception:
        call = getattr(func, "__call__", None)  # noqa: B004
        try:
            hints = typing.get_type_hints(call) if call is not None else {}
        except Exception:
            return ()
    ret = hints.get("return")
    found: list[str] = []

    def walk(tp: object) -> None:
        origin = get_origin(tp)
        if origin is Literal:
            found.extend(a for a in get_args(tp) if isinstance(a, str))
        elif origin is not None:
            for arg in get_args(tp):
                walk(arg)

    if ret is not None:
        walk(ret)
    return tuple(dict.fromkeys(found))


class NodeSpec(NamedTuple):
    """One node of a compiled graph.

    ``index`` is the declaration order, which fixes the order in which the
    writes of one superstep are applied. A named tuple, like
    :class:`EdgeSpec`: as immutable as a frozen dataclass and several times
    cheaper to build, once per node of every graph compiled.
    """

    name: str
    func: Callable[..., Any]
    shape: CallableShape
    # The field hides tuple.index on purpose: the name was public before this was a tuple.
    index: int  # type: ignore[assignment]
    inputs: ValueTemplate | None = None
    retry: RetryPolicy | None = None
    timeout: float | None = None
    output_view: Callable[[Mapping[str, Any]], Any] | None = None
    destinations: tuple[str, ...] | None = None
    """Where ``Command(goto=...)`` may send this node's run next (None: not declared)."""


class EdgeSpec(NamedTuple):
    """A plain edge; with several sources it is a join that waits for all of them.

    A named tuple rather than a frozen dataclass: as immutable, and several
    times cheaper to build, which counts when compiling graphs of thousands
    of edges.
    """

    sources: tuple[str, ...]
    target: str


@dataclass(frozen=True, slots=True)
class RouterSpec:
    """A conditional edge: ``func`` picks targets after ``source`` finishes.

    ``path_map`` maps what the router returns to node names; ``targets`` is
    every node the router may pick (END included when declared).
    """

    source: str
    func: Callable[..., Any]
    shape: CallableShape
    path_map: Mapping[Hashable, str] | None
    targets: tuple[str, ...]
    index: int

    @property
    def node_targets(self) -> tuple[str, ...]:
        """Declared targets other than END."""
        return tuple(t for t in self.targets if t != END)
