"""``NodeContext``: what a node taking ``(state, ctx)`` gets besides the state."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flowcore.secrets import NO_REDACTION, Redactor

__all__ = ["NodeContext"]


def _discard(name: str, data: Any) -> None:
    return None


def _discard_event(event_type: Callable[..., Any], fields: dict[str, Any]) -> None:
    return None


@dataclass(frozen=True, slots=True)
class NodeContext:
    """Run-scoped facts and services for one node execution.

    ``inputs`` holds the node's declared inputs with every ``<<ref>>``
    resolved; ``config`` is the mapping passed to ``run(config=...)``;
    ``redactor`` is the run's redactor (``NO_REDACTION`` when it has none):
    the block executor streams model text through it and tells it the
    values of input fields a block marks secret.

    Example:
        >>> async def node(state, ctx):
        ...     ctx.emit("progress", {"done": 1})
        ...     return {"seen_by": ctx.node}
    """

    run_id: str
    node: str
    graph_name: str
    superstep: int
    attempt: int = 1
    config: Mapping[str, Any] = field(default_factory=dict)
    inputs: Mapping[str, Any] = field(default_factory=dict)
    redactor: Redactor = NO_REDACTION
    #: The run's thread (None for a run without one): budgets count per thread.
    thread_id: str | None = None
    _emit: Callable[[str, Any], None] = _discard
    _publish: Callable[[Callable[..., Any], dict[str, Any]], None] = _discard_event

    def emit(self, name: str, data: Any = None) -> None:
        """Emit a ``custom`` event carrying ``data``; safe to call from sync nodes.

        Example:
            >>> ctx = NodeContext(run_id="r", node="n", graph_name="g", superstep=1)
            >>> ctx.emit("progress", 0.5)  # no listener: dropped
        """
        self._emit(name, data)

    def publish(self, event_type: Callable[..., Any], /, **fields: Any) -> None:
        """Emit a typed node event (e.g. ``TextDeltaEvent``) from this node.

        The engine fills in what every event has (run id, graph, superstep,
        timestamp) and ``node``; ``fields`` are the rest. The block executor
        uses this for block, text, tool and usage events.

        Example:
            >>> from flowcore.events import TextDeltaEvent
            >>> ctx = NodeContext(run_id="r", node="n", graph_name="g", superstep=1)
            >>> ctx.publish(TextDeltaEvent, block_id="summarize", text="Hel")  # no listener
        """
        self._publish(event_type, fields)
