"""AiEvents: what a run looks like to an app on the other side of the port.

They are a small, stable, JSON-friendly vocabulary, independent of the
engine's own events (:mod:`flowcore.events`): a UI streams them, a usage
ledger bills from them, a log stores them, and an executor running graphs in
another process sends them over a pipe with :func:`event_to_dict` /
:func:`event_from_dict`.

Every event carries the correlation fields ``run_id``, ``graph_name``,
``graph_version``, ``request_id``, ``trace_id`` and ``seq`` (0, 1, 2, ... per
run, in emission order). A run's stream opens with ``run_start`` and closes
with exactly one ``done``; a failed run's ``error`` events come just before
its ``done``.

Types and their extra fields:

- ``run_start``: ``thread_id``
- ``node_start``: ``node``
- ``node_end``: ``node``, ``duration``
- ``node_error``: ``node``, ``error`` (redacted)
- ``node_skipped``: ``node``, ``reason``
- ``text_delta``: ``node``, ``invocation_id``, ``delta``
- ``tool_call_start``: ``node``, ``tool_call_id``, ``tool_name``, ``args`` (redacted)
- ``tool_call_result``: ``node``, ``tool_call_id``, ``tool_name``, ``result``
  (allowlisted, redacted), ``is_error``, ``error_code``, ``safe_message``
- ``usage_report``: ``node``, ``invocation_id``, ``provider``, ``model``,
  ``input_tokens``, ``output_tokens``, ``cost_usd``, ``prompt_hash``
- ``interrupt``: ``node``, ``interrupt_id``, ``value`` (redacted)
- ``data``: ``node``, ``name``, ``data`` (redacted): what a node sent with
  ``ctx.emit(name, data)`` (the engine's ``custom`` event)
- ``error``: ``error_type``, ``message`` (redacted)
- ``done``: ``status``
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from pydantic import BaseModel

from flowcore.events import RunStatus
from flowcore.port.errors import EventFormatError

__all__ = [
    "AI_EVENT_TYPES",
    "AiEvent",
    "AiEventBase",
    "DataAiEvent",
    "DoneAiEvent",
    "ErrorAiEvent",
    "InterruptAiEvent",
    "NodeEndAiEvent",
    "NodeErrorAiEvent",
    "NodeSkippedAiEvent",
    "NodeStartAiEvent",
    "RunStartAiEvent",
    "TextDeltaAiEvent",
    "ToolCallResultAiEvent",
    "ToolCallStartAiEvent",
    "UsageReportAiEvent",
    "event_from_dict",
    "event_to_dict",
    "json_safe",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class AiEventBase:
    """The correlation fields every AiEvent has; ``type`` names the kind.

    Example:
        >>> ev = NodeStartAiEvent(run_id="r1", graph_name="chat", graph_version="1",
        ...                       request_id="req-1", trace_id="tr-1", seq=1, node="answer")
        >>> ev.type, ev.seq
        ('node_start', 1)
    """

    type: ClassVar[str] = "event"
    run_id: str
    graph_name: str
    graph_version: str
    request_id: str
    trace_id: str
    seq: int
    #: The engine event's namespace: empty for the run's own graph, else the enclosing
    #: subgraph tasks from the outside in (see :class:`flowcore.events.EventBase`).
    namespace: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStartAiEvent(AiEventBase):
    """The run began; ``thread_id`` is the thread it runs on (None: no thread)."""

    type: ClassVar[str] = "run_start"
    thread_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeStartAiEvent(AiEventBase):
    """A node began running."""

    type: ClassVar[str] = "node_start"
    node: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeEndAiEvent(AiEventBase):
    """A node finished, after ``duration`` seconds."""

    type: ClassVar[str] = "node_end"
    node: str
    duration: float


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeErrorAiEvent(AiEventBase):
    """A node failed for good; ``error`` is ``"<Type>: <message>"`` without secrets."""

    type: ClassVar[str] = "node_error"
    node: str
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeSkippedAiEvent(AiEventBase):
    """A node did not run: ``reason`` is ``"not_triggered"`` or ``"upstream_failed"``."""

    type: ClassVar[str] = "node_skipped"
    node: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDeltaAiEvent(AiEventBase):
    """A piece of text a model is writing in ``node``, during call ``invocation_id``."""

    type: ClassVar[str] = "text_delta"
    node: str
    invocation_id: str
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStartAiEvent(AiEventBase):
    """A tool call began; ``tool_call_id`` is shared with its result."""

    type: ClassVar[str] = "tool_call_start"
    node: str
    tool_call_id: str
    tool_name: str
    args: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallResultAiEvent(AiEventBase):
    """A tool call ended: ``result`` holds only the tool's allowlisted fields.

    A failed call has ``is_error``, an ``error_code`` (``validation``,
    ``execution``, ``unavailable`` or ``redaction_failed``) and a
    ``safe_message``.
    """

    type: ClassVar[str] = "tool_call_result"
    node: str
    tool_call_id: str
    tool_name: str
    result: Mapping[str, Any] | None
    is_error: bool
    error_code: str | None
    safe_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageReportAiEvent(AiEventBase):
    """What one model call consumed; ``cost_usd`` is None when the provider reports no price.

    ``invocation_id`` is shared with the call's text deltas; ``prompt_hash``
    fingerprints the request (see :func:`flowcore.llm.prompt_hash.prompt_hash`).
    """

    type: ClassVar[str] = "usage_report"
    node: str
    invocation_id: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    prompt_hash: str


@dataclass(frozen=True, slots=True, kw_only=True)
class InterruptAiEvent(AiEventBase):
    """``node`` asks a question (``value``); the run pauses until it is answered.

    Answer by running again on the same thread with
    ``RunOptions(thread_id=..., resume=answer)``.
    """

    type: ClassVar[str] = "interrupt"
    node: str
    interrupt_id: str
    value: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class DataAiEvent(AiEventBase):
    """App data a node sent with ``ctx.emit(name, data)``: progress, partial results, ...

    ``name`` is the node's own label for it; ``data`` is redacted, and
    becomes JSON-safe in :func:`event_to_dict`.

    Example:
        >>> ev = DataAiEvent(run_id="r1", graph_name="chat", graph_version="1",
        ...                  request_id="q", trace_id="t", seq=2, node="fetch",
        ...                  name="progress", data={"done": 1, "of": 3})
        >>> ev.type, ev.name
        ('data', 'progress')
    """

    type: ClassVar[str] = "data"
    node: str
    name: str
    data: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorAiEvent(AiEventBase):
    """Why a run failed (one event per error), sent just before ``done``."""

    type: ClassVar[str] = "error"
    error_type: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DoneAiEvent(AiEventBase):
    """The last event of every run: ``completed``, ``failed``, ``interrupted`` or ``cancelled``."""

    type: ClassVar[str] = "done"
    status: RunStatus


AiEvent = (
    RunStartAiEvent
    | NodeStartAiEvent
    | NodeEndAiEvent
    | NodeErrorAiEvent
    | NodeSkippedAiEvent
    | TextDeltaAiEvent
    | ToolCallStartAiEvent
    | ToolCallResultAiEvent
    | UsageReportAiEvent
    | InterruptAiEvent
    | DataAiEvent
    | ErrorAiEvent
    | DoneAiEvent
)
"""Any event a run's handle yields."""

