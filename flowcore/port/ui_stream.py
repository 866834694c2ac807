"""AiEvents as the Vercel AI SDK's UI message stream (protocol v1).

A browser app built on the AI SDK (``useChat``, assistant-ui's AI SDK
runtime) reads a run's answer from an HTTP response with the header
``x-vercel-ai-ui-message-stream: v1`` whose body is Server-Sent Events, one
JSON *chunk* per ``data:`` line, closed by ``data: [DONE]``.
:func:`ui_message_stream` turns the AiEvents of one run into those lines;
:class:`UIMessageEncoder` is the pure mapping behind it.

What each AiEvent becomes (chunk ``type`` names are the SDK's):

- the first event -> ``start`` (``messageId``; ``messageMetadata`` with the
  run's correlation ids and ``status: "running"``)
- ``text_delta`` -> ``text-start`` (once per model call; the part ``id`` is
  the call's ``invocation_id``), then ``text-delta``; the part is closed
  with ``text-end`` when the call reports its usage, when its node ends, or
  before the step closes
- ``tool_call_start`` -> ``tool-input-start``, one ``tool-input-delta``
  with the arguments as JSON text, ``tool-input-available`` (``input``)
- ``tool_call_result`` -> ``tool-output-available`` (``output``), or
  ``tool-output-error`` (``errorText``) for a failed call
- steps: a ``start-step`` opens before the first text or tool chunk; a model
  call that starts (or, streaming no text, reports its usage) after an
  earlier call of the step has finished closes it (``finish-step``) and
  opens the next, so one step is one model call and the tool calls it asked
  for, as the SDK's own agents stream it
- ``node_start`` / ``node_end`` / ``node_error`` / ``node_skipped`` ->
  ``data-node`` with ``id`` ``"<node>#<n>"`` (the node's n-th run), so the
  start is replaced by how the run of the node ended
- ``usage_report`` -> ``data-usage`` (``id``: the call's ``invocation_id``)
- ``interrupt`` -> ``data-interrupt`` (``id``: the ``interrupt_id``)
- a custom event (``type == "custom"`` with a ``name``) -> ``data-<name>``;
  any other AiEvent type -> ``data-<type>`` with its fields
- ``error`` -> ``error`` (``errorText``: ``"<Type>: <message>"``)
- ``done`` -> open text parts closed, tool calls still without a result
  closed with ``tool-output-error``, ``finish-step``, ``abort`` for a
  cancelled run, then exactly one ``finish`` (``finishReason`` ``stop``,
  ``error`` for a failed run, ``other`` for an interrupted or cancelled
  one; ``messageMetadata`` with the status and the summed token usage)

flowcore's models stream no reasoning, so no ``reasoning-*`` chunk is sent;
``run_start`` and ``checkpoint``-like bookkeeping become nothing beyond the
``start`` chunk. Every string that leaves goes through the ``redactor``
given (the port has redacted the events already; this is the last mile).
See docs/ai-sdk.md.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from flowcore.port.events import (
    AiEvent,
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
    event_to_dict,
    json_safe,
)
from flowcore.port.mapping import describe_error
from flowcore.port.redaction import NO_REDACTION, Redactor
from flowcore.port.sse import KEEPALIVE, with_keepalive

__all__ = [
    "DONE_LINE",
    "UI_MESSAGE_STREAM_HEADERS",
    "UIMessageEncoder",
    "encode_chunk",
    "ui_message_chunks",
    "ui_message_stream",
]

UI_MESSAGE_STREAM_HEADERS: Final[Mapping[str, str]] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""Response headers of a UI message stream: the protocol marker, and no caching or buffering."""

DONE_LINE: Final = "data: [DONE]\n\n"
"""The last line of every UI message stream."""

