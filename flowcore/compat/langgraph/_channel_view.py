"""``CompiledStateGraph.channels``: a graph's channels as LangGraph's public channel classes.

A ``StateGraph`` builds its state keys' channels from the schema with the
planner's own channel types; users (and LangGraph's API) look at them as the
public classes of ``langgraph.channels``: a reducer key is a
``BinaryOperatorAggregate``, a plain key a ``LastValue`` and so on. This module
makes that view: a fresh public channel, typed from the schema, for each
channel the graph would start a run with. Channels that are already public
(a ``Pregel`` graph's, or one declared in the schema) are shown as they are;
those with no public counterpart (the engine's own bookkeeping) are shown as
the engine's channels.

Example:
    >>> import operator
    >>> from typing import Annotated, TypedDict
    >>> from flowcore.compat.langgraph import StateGraph
    >>> S = TypedDict("S", {"top": Annotated[int, operator.add]})
    >>> app = StateGraph(S).add_node("n", lambda s: s).set_entry_point("n").compile()
    >>> type(public_channels(app)["top"]).__name__
    'BinaryOperatorAggregate'
"""

from __future__ import annotations

from typing import Annotated, Any, get_args, get_origin

from flowcore.compat.langgraph import _channel_api as public
from flowcore.compat.langgraph import _channels as engine
from flowcore.compat.langgraph._state import _strip

__all__ = ["builder_channels", "public_channels"]


def public_channels(graph: Any) -> dict[str, engine.Channel]:
    """Each channel ``graph`` starts a run with, as a fresh public channel where one fits."""
    types = _value_types(graph)
    return {
        name: _public(name, channel, types.get(name, Any))
        for name, channel in graph.new_channels().items()
    }


def builder_channels(builder: Any) -> dict[str, engine.Channel]:
    """The state channels a ``StateGraph`` builder declares so far, as public channels.

    Every key of every schema it knows (state, input, output and node input
    schemas), managed values aside; a key declared with a reducer in one schema
    and plainly in another keeps the reducer, as at compile.
    """
    made: dict[str, engine.Channel] = {}
    types: dict[str, Any] = {}
    for info in getattr(builder, "schemas", {}).values():
        for key in info.keys:
            channel = info.channel(key)
            types.setdefault(key, _value_type(info.hints[key]))
            old = made.get(key)
            if old is None or (
                type(old) is engine.LastValue and type(channel) is not engine.LastValue
            ):
                made[key] = channel
    return {name: _public(name, channel, types[name]) for name, channel in made.items()}


def _value_types(graph: Any) -> dict[str, Any]:
    """The value type of every state key the builder's schemas declare (first schema wins)."""
    found: dict[str, Any] = {}
    builder = getattr(graph, "builder", None)
    for info in getattr(builder, "schemas", {}).values():
        for key, hint in getattr(info, "hints", {}).items():
            found.setdefault(key, _value_type(hint))
    return found


def _value_type(hint: Any) -> Any:
    """``hint`` without ``Required``/``NotRequired`` and its ``Annotated`` metadata."""
    hint = _strip(hint)
    if get_origin(hint) is Annotated:
        hint = _strip(get_args(hint)[0])
    return hint


def _public(name: str, channel: engine.Channel, typ: Any) -> engine.Channel:
    """The public channel that behaves as ``channel`` (``channel`` itself when none does)."""
    if isinstance(channel, public.BaseChannel):
        return channel
    shown: engine.Channel
    if type(channel) is engine.BinaryOperatorAggregate:
        shown = public.BinaryOperatorAggregate(typ, channel.operator, key=name)
    elif type(channel) is engine.LastValue:
        shown = public.LastValue(typ, key=name)
    elif type(channel) is engine.EphemeralValue:
        shown = public.EphemeralValue(typ, key=name)
    else:
        return channel
    shown.value = channel.value
    return shown
