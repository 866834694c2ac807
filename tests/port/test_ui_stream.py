"""Spec: AiEvents as the AI SDK's UI message stream (protocol v1).

A run becomes one assistant message: ``start`` first, exactly one
``finish`` last, then ``data: [DONE]``. A model call's text is one text
part (``text-start`` before its deltas, ``text-end`` before its step
closes); a tool call keeps one ``toolCallId`` from ``tool-input-start`` to
its output, and every started call gets an output, also when the run ends
first; flowcore's own events are ``data-*`` parts whose ids let an update
replace what it updates; errors are ``error`` chunks without secrets.
:func:`well_formed` checks the ordering rules the SDK's message builder
enforces, so every spec here also holds for the real client (the Node
check in ``test_ui_stream_node.py`` runs that client).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from flowcore.port import (
    AiEvent,
    AiEventBase,
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
from flowcore.port.ui_stream import (
    DONE_LINE,
    UI_MESSAGE_STREAM_HEADERS,
    UIMessageEncoder,
    encode_chunk,
    ui_message_chunks,
    ui_message_stream,
)
from flowcore.secrets import SecretRedactor

from .ui_streams import SECRET, STREAMS, record_texts

COMMON: dict[str, Any] = {
    "run_id": "r1",
    "graph_name": "chat",
    "graph_version": "1",
    "request_id": "q",
    "trace_id": "t",
}


class Events:
    """Builds a run's AiEvents with increasing ``seq``."""

    def __init__(self) -> None:
        self.seq = 0

    def _next(self) -> dict[str, Any]:
        self.seq += 1
        return {**COMMON, "seq": self.seq - 1}

    def run_start(self, thread_id: str | None = None) -> AiEvent:
        return RunStartAiEvent(**self._next(), thread_id=thread_id)

    def node_start(self, node: str) -> AiEvent:
        return NodeStartAiEvent(**self._next(), node=node)

    def node_end(self, node: str) -> AiEvent:
        return NodeEndAiEvent(**self._next(), node=node, duration=0.5)

    def node_error(self, node: str, error: str) -> AiEvent:
        return NodeErrorAiEvent(**self._next(), node=node, error=error)

    def text(self, node: str, call: str, delta: str) -> AiEvent:
        return TextDeltaAiEvent(**self._next(), node=node, invocation_id=call, delta=delta)

    def usage(self, node: str, call: str, cost: float | None = None) -> AiEvent:
        return UsageReportAiEvent(
            **self._next(),
            node=node,
            invocation_id=call,
            provider="scripted",
            model="m1",
            input_tokens=10,
            output_tokens=3,
            cost_usd=cost,
            prompt_hash="v1:abc",
        )

    def tool(self, node: str, call_id: str, args: dict[str, Any]) -> AiEvent:
        return ToolCallStartAiEvent(
            **self._next(), node=node, tool_call_id=call_id, tool_name="lookup", args=args
        )

    def result(self, node: str, call_id: str, result: dict[str, Any] | None = None) -> AiEvent:
        failed = result is None
        return ToolCallResultAiEvent(
            **self._next(),
            node=node,
            tool_call_id=call_id,
            tool_name="lookup",
            result=result,
            is_error=failed,
            error_code="execution" if failed else None,
            safe_message="the lookup service is down" if failed else None,
        )

    def error(self, message: str) -> AiEvent:
        return ErrorAiEvent(**self._next(), error_type="NodeError", message=message)

    def done(self, status: Any = "completed") -> AiEvent:
        return DoneAiEvent(**self._next(), status=status)


def encode(events: Iterable[AiEvent], **options: Any) -> list[dict[str, Any]]:
    encoder = UIMessageEncoder(**options)
    chunks = [chunk for event in events for chunk in encoder.feed(event)]
    return chunks + encoder.close()


