"""The executor port: one interface to run graphs, the AiEvent stream, fan-out and SSE.

An app talks to a :class:`GraphExecutorPort`; :class:`InProcExecutor` is
flowcore's engine behind it, and any other implementation that passes
``flowcore.testing.ExecutorConformance`` can take its place::

    executor = InProcExecutor(graphs={"chat": chat_graph})
    handle = executor.run(RunRequest("chat", {"question": "hi"}, Caller("req-1", "tr-1")))
    relay = RunEventRelay(handle)
    ui = relay.subscribe("ui", policy="best_effort")
    ledger = relay.subscribe("ledger")
    relay.start()
    async for chunk in sse_stream(ui): ...

``ui_message_stream(events)`` / ``ui_message_response(events)`` serve the
same events as the Vercel AI SDK's UI message stream (docs/ai-sdk.md).
See docs/port.md.
"""

from flowcore.port.errors import (
    EventFormatError,
    HandleConsumedError,
    InvalidTargetError,
    RelayStateError,
    UnknownTargetError,
)
from flowcore.port.events import (
    AI_EVENT_TYPES,
    AiEvent,
    AiEventBase,
    DataAiEvent,
    DoneAiEvent,
    ErrorAiEvent,
    InterruptAiEvent,
    NodeEndAiEvent,
    NodeErrorAiEvent,
    NodeSkippedAiEvent,
    NodeStartAiEvent,
    RunStartAiEvent,
    TextDeltaAiEvent,
    ToolCallResultAiEvent,
    ToolCallStartAiEvent,
    UsageReportAiEvent,
    event_from_dict,
    event_to_dict,
    json_safe,
)
from flowcore.port.inproc import EventGraph, EventStream, InProcExecutor, InProcRunHandle, Target
from flowcore.port.mapping import (
    AiEventMapper,
    Correlation,
    describe_error,
    map_event,
    terminal_events,
)
from flowcore.port.protocol import (
    UNSET,
    Caller,
    GraphExecutorPort,
    PendingQuestion,
    RunHandle,
    RunOptions,
    RunOutcome,
    RunRequest,
    UsageTotals,
)
from flowcore.port.redaction import NO_REDACTION, Redactor, TextStreamRedactor
from flowcore.port.relay import (
    DEFAULT_BEST_EFFORT_BUFFER,
    DEFAULT_RELIABLE_BUFFER,
    DeliveryPolicy,
    RunEventRelay,
    Subscription,
)
from flowcore.port.sse import KEEPALIVE, SSE_HEADERS, parse_sse, sse_stream, to_sse
from flowcore.port.ui_http import UIMessageResponse, ui_message_response
from flowcore.port.ui_stream import (
    UI_MESSAGE_STREAM_HEADERS,
    UIMessageEncoder,
    ui_message_chunks,
    ui_message_stream,
)

__all__ = [
    "AI_EVENT_TYPES",
    "DEFAULT_BEST_EFFORT_BUFFER",
    "DEFAULT_RELIABLE_BUFFER",
    "KEEPALIVE",
    "NO_REDACTION",
    "SSE_HEADERS",
    "UI_MESSAGE_STREAM_HEADERS",
    "UNSET",
    "AiEvent",
    "AiEventBase",
    "AiEventMapper",
    "Caller",
    "Correlation",
    "DataAiEvent",
    "DeliveryPolicy",
    "DoneAiEvent",
    "ErrorAiEvent",
    "EventFormatError",
    "EventGraph",
    "EventStream",
    "GraphExecutorPort",
    "HandleConsumedError",
    "InProcExecutor",
    "InProcRunHandle",
    "InterruptAiEvent",
    "InvalidTargetError",
    "NodeEndAiEvent",
    "NodeErrorAiEvent",
    "NodeSkippedAiEvent",
    "NodeStartAiEvent",
    "PendingQuestion",
    "Redactor",
    "RelayStateError",
    "RunEventRelay",
    "RunHandle",
    "RunOptions",
    "RunOutcome",
    "RunRequest",
    "RunStartAiEvent",
    "Subscription",
    "Target",
    "TextDeltaAiEvent",
    "TextStreamRedactor",
    "ToolCallResultAiEvent",
    "ToolCallStartAiEvent",
    "UIMessageEncoder",
    "UIMessageResponse",
    "UnknownTargetError",
    "UsageReportAiEvent",
    "UsageTotals",
    "describe_error",
    "event_from_dict",
    "event_to_dict",
    "json_safe",
    "map_event",
    "parse_sse",
    "sse_stream",
    "terminal_events",
    "to_sse",
    "ui_message_chunks",
    "ui_message_response",
    "ui_message_stream",
]
