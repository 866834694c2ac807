"""From engine events to AiEvents.

:func:`map_event` is the pure mapping of one engine event
(:mod:`flowcore.events`) to the AiEvents it becomes, numbered from a given
``seq``. :class:`AiEventMapper` wraps it for one run: it numbers events in
order and runs each model call's text deltas through one streaming
redactor, so a secret split across two deltas is caught (the held-back
tail is flushed before the call's ``usage_report``, or when its node ends).

What maps to what:

- ``run_start`` -> ``run_start`` (with the run's thread id)
- ``node_start`` / ``node_end`` / ``node_error`` / ``node_skipped`` -> the same
- ``text_delta`` -> ``text_delta``; ``usage`` -> ``usage_report``
- ``tool_call_start`` / ``tool_call_result`` -> the same, data redacted
- ``interrupt`` -> ``interrupt``, value redacted
- ``custom`` (a node's ``ctx.emit(name, data)``) -> ``data``, data redacted
- ``done`` -> one ``error`` per error of the run, then exactly one ``done``
- ``node_cancelled``, ``block_start``, ``block_end`` -> nothing
  (a cancelled node's ``node_start`` is closed by the run's ``done``)
- ``checkpoint`` -> nothing: the AiEvent vocabulary has no checkpoint kind
  and no generic data kind to carry one; an app reads a thread's checkpoints
  with ``get_state_history``
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flowcore.events import (
    CustomEvent,
    DoneEvent,
    Event,
    InterruptEvent,
    NodeCancelledEvent,
    NodeEndEvent,
    NodeErrorEvent,
    NodeSkippedEvent,
    NodeStartEvent,
    RunStartEvent,
    RunStatus,
    TextDeltaEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UsageEvent,
)
from flowcore.port.events import (
    AiEvent,
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
)
from flowcore.port.redaction import NO_REDACTION, Redactor, TextStreamRedactor

__all__ = ["AiEventMapper", "Correlation", "describe_error", "map_event", "terminal_events"]


@dataclass(frozen=True, slots=True)
class Correlation:
    """The ids of one run that engine events do not carry themselves.

    ``graph_name`` / ``graph_version`` are used for events made without an
    engine event (a run that failed before its graph started).

    Example:
        >>> Correlation(run_id="r1", request_id="req-1", trace_id="tr-1").thread_id is None
        True
    """

    run_id: str
    request_id: str
    trace_id: str
    thread_id: str | None = None
    graph_name: str = ""
    graph_version: str = ""


def describe_error(error: BaseException, redactor: Redactor = NO_REDACTION) -> str:
    """``"<Type>: <message>"`` of ``error``, with secrets redacted.

    Example:
        >>> describe_error(ValueError("bad input"))
        'ValueError: bad input'
    """
    return str(redactor.redact(f"{type(error).__name__}: {error}"))


def _common(event: Event, ids: Correlation, seq: int) -> dict[str, Any]:
    return {
        "run_id": ids.run_id or event.run_id,
        "graph_name": event.graph_name,
        "graph_version": event.graph_version,
        "request_id": ids.request_id,
        "trace_id": ids.trace_id,
        "seq": seq,
        "namespace": event.namespace,
    }


def terminal_events(
    ids: Correlation,
    status: RunStatus,
    errors: Sequence[BaseException],
    *,
    seq: int,
    redactor: Redactor = NO_REDACTION,
    graph_name: str | None = None,
    graph_version: str | None = None,
) -> list[AiEvent]:
    """One ``error`` per error (redacted), then the one ``done``, numbered from ``seq``.

    Example:
        >>> ids = Correlation("r1", "req-1", "tr-1", graph_name="chat", graph_version="1")
        >>> [e.type for e in terminal_events(ids, "failed", [ValueError("x")], seq=5)]
        ['error', 'done']
    """
    common: dict[str, Any] = {
        "run_id": ids.run_id,
        "graph_name": ids.graph_name if graph_name is None else graph_name,
        "graph_version": ids.graph_version if graph_version is None else graph_version,
        "request_id": ids.request_id,
        "trace_id": ids.trace_id,
    }
    out: list[AiEvent] = [
        ErrorAiEvent(
            **common,
            seq=seq + i,
            error_type=type(err).__name__,
            message=str(redactor.redact(str(err))),
        )
        for i, err in enumerate(errors)
    ]
    out.append(DoneAiEvent(**common, seq=seq + len(out), status=status))
    return out


def map_event(
    event: Event, ids: Correlation, *, seq: int, redactor: Redactor = NO_REDACTION
) -> list[AiEvent]:
    """The AiEvents ``event`` becomes (often one, sometimes none), numbered from ``seq``.

    Text deltas are redacted one by one here; :class:`AiEventMapper` also
    catches secrets split across deltas.

    Example:
        >>> from flowcore.events import NodeStartEvent
        >>> ev = NodeStartEvent(run_id="r1", graph_name="chat", graph_version="1",
        ...                     superstep=1, timestamp=0.0, node="answer")
        >>> [(e.type, e.node, e.seq) for e in map_event(ev, Correlation("r1", "q", "t"), seq=3)]
        [('node_start', 'answer', 3)]
    """
    if isinstance(event, DoneEvent):
        return terminal_events(
            ids,
            event.status,
            event.errors,
            seq=seq,
            redactor=redactor,
            graph_name=event.graph_name,
            graph_version=event.graph_version,
        )
    common = _common(event, ids, seq)
    mapped: AiEvent
    if isinstance(event, RunStartEvent):
        mapped = RunStartAiEvent(**common, thread_id=ids.thread_id)
    elif isinstance(event, NodeStartEvent):
        mapped = NodeStartAiEvent(**common, node=event.node)
    elif isinstance(event, NodeEndEvent):
        mapped = NodeEndAiEvent(**common, node=event.node, duration=event.duration)
    elif isinstance(event, NodeErrorEvent):
        mapped = NodeErrorAiEvent(
            **common, node=event.node, error=describe_error(event.error, redactor)
        )
    elif isinstance(event, NodeSkippedEvent):
        mapped = NodeSkippedAiEvent(**common, node=event.node, reason=event.reason)
    elif isinstance(event, TextDeltaEvent):
        mapped = TextDeltaAiEvent(
            **common,
            node=event.node,
            invocation_id=event.invocation_id,
            delta=str(redactor.redact(event.text)),
        )
    elif isinstance(event, ToolCallStartEvent):
        mapped = ToolCallStartAiEvent(
            **common,
            node=event.node,
            tool_call_id=event.tool_call_id,
            tool_name=event.tool_name,
            args=redactor.redact(dict(event.args)),
        )
    elif isinstance(event, ToolCallResultEvent):
        mapped = ToolCallResultAiEvent(
            **common,
            node=event.node,
            tool_call_id=event.tool_call_id,
            tool_name=event.tool_name,
            result=None if event.result is None else redactor.redact(dict(event.result)),
            is_error=event.is_error,
            error_code=event.error_code,
            safe_message=None
            if event.safe_message is None
            else str(redactor.redact(event.safe_message)),
        )
    elif isinstance(event, UsageEvent):
        mapped = UsageReportAiEvent(
            **common,
            node=event.node,
            invocation_id=event.invocation_id,
            provider=event.provider,
            model=event.model,
            input_tokens=event.input_tokens,
            output_tokens=event.output_tokens,
            cost_usd=event.cost_usd,
            prompt_hash=event.prompt_hash,
        )
    elif isinstance(event, InterruptEvent):
        mapped = InterruptAiEvent(
            **common,
            node=event.node,
            interrupt_id=event.interrupt_id,
            value=redactor.redact(event.value),
        )
    elif isinstance(event, CustomEvent):
        mapped = DataAiEvent(
            **common, node=event.node, name=event.name, data=redactor.redact(event.data)
        )
    else:
        return []
    return [mapped]


class AiEventMapper:
    """Maps the engine events of one run, in order, to sequenced AiEvents.

    Example:
        >>> from flowcore.events import NodeStartEvent
        >>> mapper = AiEventMapper(Correlation("r1", "req-1", "tr-1"))
        >>> ev = NodeStartEvent(run_id="r1", graph_name="chat", graph_version="1",
        ...                     superstep=1, timestamp=0.0, node="answer")
        >>> [e.seq for e in mapper.map(ev) + mapper.map(ev)]
        [0, 1]
    """

    def __init__(self, ids: Correlation, redactor: Redactor = NO_REDACTION) -> None:
        self.ids = ids
        self.redactor = redactor
        self.seq = 0
        self.graph_name = ids.graph_name
        self.graph_version = ids.graph_version
        # One streaming redactor per model call still writing: invocation -> (node, stream).
        self._texts: dict[str, tuple[str, TextStreamRedactor, Event]] = {}

    def _numbered(self, events: list[AiEvent]) -> list[AiEvent]:
        self.seq += len(events)
        return events

    def _delta(self, source: Event, node: str, invocation: str, text: str) -> AiEvent:
        common = _common(source, self.ids, self.seq)
        self.seq += 1
        return TextDeltaAiEvent(**common, node=node, invocation_id=invocation, delta=text)

    def _flush(self, keep: Any) -> list[AiEvent]:
        out: list[AiEvent] = []
        for invocation in [i for i, (node, _, _) in self._texts.items() if keep(i, node)]:
            node, stream, source = self._texts.pop(invocation)
            rest = stream.flush()
            if rest:
                out.append(self._delta(source, node, invocation, rest))
        return out

    def map(self, event: Event) -> list[AiEvent]:
        """The AiEvents ``event`` becomes, numbered after the ones mapped before.

        Example:
            >>> # for ai_event in mapper.map(engine_event): queue.put_nowait(ai_event)
        """
        self.graph_name, self.graph_version = event.graph_name, event.graph_version
        if isinstance(event, TextDeltaEvent):
            key = event.invocation_id or f"{event.node}:"
            entry = self._texts.get(key)
            if entry is None:
                entry = (event.node, self.redactor.text_stream(), event)
                self._texts[key] = entry
            safe = entry[1].feed(event.text)
            return [self._delta(event, event.node, event.invocation_id, safe)] if safe else []
        flushed: list[AiEvent] = []
        if isinstance(event, UsageEvent):
            flushed = self._flush(lambda inv, node: inv == event.invocation_id)
        elif isinstance(event, NodeEndEvent | NodeErrorEvent | NodeCancelledEvent):
            flushed = self._flush(lambda inv, node: node == event.node)
        elif isinstance(event, DoneEvent):
            flushed = self._flush(lambda inv, node: True)
        return flushed + self._numbered(
            map_event(event, self.ids, seq=self.seq, redactor=self.redactor)
        )

    def terminal(self, status: RunStatus, errors: Sequence[BaseException] = ()) -> list[AiEvent]:
        """``error`` events and ``done`` for a run that ended without an engine ``done``.

        Example:
            >>> mapper = AiEventMapper(Correlation("r1", "req-1", "tr-1", graph_name="chat"))
            >>> [e.type for e in mapper.terminal("cancelled")]
            ['done']
        """
        events = terminal_events(
            self.ids,
            status,
            errors,
            seq=self.seq,
            redactor=self.redactor,
            graph_name=self.graph_name,
            graph_version=self.graph_version,
        )
        return self._numbered(events)

    def run_start(self) -> list[AiEvent]:
        """A ``run_start`` for a run that failed before its engine started.

        Example:
            >>> mapper = AiEventMapper(Correlation("r1", "req-1", "tr-1", graph_name="chat"))
            >>> [(e.type, e.seq) for e in mapper.run_start()]
            [('run_start', 0)]
        """
        event = RunStartAiEvent(
            run_id=self.ids.run_id,
            graph_name=self.graph_name,
            graph_version=self.graph_version,
            request_id=self.ids.request_id,
            trace_id=self.ids.trace_id,
            seq=self.seq,
            thread_id=self.ids.thread_id,
        )
        return self._numbered([event])