def well_formed(chunks: list[dict[str, Any]]) -> None:
    """The ordering rules the SDK's message builder enforces, plus flowcore's own promises."""
    assert chunks[0]["type"] == "start"
    assert [c["type"] for c in chunks].count("finish") == 1
    assert chunks[-1]["type"] == "finish"
    open_texts: set[str] = set()
    used_texts: set[str] = set()
    started_tools: list[str] = []
    outputs: list[str] = []
    step_open = False
    for chunk in chunks:
        kind = chunk["type"]
        if kind == "text-start":
            assert chunk["id"] not in used_texts, f"text id {chunk['id']} reused"
            open_texts.add(chunk["id"])
            used_texts.add(chunk["id"])
            assert step_open, "text outside a step"
        elif kind in ("text-delta", "text-end"):
            assert chunk["id"] in open_texts, f"{kind} for a text part that is not open"
            if kind == "text-end":
                open_texts.discard(chunk["id"])
        elif kind == "start-step":
            assert not step_open, "a step opened inside a step"
            step_open = True
        elif kind == "finish-step":
            assert step_open, "finish-step without a step"
            assert not open_texts, "finish-step with text parts still open"
            step_open = False
        elif kind == "tool-input-start":
            assert chunk["toolCallId"] not in started_tools, "a tool call id was reused"
            started_tools.append(chunk["toolCallId"])
        elif kind in ("tool-input-delta", "tool-input-available"):
            assert chunk["toolCallId"] in started_tools, f"{kind} before tool-input-start"
        elif kind in ("tool-output-available", "tool-output-error"):
            assert chunk["toolCallId"] in started_tools, "output of a tool call never started"
            outputs.append(chunk["toolCallId"])
        elif kind.startswith("data-"):
            assert "data" in chunk
    assert not step_open
    assert not open_texts
    assert sorted(outputs) == sorted(started_tools), "every tool call gets exactly one output"


def types(chunks: list[dict[str, Any]]) -> list[str]:
    return [c["type"] for c in chunks]


# ------------------------------------------------------------------ wire


def test_headers_name_the_protocol_version_and_turn_off_buffering() -> None:
    assert UI_MESSAGE_STREAM_HEADERS["x-vercel-ai-ui-message-stream"] == "v1"
    assert UI_MESSAGE_STREAM_HEADERS["content-type"] == "text/event-stream"
    assert UI_MESSAGE_STREAM_HEADERS["x-accel-buffering"] == "no"


def test_a_chunk_is_one_data_line_of_compact_json_even_with_line_breaks() -> None:
    line = encode_chunk({"type": "text-delta", "id": "t", "delta": "a\nb\r\nc"})
    assert line.startswith("data: {")
    assert line.endswith("}\n\n")
    assert line.count("\n") == 2
    assert json.loads(line.removeprefix("data: "))["delta"] == "a\nb\r\nc"


async def aiter_of(events: list[AiEvent]) -> AsyncIterator[AiEvent]:
    for event in events:
        yield event


async def test_the_stream_is_data_lines_ending_with_done() -> None:
    ev = Events()
    run = [ev.run_start(), ev.node_start("a"), ev.text("a", "c1", "Hi"), ev.node_end("a")]
    lines = [line async for line in ui_message_stream(aiter_of([*run, ev.done()]))]
    assert lines[-1] == DONE_LINE
    assert all(line.startswith("data: ") and line.endswith("\n\n") for line in lines)
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    well_formed(chunks)


# ------------------------------------------------------------------ text


def test_text_start_comes_before_the_deltas_and_one_call_is_one_text_part() -> None:
    ev = Events()
    chunks = encode(
        [
            ev.run_start(),
            ev.node_start("answer"),
            ev.text("answer", "call-a", "Hel"),
            ev.text("answer", "call-a", "lo"),
            ev.usage("answer", "call-a"),
            ev.node_end("answer"),
            ev.done(),
        ]
    )
    well_formed(chunks)
    text = [c for c in chunks if c["type"].startswith("text-")]
    assert types(text) == ["text-start", "text-delta", "text-delta", "text-end"]
    assert {c["id"] for c in text} == {"text-call-a"}
    assert "".join(c["delta"] for c in text if c["type"] == "text-delta") == "Hello"
    # the part ends with its call, before the call's usage is reported
    assert types(chunks).index("text-end") < types(chunks).index("data-usage")


