"""The typed events a run emits, in the order things happen.

Every event carries the run id, the graph's name and version, the superstep
it belongs to, a wall-clock timestamp and its namespace (empty unless a
subgraph's node emitted it). A run emits exactly one
:class:`DoneEvent`, always last, whatever way the run ends.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

__all__ = [
    "BlockEndEvent",
    "BlockStartEvent",
    "CheckpointEvent",
    "CustomEvent",
    "DoneEvent",
    "Event",
    "EventBase",
    "InterruptEvent",
    "NodeCancelledEvent",
    "NodeEndEvent",
    "NodeErrorEvent",
    "NodeSkippedEvent",
    "NodeStartEvent",
    "RunStartEvent",
    "RunStatus",
    "TextDeltaEvent",
    "ToolCallResultEvent",
    "ToolCallStartEvent",
    "UsageEvent",
]

RunStatus = Literal["completed", "failed", "interrupted", "cancelled"]
"""How a run ended."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EventBase:
    """Fields every event has. ``type`` names the event kind.

    Example:
        >>> ev = RunStartEvent(run_id="r1", graph_name="g", graph_version="1",
        ...                    superstep=0, timestamp=0.0, input={})
        >>> ev.to_dict()["type"]
        'run_start'
    """

    type: ClassVar[str] = "event"
    run_id: str
    graph_name: str
    graph_version: str
    superstep: int
    timestamp: float
    #: Where in nested graphs the event happened: empty for the run's own graph; for
    #: a node of a subgraph, its enclosing tasks from the outside in, each
    #: ``"node:task_id"`` (LangGraph's checkpoint namespace, split on ``|``).
    namespace: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A plain dict of the event, with its ``type`` (values are not copied).

        Example:
            >>> ev = CustomEvent(run_id="r", graph_name="g", graph_version="1", superstep=1,
            ...                  timestamp=0.0, node="n", name="progress", data=50)
            >>> ev.to_dict()["name"]
            'progress'
        """
        out: dict[str, Any] = {"type": self.type}
        for f in dataclasses.fields(self):
            out[f.name] = getattr(self, f.name)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStartEvent(EventBase):
    """The run began; ``input`` is what it was given."""

    type: ClassVar[str] = "run_start"
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeStartEvent(EventBase):
    """A node began running (before its first attempt)."""

    type: ClassVar[str] = "node_start"
    node: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeEndEvent(EventBase):
    """A node finished; ``update`` is what it returned, ``duration`` in seconds."""

    type: ClassVar[str] = "node_end"
    node: str
    update: Mapping[str, Any] | None
    duration: float
    attempts: int


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeErrorEvent(EventBase):
    """A node failed for good; ``error`` is the flowcore error describing why."""

    type: ClassVar[str] = "node_error"
    node: str
    error: BaseException
    duration: float
    attempts: int


@dataclass(frozen=True, slots=True, kw_only=True)
class InterruptEvent(EventBase):
    """A node called ``interrupt(value)``: the run will pause for an answer.

    ``interrupt_id`` is the id to answer with ``Resume(by_id={...})``.
    """

    type: ClassVar[str] = "interrupt"
    node: str
    interrupt_id: str
    value: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeCancelledEvent(EventBase):
    """A node that had started was cancelled before it finished.

    This happens to a node's in-flight siblings when a ``fail_fast`` run
    stops, and to every in-flight node when the run itself is cancelled, so
    that each ``node_start`` is closed by exactly one ``node_end``,
    ``node_error`` or ``node_cancelled``.
    """

    type: ClassVar[str] = "node_cancelled"
    node: str
    duration: float


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeSkippedEvent(EventBase):
    """A node did not run: ``reason`` is ``"not_triggered"`` or ``"upstream_failed"``."""

    type: ClassVar[str] = "node_skipped"
    node: str
    reason: Literal["not_triggered", "upstream_failed"]
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CustomEvent(EventBase):
    """Emitted by a node through ``ctx.emit(name, data)``."""

    type: ClassVar[str] = "custom"
    node: str
    name: str
    data: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockStartEvent(EventBase):
    """A node began running a stored block (``kind`` says how it runs).

    Sent once per block execution, before its first attempt; closed by one
    :class:`BlockEndEvent`.
    """

    type: ClassVar[str] = "block_start"
    node: str
    block_id: str
    block_version: int
    kind: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockEndEvent(EventBase):
    """A block finished: ``ok`` with its validated ``outputs``, or failed with ``error``.

    ``metadata`` records how it ran, e.g. the provider and model of an LLM
    block, or the isolation a Python block ran under.
    """

    type: ClassVar[str] = "block_end"
    node: str
    block_id: str
    block_version: int
    ok: bool
    outputs: Mapping[str, Any] | None
    error: str | None
    attempts: int
    duration: float
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDeltaEvent(EventBase):
    """A piece of text a model is streaming for a block.

    ``invocation_id`` names the model call (one provider request) the text
    belongs to; the ``usage`` event of that call carries the same id.
    """

    type: ClassVar[str] = "text_delta"
    node: str
    block_id: str
    text: str
    invocation_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStartEvent(EventBase):
    """A tool call began; ``args`` are the arguments as the model or block sent them."""

    type: ClassVar[str] = "tool_call_start"
    node: str
    tool_call_id: str
    tool_name: str
    args: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallResultEvent(EventBase):
    """A tool call ended, with the same ``tool_call_id`` as its start.

    ``result`` holds only the fields the tool's allowlist marks safe to show;
    a failed call has ``is_error``, an ``error_code`` and a ``safe_message``.
    """

    type: ClassVar[str] = "tool_call_result"
    node: str
    tool_call_id: str
    tool_name: str
    result: Mapping[str, Any] | None
    is_error: bool
    error_code: str | None
    safe_message: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageEvent(EventBase):
    """Tokens one model call consumed, reported after every call (retries included).

    ``invocation_id`` is the call's id (shared with its text deltas),
    ``prompt_hash`` the :func:`~flowcore.llm.prompt_hash.prompt_hash` of the
    request sent, and ``cost_usd`` what the provider reported the call cost
    (None when it reports no price). ``model`` is the model that answered;
    ``request_model`` the one the request named (empty: the provider's
    default), ``finish_reason`` why the model stopped (as the provider says
    it, empty when unknown) and ``duration`` how long the call took in
    seconds, so a tracer can place the call in time.
    """

    type: ClassVar[str] = "usage"
    node: str
    block_id: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    invocation_id: str = ""
    prompt_hash: str = ""
    cost_usd: float | None = None
    request_model: str = ""
    finish_reason: str = ""
    duration: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointEvent(EventBase):
    """A checkpoint of the run's thread was handed to the checkpointer.

    Only runs on a thread (a checkpointer and a ``thread_id``) emit it, once
    per checkpoint, after the node events of the superstep it closes.
    ``checkpoint_id`` is the id ``get_state_history`` lists it under (native
    ``CompiledGraph.get_state_history``, compat ``aget_state_history``),
    ``parent_id`` the checkpoint before it (None for a thread's first), ``step``
    the step the checkpoint records and ``next`` the nodes it says run next
    (empty once the run has finished).

    It carries ids, never state values: state can be large and can hold
    secrets, and every consumer of the event stream (logs, UIs, the port)
    would receive them. Read the values with ``get_state(checkpoint_id)``.

    With ``durability="async"`` the checkpoint may still be queued when the
    event is sent (it is stored before the run ends). With
    ``durability="exit"`` checkpoints are held in memory and only the run's
    last one is stored, when the run ends, under its id and with the
    thread's newest checkpoint stored before the run as its parent (the
    ``parent_id`` every event of such a run names): the earlier events of
    such a run name checkpoints that are never stored.
    """

    type: ClassVar[str] = "checkpoint"
    thread_id: str
    checkpoint_id: str
    parent_id: str | None
    step: int
    next: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DoneEvent(EventBase):
    """The one terminal event: how the run ended and the state it ended with."""

    type: ClassVar[str] = "done"
    status: RunStatus
    state: Mapping[str, Any]
    errors: tuple[BaseException, ...]


Event = (
    RunStartEvent
    | NodeStartEvent
    | NodeEndEvent
    | NodeErrorEvent
    | NodeCancelledEvent
    | InterruptEvent
    | NodeSkippedEvent
    | CustomEvent
    | BlockStartEvent
    | BlockEndEvent
    | TextDeltaEvent
    | ToolCallStartEvent
    | ToolCallResultEvent
    | UsageEvent
    | CheckpointEvent
    | DoneEvent
)
"""Any event a run can emit."""
