"""How a ``RemoteGraph`` turns the server's stream parts into what its caller sees.

A server streams parts ``(event, data)`` where ``event`` is a stream mode,
followed by the part's namespace when it comes from a subgraph
(``"updates|child:1"``). :class:`PartRouter` decides, part by part, what the
caller's ``stream()`` yields, what goes to the graph the remote one runs in
(see :class:`ParentLink`), and when the remote run's pause or error is raised
here.

Example:
    >>> router = PartRouter(["values"], single=True, subgraphs=False, version="v1")
    >>> router.route("values", {"n": 1})
    [{'n': 1}]
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from flowcore.compat.langgraph._context import running_scope
from flowcore.compat.langgraph._errors import GraphInterrupt, ParentCommand
from flowcore.compat.langgraph._records import CustomChunk
from flowcore.compat.langgraph._types import Command, Interrupt

__all__ = ["NS_SEP", "ParentLink", "PartRouter", "RemoteException", "stream_modes"]

#: Separates the parts of a namespace, in event names and ``checkpoint_ns``.
NS_SEP = "|"
_INTERRUPT = "__interrupt__"

# Record kinds of a compat run, and the stream mode of the parent each one feeds.
_FORWARDED_KINDS = {
    "values": "values",
    "updates": "updates",
    "custom": "custom",
    "messages_from": "messages",
}


class RemoteException(Exception):
    """The remote graph's run failed: the server streamed an ``error`` part."""


def stream_modes(
    stream_mode: str | Sequence[str] | None,
    parent_modes: Sequence[str] = (),
    default: str = "updates",
) -> tuple[list[str], list[str], bool]:
    """What to ask the server for, what the caller asked for, and whether it asked for one mode.

    The server's ``messages-tuple`` mode is LangGraph's ``messages``; ``updates``
    is always asked for, as that is where a remote pause shows; ``events`` is
    never asked for. ``parent_modes`` are what the calling graph streams.

    Example:
        >>> stream_modes("messages")
        (['messages-tuple', 'updates'], ['messages'], True)
    """
    if not stream_mode:
        requested = [default]
    elif isinstance(stream_mode, str):
        requested = [stream_mode]
    else:
        requested = list(stream_mode)
    single = not stream_mode or isinstance(stream_mode, str)
    sent = [*requested, *parent_modes]
    if "messages" in sent:
        sent = [m for m in sent if m != "messages"] + ["messages-tuple"]
    requested = [m for m in requested if m != "messages-tuple"] + (
        ["messages"] if "messages-tuple" in requested else []
    )
    if "updates" not in sent:
        sent.append("updates")
    sent = [m for m in sent if m != "events"]
    return list(dict.fromkeys(sent)), requested, single


class ParentLink:
    """The compat graph run a ``RemoteGraph`` is called from (as a node, or from one).

    ``ns`` is the calling task's namespace; :meth:`forward` hands the remote
    run's parts of the modes the calling graph streams to its run, as a
    subgraph's own records would go.
    """

    def __init__(self, ns: str, host: Any = None, node: str = "") -> None:
        self.ns = ns
        self.host = host
        self.node = node
        wants = getattr(host, "wants", ()) if host is not None else ()
        self.modes = [mode for kind, mode in _FORWARDED_KINDS.items() if kind in wants]

    @classmethod
    def find(cls, config: dict[str, Any] | None) -> ParentLink | None:
        """The caller of a remote call with ``config``: its running task, if any.

        A ``checkpoint_ns`` in ``config`` names the caller when no task runs here.
        """
        given = ((config or {}).get("configurable") or {}).get("checkpoint_ns")
        scope = running_scope()
        host = None if scope is None else scope.host
        if scope is None or not hasattr(host, "sink"):
            return cls(given) if given else None
        own = f"{getattr(host, 'ns', '')}|{scope.node}:{scope.task_id}".lstrip("|")
        return cls(given or own, host, scope.node)

    @property
    def path(self) -> tuple[str, ...]:
        """The namespace as a tuple of its parts."""
        return tuple(self.ns.split(NS_SEP))

    def forward(self, ns: tuple[str, ...], mode: str, data: Any) -> None:
        """Hand one remote part to the calling run (from its loop's thread or another)."""
        host = self.host
        if host is None or mode not in self.modes:
            return
        kind: str
        payload: Any
        if mode == "custom":
            kind, payload = "custom", CustomChunk(self.node, data, getattr(host, "step", 0))
        elif mode == "messages":
            kind, payload = "remote_messages", tuple(data)
        else:
            kind, payload = mode, data
        loop = getattr(host, "loop", None)
        if loop is not None and threading.get_ident() != host.loop_thread:
            loop.call_soon_threadsafe(host.sink, ns, kind, payload)
        else:
            host.sink(ns, kind, payload)


class PartRouter:
    """Routes each server part: to the caller (returned), the parent, or raised."""

    def __init__(
        self,
        requested: Sequence[str],
        *,
        single: bool,
        subgraphs: bool,
        version: str,
        parent: ParentLink | None = None,
    ) -> None:
        self.requested = list(requested)
        self.single = single
        self.subgraphs = subgraphs
        self.version = version
        self.parent = parent
        self.forward: Callable[[tuple[str, ...], str, Any], None] | None = (
            parent.forward if parent is not None and parent.host is not None else None
        )

    def route(self, event: str, data: Any, part_id: str | None = None) -> list[Any]:
        """What the caller's stream yields for part ``(event, data, part_id)`` (at most one).

        Raises :class:`ParentCommand` for a command to the calling graph,
        :class:`GraphInterrupt` for a remote pause when called from a graph,
        and :class:`RemoteException` for an error part.
        """
        mode, _, rest = event.partition(NS_SEP)
        ns: tuple[str, ...] = tuple(rest.split(NS_SEP)) if rest else ()
        if mode == "command" and isinstance(data, dict) and data.get("graph") == Command.PARENT:
            raise ParentCommand(Command(**data))
        parent = self.parent
        if parent is not None:
            ns = parent.path + ns
        if self.forward is not None:
            self.forward(ns, mode, data)
        if mode == "updates":
            if isinstance(data, dict) and _INTERRUPT in data and parent is not None:
                raise GraphInterrupt([_interrupt(i) for i in data[_INTERRUPT]])
        elif mode == "error":
            raise RemoteException(data)
        if mode not in self.requested:
            return []
        # Subgraph parts asked for only for the parent; the server sends a message once.
        if not self.subgraphs and rest and mode != "messages":
            return []
        if mode == "messages":
            data = tuple(data)
        return [self._shaped(ns, mode, data, event, part_id)]

    def _shaped(
        self, ns: tuple[str, ...], mode: str, data: Any, event: str, part_id: str | None
    ) -> Any:
        if self.version == "v2":
            interrupts: tuple[Any, ...] = ()
            if mode == "values" and isinstance(data, dict) and _INTERRUPT in data:
                data = dict(data)
                interrupts = tuple(_interrupt(i) for i in data.pop(_INTERRUPT) or ())
            return {"type": mode, "ns": ns, "data": data, "interrupts": interrupts}
        if self.subgraphs:
            return (ns, data) if self.single else (ns, mode, data)
        return data if self.single else (event, data, part_id)


def _interrupt(value: Any) -> Any:
    return Interrupt(**value) if isinstance(value, dict) else value