def test_start_names_the_message_and_carries_the_run_ids() -> None:
    ev = Events()
    start = encode([ev.run_start(thread_id="th-1"), ev.done()])[0]
    assert start["messageId"] == "r1"  # the run id unless the app gives one
    assert start["messageMetadata"] == {
        "runId": "r1",
        "graphName": "chat",
        "graphVersion": "1",
        "requestId": "q",
        "traceId": "t",
        "status": "running",
        "threadId": "th-1",
    }
    assert encode([ev.run_start()], message_id="m-7")[0]["messageId"] == "m-7"


def test_each_model_call_after_a_finished_one_is_a_new_step() -> None:
    ev = Events()
    chunks = encode(
        [
            ev.node_start("agent"),
            ev.text("agent", "c1", "Let me look."),
            ev.usage("agent", "c1"),
            ev.tool("agent", "t1", {"topic": "ducks"}),
            ev.result("agent", "t1", {"fact": "they quack"}),
            ev.text("agent", "c2", "They quack."),
            ev.usage("agent", "c2"),
            ev.node_end("agent"),
            ev.done(),
        ]
    )
    well_formed(chunks)
    core = [t for t in types(chunks) if not t.startswith("data-")]
    assert core == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-output-available",
        "finish-step",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]


def test_a_call_that_only_asks_for_tools_is_a_step_of_its_own() -> None:
    ev = Events()
    chunks = encode(
        [
            ev.text("agent", "c1", "First I look."),
            ev.usage("agent", "c1"),
            ev.tool("agent", "t1", {}),
            ev.result("agent", "t1", {"ok": 1}),
            ev.usage("agent", "c2"),  # no text: straight to a tool call
            ev.tool("agent", "t2", {}),
            ev.result("agent", "t2", {"ok": 2}),
            ev.done(),
        ]
    )
    well_formed(chunks)
    steps: list[list[str]] = []
    for chunk in chunks:
        if chunk["type"] == "start-step":
            steps.append([])
        elif chunk["type"] == "tool-input-start":
            steps[-1].append(chunk["toolCallId"])
    assert steps == [["t1"], ["t2"]]


def test_interleaved_calls_of_parallel_nodes_stay_valid_across_a_step_change() -> None:
    ev = Events()
    chunks = encode(
        [
            ev.node_start("a"),
            ev.node_start("b"),
            ev.text("a", "a1", "A says "),
            ev.text("b", "b1", "B says "),
            ev.usage("a", "a1"),
            ev.text("a", "a2", "A again"),  # a new call after a finished one: next step
            ev.text("b", "b1", "more"),  # b's call goes on: a new part in the new step
            ev.usage("b", "b1"),
            ev.usage("a", "a2"),
            ev.node_end("a"),
            ev.node_end("b"),
            ev.done(),
        ]
    )
    well_formed(chunks)
    starts = [c["id"] for c in chunks if c["type"] == "text-start"]
    assert starts == ["text-a1", "text-b1", "text-a2", "text-b1-2"]
    b_text = "".join(
        c["delta"] for c in chunks if c["type"] == "text-delta" and c["id"].startswith("text-b1")
    )
    assert b_text == "B says more"


def test_text_without_an_invocation_id_still_gets_a_stable_part() -> None:
    ev = Events()
    chunks = encode([ev.text("n", "", "x"), ev.text("n", "", "y"), ev.node_end("n"), ev.done()])
    well_formed(chunks)
    ids = {c["id"] for c in chunks if c["type"].startswith("text-")}
    assert len(ids) == 1