_CLASSES: Final[tuple[type[AiEvent], ...]] = (
    RunStartAiEvent,
    NodeStartAiEvent,
    NodeEndAiEvent,
    NodeErrorAiEvent,
    NodeSkippedAiEvent,
    TextDeltaAiEvent,
    ToolCallStartAiEvent,
    ToolCallResultAiEvent,
    UsageReportAiEvent,
    InterruptAiEvent,
    DataAiEvent,
    ErrorAiEvent,
    DoneAiEvent,
)
_BY_TYPE: Final[Mapping[str, type[AiEvent]]] = {cls.type: cls for cls in _CLASSES}

AI_EVENT_TYPES: Final[tuple[str, ...]] = tuple(_BY_TYPE)
"""Every AiEvent ``type``, in table order."""


def json_safe(value: Any) -> Any:
    """``value`` as plain JSON data: dicts with str keys, lists, str, int, float, bool, None.

    Pydantic models and dataclasses become dicts, tuples and sets lists,
    enums their values, non-finite floats and anything else their ``str``.

    Example:
        >>> json_safe({"ids": (1, 2), 3: float("nan")})
        {'ids': [1, 2], '3': 'nan'}
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, enum.Enum):
        return json_safe(value.value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((json_safe(v) for v in value), key=repr)
    if isinstance(value, BaseModel):
        return json_safe(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def event_to_dict(event: AiEvent) -> dict[str, Any]:
    """The event as JSON-safe data, with its ``type`` first.

    ``namespace`` is written only when it is not empty (an event of a subgraph).

    Example:
        >>> ev = DoneAiEvent(run_id="r1", graph_name="chat", graph_version="1",
        ...                  request_id="req-1", trace_id="tr-1", seq=7, status="completed")
        >>> event_to_dict(ev)["type"], event_to_dict(ev)["status"]
        ('done', 'completed')
    """
    out: dict[str, Any] = {"type": event.type}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.name == "namespace" and not value:
            continue  # the run's own graph: the wire form stays as it was before namespaces
        out[f.name] = json_safe(value)
    return out


def event_from_dict(data: Mapping[str, Any]) -> AiEvent:
    """Read back what :func:`event_to_dict` wrote; unknown extra keys are ignored.

    Raises :class:`~flowcore.port.errors.EventFormatError` for an unknown
    ``type`` or a missing field.

    Example:
        >>> ev = event_from_dict({"type": "node_start", "run_id": "r1", "graph_name": "chat",
        ...     "graph_version": "1", "request_id": "q", "trace_id": "t", "seq": 1, "node": "a"})
        >>> type(ev).__name__, ev.node
        ('NodeStartAiEvent', 'a')
    """
    kind = data.get("type")
    cls = _BY_TYPE.get(kind) if isinstance(kind, str) else None
    if cls is None:
        known = ", ".join(AI_EVENT_TYPES)
        raise EventFormatError(f"unknown AiEvent type {kind!r}; expected one of: {known}")
    fields = dataclasses.fields(cls)
    missing = [
        f.name
        for f in fields
        if f.name not in data
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise EventFormatError(
            f"AiEvent {kind!r} is missing field(s) {', '.join(missing)}; "
            "serialize events with event_to_dict()"
        )
    try:
        values = {f.name: data[f.name] for f in fields if f.name in data}
        if "namespace" in values:  # JSON has lists only
            values["namespace"] = tuple(str(part) for part in values["namespace"])
        return cls(**values)
    except TypeError as exc:  # pragma: no cover - guarded by the checks above
        raise EventFormatError(f"AiEvent {kind!r}: {exc}") from None