_FINISH_REASONS: Final[Mapping[str, str]] = {
    "completed": "stop",
    "failed": "error",
    "interrupted": "other",
    "cancelled": "other",
}
# Correlation fields every AiEvent carries; data parts leave them out (the
# ``start`` chunk's metadata has them once).
_CORRELATION: Final = frozenset(
    {"type", "run_id", "graph_name", "graph_version", "request_id", "trace_id", "seq"}
)
_DATA_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def encode_chunk(chunk: Mapping[str, Any]) -> str:
    """One SSE line for ``chunk``: ``data: <compact JSON>`` and a blank line.

    JSON escapes line breaks, so a chunk is always exactly one ``data:`` line.

    Example:
        >>> encode_chunk({"type": "text-delta", "id": "t1", "delta": "Hi"})
        'data: {"type":"text-delta","id":"t1","delta":"Hi"}\\n\\n'
    """
    return f"data: {json.dumps(chunk, separators=(',', ':'), ensure_ascii=False)}\n\n"


@dataclass
class _Text:
    part_id: str
    node: str


@dataclass
class _Tool:
    wire_id: str
    node: str
    tool_name: str


@dataclass
class _Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    calls: int = 0


@dataclass
class UIMessageEncoder:
    """The chunks of one run's UI message, fed AiEvents in order.

    :meth:`feed` returns the chunks (as dicts) an event becomes;
    :meth:`close` returns what still has to be sent when the events end
    without a ``done`` (or with an error of the stream itself), and nothing
    after ``finish`` was sent. It keeps the ids the SDK needs stable: one
    text part per model call, one ``toolCallId`` per tool call from start to
    result (a tool call id seen before gets a ``#2``, ``#3``... suffix, so a
    repeated id never merges two calls), one data part id per node run.

    Example:
        >>> from flowcore.port.events import NodeStartAiEvent
        >>> enc = UIMessageEncoder(message_id="m1")
        >>> ev = NodeStartAiEvent(run_id="r1", graph_name="chat", graph_version="1",
        ...                       request_id="q", trace_id="t", seq=0, node="answer")
        >>> [c["type"] for c in enc.feed(ev)], [c["type"] for c in enc.close()]
        (['start', 'data-node'], ['abort', 'finish'])
    """

    message_id: str | None = None
    redactor: Redactor = NO_REDACTION
    started: bool = False
    finished: bool = False
    _step_open: bool = False
    # Model calls seen in the open step, and those of them that reported usage.
    _step_calls: set[str] = field(default_factory=set)
    _step_done_calls: set[str] = field(default_factory=set)
    _texts: dict[str, _Text] = field(default_factory=dict)  # invocation -> open part
    _segments: dict[str, int] = field(default_factory=dict)  # invocation -> parts so far
    _tools: dict[str, deque[_Tool]] = field(default_factory=dict)  # event id -> open calls
    _tool_ids: dict[str, int] = field(default_factory=dict)  # event id -> times started
    _node_runs: dict[str, int] = field(default_factory=dict)
    _open_nodes: dict[str, deque[str]] = field(default_factory=dict)
    _usage: _Usage = field(default_factory=_Usage)

    # ------------------------------------------------------------ helpers

    def _safe(self, value: Any) -> Any:
        return json_safe(self.redactor.redact(json_safe(value)))

    def _start(self, event: AiEvent) -> list[dict[str, Any]]:
        if self.started:
            return []
        self.started = True
        meta: dict[str, Any] = {
            "runId": event.run_id,
            "graphName": event.graph_name,
            "graphVersion": event.graph_version,
            "requestId": event.request_id,
            "traceId": event.trace_id,
            "status": "running",
        }
        if isinstance(event, RunStartAiEvent) and event.thread_id is not None:
            meta["threadId"] = event.thread_id
        return [
            {
                "type": "start",
                "messageId": self.message_id or event.run_id,
                "messageMetadata": self._safe(meta),
            }
        ]

    def _open_step(self) -> list[dict[str, Any]]:
        if self._step_open:
            return []
        self._step_open = True
        return [{"type": "start-step"}]

    def _end_texts(self, keep: Any = None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for invocation in list(self._texts):
            text = self._texts[invocation]
            if keep is None or keep(invocation, text):
                del self._texts[invocation]
                out.append({"type": "text-end", "id": text.part_id})
        return out

    def _close_step(self) -> list[dict[str, Any]]:
        if not self._step_open:
            return []
        # The SDK forgets open text parts at finish-step: close them first; a
        # call that goes on streaming gets a new part in the next step.
        out = self._end_texts()
        self._step_open = False
        self._step_calls.clear()
        self._step_done_calls.clear()
        out.append({"type": "finish-step"})
        return out

    def _node_part(self, event: AiEvent, node: str, data: dict[str, Any]) -> dict[str, Any]:
        key = "/".join((*event.namespace, node))
        if data["status"] == "running":
            count = self._node_runs.get(key, 0) + 1
            self._node_runs[key] = count
            part_id = f"{key}#{count}"
            self._open_nodes.setdefault(key, deque()).append(part_id)
        else:
            waiting = self._open_nodes.get(key)
            if waiting:
                part_id = waiting.popleft()
            else:  # skipped (never started), or the stream was joined late
                count = self._node_runs.get(key, 0) + 1
                self._node_runs[key] = count
                part_id = f"{key}#{count}"
        payload: dict[str, Any] = {"node": node, **data}
        if event.namespace:
            payload["namespace"] = list(event.namespace)
        return {"type": "data-node", "id": part_id, "data": self._safe(payload)}

    # ------------------------------------------------------------ events

    def _text(self, event: TextDeltaAiEvent) -> list[dict[str, Any]]:
        invocation = event.invocation_id or f"{'/'.join(event.namespace)}/{event.node}"
        out: list[dict[str, Any]] = []
        text = self._texts.get(invocation)
        if text is None:
            if invocation not in self._step_calls and self._step_done_calls:
                out += self._close_step()  # a new model call after a finished one: next step
            out += self._open_step()
            self._step_calls.add(invocation)
            n = self._segments.get(invocation, 0) + 1
            self._segments[invocation] = n
            part_id = f"text-{invocation}" if n == 1 else f"text-{invocation}-{n}"
            text = self._texts[invocation] = _Text(part_id, event.node)
            out.append({"type": "text-start", "id": part_id})
        out.append({"type": "text-delta", "id": text.part_id, "delta": self._safe(event.delta)})
        return out

    def _wire_id(self, tool_call_id: str) -> str:
        # The id the client sees: the event's id the first time, then a
        # numbered variant, so a repeated or empty id never merges two calls.
        seen = self._tool_ids.get(tool_call_id, 0) + 1
        self._tool_ids[tool_call_id] = seen
        base = tool_call_id or "tool-call"
        return base if seen == 1 and tool_call_id else f"{base}#{seen}"

    def _tool_start(self, event: ToolCallStartAiEvent) -> list[dict[str, Any]]:
        out = self._open_step()
        wire_id = self._wire_id(event.tool_call_id)
        self._tools.setdefault(event.tool_call_id, deque()).append(
            _Tool(wire_id, event.node, event.tool_name)
        )
        args = self._safe(event.args)
        common = {"toolCallId": wire_id, "toolName": event.tool_name}
        out += [
            {"type": "tool-input-start", **common},
            {
                "type": "tool-input-delta",
                "toolCallId": wire_id,
                "inputTextDelta": json.dumps(args, separators=(",", ":"), ensure_ascii=False),
            },
            {"type": "tool-input-available", **common, "input": args},
        ]
        return out

    def _tool_result(self, event: ToolCallResultAiEvent) -> list[dict[str, Any]]:
        waiting = self._tools.get(event.tool_call_id)
        out: list[dict[str, Any]] = []
        if waiting:
            call = waiting.popleft()
        else:
            # A result whose start this stream never saw: the SDK needs the
            # call to exist before its output, so announce it with no input.
            out += self._open_step()
            wire = self._wire_id(event.tool_call_id)
            call = _Tool(wire, event.node, event.tool_name)
            out.append(
                {
                    "type": "tool-input-available",
                    "toolCallId": wire,
                    "toolName": event.tool_name,
                    "input": None,
                }
            )
        if event.is_error:
            reason = event.safe_message or "the tool call failed"
            text = f"{event.error_code}: {reason}" if event.error_code else reason
            error = {"type": "tool-output-error", "toolCallId": call.wire_id}
            out.append({**error, "errorText": self._safe(text)})
        else:
            out.append(
                {
                    "type": "tool-output-available",
                    "toolCallId": call.wire_id,
                    "output": self._safe(event.result),
                }
            )
        return out

    def _usage_report(self, event: UsageReportAiEvent) -> list[dict[str, Any]]:
        invocation = event.invocation_id
        out = self._end_texts(lambda inv, _text: inv == invocation)
        if invocation not in self._step_calls:
            # A call that streamed no text (it only asks for tools) is a step
            # of its own too: the tool calls that follow belong to it.
            if self._step_done_calls:
                out += self._close_step()
            out += self._open_step()
            self._step_calls.add(invocation)
        self._step_done_calls.add(invocation)
        usage = self._usage
        usage.input_tokens += event.input_tokens
        usage.output_tokens += event.output_tokens
        usage.calls += 1
        if event.cost_usd is not None:
            usage.cost_usd = (usage.cost_usd or 0.0) + event.cost_usd
        data = {
            "node": event.node,
            "invocationId": invocation,
            "provider": event.provider,
            "model": event.model,
            "inputTokens": event.input_tokens,
            "outputTokens": event.output_tokens,
            "costUsd": event.cost_usd,
            "promptHash": event.prompt_hash,
        }
        part_id = invocation or f"usage-{usage.calls}"
        out.append({"type": "data-usage", "id": part_id, "data": self._safe(data)})
        return out

    def _other(self, event: AiEvent) -> list[dict[str, Any]]:
        # Kinds this mapping does not know by name (custom events, kinds added
        # to the port later) still reach the app, as data parts of their own.
        data = {k: v for k, v in event_to_dict(event).items() if k not in _CORRELATION}
        name = str(data.get("name", "")) if event.type == "custom" else event.type
        if not _DATA_NAME.fullmatch(name):
            name = "custom" if event.type == "custom" else "event"
        payload = data.get("data") if event.type == "custom" else data
        return [{"type": f"data-{name}", "data": self._safe(payload)}]

    def _finish(self, status: str, error: str | None = None) -> list[dict[str, Any]]:
        out = self._end_texts()
        for waiting in self._tools.values():
            while waiting:
                call = waiting.popleft()
                out.append(
                    {
                        "type": "tool-output-error",
                        "toolCallId": call.wire_id,
                        "errorText": f"the tool call did not finish: the run ended {status}",
                    }
                )
        out += self._close_step()
        if error is not None:
            out.append({"type": "error", "errorText": self._safe(error)})
        if status == "cancelled":
            out.append({"type": "abort", "reason": "cancelled"})
        usage = self._usage
        meta = {
            "status": status,
            "usage": {
                "inputTokens": usage.input_tokens,
                "outputTokens": usage.output_tokens,
                "costUsd": usage.cost_usd,
                "calls": usage.calls,
            },
        }
        reason = _FINISH_REASONS.get(status, "other")
        out.append({"type": "finish", "finishReason": reason, "messageMetadata": meta})
        self.finished = True
        return out

    def feed(self, event: AiEvent) -> list[dict[str, Any]]:
        """The chunks ``event`` becomes (the ``start`` chunk before the first).

        Events after ``done`` give nothing: the message is finished.

        Example:
            >>> # for chunk in encoder.feed(event): write(encode_chunk(chunk))
        """
        if self.finished:
            return []
        return self._start(event) + self._chunks(event)

    def _chunks(self, event: AiEvent) -> list[dict[str, Any]]:
        if isinstance(event, RunStartAiEvent):
            return []  # its ids went into the ``start`` chunk
        if isinstance(event, TextDeltaAiEvent):
            return self._text(event)
        if isinstance(event, ToolCallStartAiEvent):
            return self._tool_start(event)
        if isinstance(event, ToolCallResultAiEvent):
            return self._tool_result(event)
        if isinstance(event, UsageReportAiEvent):
            return self._usage_report(event)
        if isinstance(event, NodeStartAiEvent):
            return [self._node_part(event, event.node, {"status": "running"})]
        if isinstance(event, NodeEndAiEvent | NodeErrorAiEvent):
            # The node's model calls are over: their text parts end with it.
            out = self._end_texts(lambda _inv, text: text.node == event.node)
            data: dict[str, Any] = (
                {"status": "completed", "duration": event.duration}
                if isinstance(event, NodeEndAiEvent)
                else {"status": "failed", "error": event.error}
            )
            out.append(self._node_part(event, event.node, data))
            return out
        if isinstance(event, NodeSkippedAiEvent):
            data = {"status": "skipped", "reason": event.reason}
            return [self._node_part(event, event.node, data)]
        if isinstance(event, InterruptAiEvent):
            data = {"node": event.node, "interruptId": event.interrupt_id, "value": event.value}
            return [{"type": "data-interrupt", "id": event.interrupt_id, "data": self._safe(data)}]
        if isinstance(event, ErrorAiEvent):
            text = f"{event.error_type}: {event.message}"
            return [{"type": "error", "errorText": self._safe(text)}]
        if isinstance(event, DoneAiEvent):
            return self._finish(event.status)
        return self._other(event)

    def close(self, error: BaseException | None = None) -> list[dict[str, Any]]:
        """What ends the message when the events stopped early (nothing if it is finished).

        ``error`` is why they stopped (it becomes an ``error`` chunk,
        redacted); without it the message ends as ``cancelled``.

        Example:
            >>> chunks = UIMessageEncoder(message_id="m1").close(RuntimeError("gone"))
            >>> [c["type"] for c in chunks], chunks[1]["errorText"]
            (['start', 'error', 'finish'], 'RuntimeError: gone')
        """
        if self.finished:
            return []
        out: list[dict[str, Any]] = []
        if not self.started:
            self.started = True
            out.append({"type": "start", "messageId": self.message_id or ""})
        if error is None:
            return out + self._finish("cancelled")
        return out + self._finish("failed", describe_error(error, self.redactor))


async def ui_message_chunks(
    events: AsyncIterable[AiEvent],
    *,
    message_id: str | None = None,
    redactor: Redactor = NO_REDACTION,
) -> AsyncIterator[dict[str, Any]]:
    """The UI message chunks of a run's AiEvents, as dicts, always ending with ``finish``.

    If ``events`` raises, the error becomes an ``error`` chunk (redacted)
    and the message still finishes; ``message_id`` defaults to the run id.

    Example:
        >>> # async for chunk in ui_message_chunks(handle): print(chunk["type"])
    """
    encoder = UIMessageEncoder(message_id=message_id, redactor=redactor)
    try:
        async for event in events:
            for chunk in encoder.feed(event):
                yield chunk
    except Exception as exc:  # the stream must end cleanly for the client all the same
        for chunk in encoder.close(exc):
            yield chunk
        return
    for chunk in encoder.close():
        yield chunk


async def ui_message_stream(
    events: AsyncIterable[AiEvent],
    *,
    message_id: str | None = None,
    redactor: Redactor = NO_REDACTION,
    keepalive: float | None = None,
) -> AsyncIterator[str]:
    """The SSE lines of a UI message stream for ``events``, ending with ``data: [DONE]``.

    Send them with :data:`UI_MESSAGE_STREAM_HEADERS` (see
    :func:`flowcore.port.ui_http.ui_message_response`). With ``keepalive``
    (seconds), an SSE comment is sent whenever no chunk came for that long;
    the SDK's parser skips comments.

    Example:
        >>> # async for line in ui_message_stream(handle, keepalive=15):
        >>> #     writer.write(line.encode()); await writer.drain()
    """
    chunks = ui_message_chunks(events, message_id=message_id, redactor=redactor)
    async for chunk in with_keepalive(chunks, keepalive):
        yield KEEPALIVE if chunk is None else encode_chunk(chunk)
    yield DONE_LINE