# ------------------------------------------------------------------ tools


def test_a_tool_call_keeps_its_id_from_input_to_output() -> None:
    ev = Events()
    chunks = encode(
        [
            ev.tool("agent", "call-9", {"topic": "life"}),
            ev.result("agent", "call-9", {"fact": "42"}),
            ev.done(),
        ]
    )
    well_formed(chunks)
    tool = [c for c in chunks if c["type"].startswith("tool-")]
    assert {c["toolCallId"] for c in tool} == {"call-9"}
    assert tool[0] == {"type": "tool-input-start", "toolCallId": "call-9", "toolName": "lookup"}
    assert tool[1]["inputTextDelta"] == '{"topic":"life"}'
    assert tool[2]["input"] == {"topic": "life"}
    assert tool[3] == {
        "type": "tool-output-available",
        "toolCallId": "call-9",
        "output": {"fact": "42"},
    }


def test_a_failed_tool_call_is_an_output_error_with_its_code_and_safe_message() -> None:
    ev = Events()
    chunks = encode([ev.tool("n", "c", {}), ev.result("n", "c", None), ev.done()])
    well_formed(chunks)
    error = next(c for c in chunks if c["type"] == "tool-output-error")
    assert error["errorText"] == "execution: the lookup service is down"


def test_a_repeated_tool_call_id_never_merges_two_calls() -> None:
    # Three loop passes that reuse one id (issue 19: ids of tool blocks repeat).
    ev = Events()
    run = []
    for i in range(3):
        run += [ev.tool("t", "run:t:1", {"pass": i}), ev.result("t", "run:t:1", {"n": i})]
    chunks = encode([*run, ev.done()])
    well_formed(chunks)
    outputs = [
        (c["toolCallId"], c["output"]) for c in chunks if c["type"] == "tool-output-available"
    ]
    assert outputs == [("run:t:1", {"n": 0}), ("run:t:1#2", {"n": 1}), ("run:t:1#3", {"n": 2})]


def test_an_empty_tool_call_id_gets_one_of_its_own() -> None:
    ev = Events()
    chunks = encode([ev.tool("t", "", {}), ev.result("t", "", {"ok": 1}), ev.done()])
    well_formed(chunks)
    assert {c["toolCallId"] for c in chunks if "toolCallId" in c} == {"tool-call#1"}


def test_a_tool_call_cut_off_by_the_end_of_the_run_still_gets_an_output() -> None:
    ev = Events()
    chunks = encode([ev.tool("t", "c1", {}), ev.done("cancelled")])
    well_formed(chunks)
    error = next(c for c in chunks if c["type"] == "tool-output-error")
    assert error == {
        "type": "tool-output-error",
        "toolCallId": "c1",
        "errorText": "the tool call did not finish: the run ended cancelled",
    }
    assert types(chunks)[-3:] == ["finish-step", "abort", "finish"]


def test_a_result_whose_start_was_not_seen_announces_the_call_first() -> None:
    ev = Events()
    chunks = encode([ev.result("t", "late", {"x": 1}), ev.done()])
    assert types(chunks)[2:4] == ["tool-input-available", "tool-output-available"]


# ------------------------------------------------------------------ data parts


def test_a_node_run_is_one_data_part_replaced_by_how_it_ended() -> None:
    ev = Events()
    chunks = encode(
        [
            ev.node_start("plan"),
            ev.node_end("plan"),
            ev.node_start("plan"),  # a second pass of a loop
            ev.node_error("plan", "NodeError: boom"),
            NodeSkippedAiEvent(**COMMON, seq=9, node="after", reason="upstream_failed"),
            ev.done("failed"),
        ]
    )
    nodes = [(c["id"], c["data"]["status"]) for c in chunks if c["type"] == "data-node"]
    assert nodes == [
        ("plan#1", "running"),
        ("plan#1", "completed"),
        ("plan#2", "running"),
        ("plan#2", "failed"),
        ("after#1", "skipped"),
    ]
    failed = [c for c in chunks if c["type"] == "data-node"][3]["data"]
    assert failed == {"node": "plan", "status": "failed", "error": "NodeError: boom"}


def test_usage_is_a_data_part_per_call_and_summed_in_the_finish_metadata() -> None:
    ev = Events()
    chunks = encode([ev.usage("a", "c1", cost=0.25), ev.usage("a", "c2", cost=0.5), ev.done()])
    usage = [c for c in chunks if c["type"] == "data-usage"]
    assert [c["id"] for c in usage] == ["c1", "c2"]
    assert usage[0]["data"]["inputTokens"] == 10
    assert usage[0]["data"]["model"] == "m1"
    finish = chunks[-1]
    assert finish["finishReason"] == "stop"
    assert finish["messageMetadata"] == {
        "status": "completed",
        "usage": {"inputTokens": 20, "outputTokens": 6, "costUsd": 0.75, "calls": 2},
    }


def test_an_interrupt_is_a_data_part_and_the_message_finishes_as_other() -> None:
    ev = Events()
    question = InterruptAiEvent(
        **COMMON, seq=5, node="approve", interrupt_id="i-1", value={"question": "Ship it?"}
    )
    chunks = encode([ev.node_start("approve"), question, ev.done("interrupted")])
    well_formed(chunks)
    part = next(c for c in chunks if c["type"] == "data-interrupt")
    assert part == {
        "type": "data-interrupt",
        "id": "i-1",
        "data": {"node": "approve", "interruptId": "i-1", "value": {"question": "Ship it?"}},
    }
    assert chunks[-1]["finishReason"] == "other"
    assert chunks[-1]["messageMetadata"]["status"] == "interrupted"


@dataclass(frozen=True, slots=True, kw_only=True)
class CustomAiEvent(AiEventBase):
    """The shape of a custom event (``ctx.emit(name, data)``) once the port passes them on."""

    type: ClassVar[str] = "custom"
    node: str
    name: str
    data: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class NewKindAiEvent(AiEventBase):
    """An AiEvent kind this mapping was written before."""

    type: ClassVar[str] = "retry_wait"
    node: str
    delay: float


def test_event_kinds_the_mapping_does_not_name_become_data_parts_of_their_own() -> None:
    encoder = UIMessageEncoder()
    progress = CustomAiEvent(**COMMON, seq=0, node="n", name="progress", data={"done": 3})
    odd = CustomAiEvent(**COMMON, seq=1, node="n", name="not a name!", data=[1])
    later = NewKindAiEvent(**COMMON, seq=2, node="n", delay=0.5)
    chunks = encoder.feed(progress) + encoder.feed(odd) + encoder.feed(later)  # type: ignore[arg-type]
    assert chunks[1:] == [
        {"type": "data-progress", "data": {"done": 3}},
        {"type": "data-custom", "data": [1]},
        {"type": "data-retry_wait", "data": {"node": "n", "delay": 0.5}},
    ]


# ------------------------------------------------------------------ endings


def test_exactly_one_finish_and_nothing_after_done() -> None:
    ev = Events()
    encoder = UIMessageEncoder()
    chunks = encoder.feed(ev.done()) + encoder.feed(ev.node_start("late")) + encoder.close()
    assert types(chunks) == ["start", "finish"]


def test_a_failed_run_sends_its_error_closes_open_parts_and_finishes_as_error() -> None:
    ev = Events()
    chunks = encode(
        [
            ev.node_start("answer"),
            ev.text("answer", "c1", "The answer is"),
            ev.tool("answer", "t1", {}),
            ev.error("node 'answer' failed"),
            ev.done("failed"),
        ]
    )
    well_formed(chunks)
    assert {"type": "error", "errorText": "NodeError: node 'answer' failed"} in chunks
    assert chunks[-1]["finishReason"] == "error"


async def test_events_that_raise_still_end_the_stream_with_a_redacted_error() -> None:
    ev = Events()

    async def broken() -> AsyncIterator[AiEvent]:
        yield ev.node_start("a")
        yield ev.text("a", "c1", "half a sent")
        raise ConnectionError(f"lost the executor at key {SECRET}")

    redactor = SecretRedactor([SECRET])
    lines = [line async for line in ui_message_stream(broken(), redactor=redactor)]
    assert lines[-1] == DONE_LINE
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    well_formed(chunks)
    assert SECRET not in "".join(lines)
    error = next(c for c in chunks if c["type"] == "error")
    assert error["errorText"] == "ConnectionError: lost the executor at key [REDACTED]"


async def test_events_that_end_without_done_end_the_message_as_cancelled() -> None:
    ev = Events()
    chunks = [c async for c in ui_message_chunks(aiter_of([ev.node_start("a")]))]
    well_formed(chunks)
    assert types(chunks)[-2:] == ["abort", "finish"]
    assert chunks[-1]["messageMetadata"]["status"] == "cancelled"


def test_the_redactor_given_is_applied_to_every_string_that_leaves() -> None:
    ev = Events()
    redactor = SecretRedactor([SECRET])
    chunks = encode(
        [
            ev.text("a", "c1", f"key {SECRET}"),
            ev.tool("a", "t1", {"key": SECRET}),
            ev.result("a", "t1", {"echo": SECRET}),
            ev.error(f"bad key {SECRET}"),
            ev.done("failed"),
        ],
        redactor=redactor,
    )
    assert SECRET not in json.dumps(chunks)
    assert "[REDACTED]" in json.dumps(chunks)


async def test_keepalive_comments_are_sent_while_the_run_is_quiet() -> None:
    ev = Events()
    release = asyncio.Event()

    async def slow() -> AsyncIterator[AiEvent]:
        yield ev.node_start("wait")
        await release.wait()
        yield ev.done()

    lines: list[str] = []
    async for line in ui_message_stream(slow(), keepalive=0.01):
        lines.append(line)
        if line.startswith(":"):
            release.set()
    assert any(line == ": keep-alive\n\n" for line in lines)
    assert lines[-1] == DONE_LINE
    data = [json.loads(x.removeprefix("data: ")) for x in lines[:-1] if x.startswith("data: ")]
    well_formed(data)


# ------------------------------------------------------------------ real runs


@pytest.fixture(scope="module")
def recorded() -> dict[str, str]:
    return asyncio.run(record_texts())


def chunks_of(text: str) -> list[dict[str, Any]]:
    assert text.endswith(DONE_LINE)
    parts = [p for p in text.split("\n\n") if p]
    assert parts[-1] == "data: [DONE]"
    return [json.loads(p.removeprefix("data: ")) for p in parts[:-1]]


@pytest.mark.parametrize("name", STREAMS)
def test_every_recorded_run_is_well_formed(recorded: dict[str, str], name: str) -> None:
    well_formed(chunks_of(recorded[name]))


def test_the_recorded_runs_end_as_their_runs_did(recorded: dict[str, str]) -> None:
    endings = {
        name: chunks_of(text)[-1]["messageMetadata"]["status"] for name, text in recorded.items()
    }
    assert endings == {
        "text_run": "completed",
        "tool_loop": "completed",
        "interrupted_run": "interrupted",
        "failed_run": "failed",
    }
    tools = [c for c in chunks_of(recorded["tool_loop"]) if c["type"] == "tool-input-start"]
    assert [c["toolCallId"] for c in tools] == ["call-1", "call-2", "call-3"]


def test_the_failed_run_streams_no_secret(recorded: dict[str, str]) -> None:
    text = recorded["failed_run"]
    assert SECRET not in text
    errors = [c for c in chunks_of(text) if c["type"] == "error"]
    assert len(errors) == 1
    assert "upstream refused key [REDACTED]" in errors[0]["errorText"]
