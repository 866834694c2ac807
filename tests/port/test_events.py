"""Spec: AiEvents, their JSON form, and how engine events map to them.

AiEvents are frozen dataclasses with a ``type`` and the correlation fields;
``event_to_dict`` gives JSON-safe data that ``event_from_dict`` reads back
to an equal event. The mapping turns each engine event into zero, one or
more AiEvents, redacts every data field, and turns the engine's ``done``
into one ``error`` per error followed by exactly one ``done``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from pydantic import BaseModel

from flowcore.errors import NodeError
from flowcore.events import (
    BlockStartEvent,
    DoneEvent,
    Event,
    InterruptEvent,
    NodeCancelledEvent,
    NodeEndEvent,
    NodeErrorEvent,
    NodeSkippedEvent,
    NodeStartEvent,
    RunStartEvent,
    TextDeltaEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UsageEvent,
)
from flowcore.port import (
    AI_EVENT_TYPES,
    AiEvent,
    AiEventBase,
    AiEventMapper,
    Correlation,
    DoneAiEvent,
    ErrorAiEvent,
    EventFormatError,
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
    map_event,
)

IDS = Correlation(run_id="r1", request_id="req-1", trace_id="tr-1", thread_id="t1")
COMMON: dict[str, Any] = {
    "run_id": "r1",
    "graph_name": "chat",
    "graph_version": "3",
    "request_id": "req-1",
    "trace_id": "tr-1",
}
ENGINE: dict[str, Any] = {
    "run_id": "r1",
    "graph_name": "chat",
    "graph_version": "3",
    "superstep": 1,
    "timestamp": 0.0,
}
SECRET = "hunter2-secret"


def every_event() -> list[AiEvent]:
    return [
        RunStartAiEvent(**COMMON, seq=0, thread_id="t1"),
        NodeStartAiEvent(**COMMON, seq=1, node="a"),
        TextDeltaAiEvent(**COMMON, seq=2, node="a", invocation_id="i1", delta="Hel\nlo"),
        ToolCallStartAiEvent(
            **COMMON, seq=3, node="a", tool_call_id="c1", tool_name="t", args={"q": [1, 2]}
        ),
        ToolCallResultAiEvent(
            **COMMON,
            seq=4,
            node="a",
            tool_call_id="c1",
            tool_name="t",
            result={"hits": 3},
            is_error=False,
            error_code=None,
        ),
        UsageReportAiEvent(
            **COMMON,
            seq=5,
            node="a",
            invocation_id="i1",
            provider="p",
            model="m",
            input_tokens=10,
            output_tokens=2,
            cost_usd=0.001,
            prompt_hash="v1:abc",
        ),
        NodeEndAiEvent(**COMMON, seq=6, node="a", duration=0.5),
        NodeSkippedAiEvent(**COMMON, seq=7, node="b", reason="not_triggered"),
        NodeErrorAiEvent(**COMMON, seq=8, node="c", error="ValueError: x"),
        InterruptAiEvent(**COMMON, seq=9, node="d", interrupt_id="q1", value={"ask": "ok?"}),
        ErrorAiEvent(**COMMON, seq=10, error_type="NodeError", message="boom"),
        DoneAiEvent(**COMMON, seq=11, status="failed"),
    ]


# ----------------------------------------------------------------- shapes


def test_there_is_one_event_class_per_type_of_the_table() -> None:
    assert AI_EVENT_TYPES == (
        "run_start",
        "node_start",
        "node_end",
        "node_error",
        "node_skipped",
        "text_delta",
        "tool_call_start",
        "tool_call_result",
        "usage_report",
        "interrupt",
        "data",
        "error",
        "done",
    )
    assert [e.type for e in every_event()] == [
        "run_start",
        "node_start",
        "text_delta",
        "tool_call_start",
        "tool_call_result",
        "usage_report",
        "node_end",
        "node_skipped",
        "node_error",
        "interrupt",
        "error",
        "done",
    ]


def test_every_event_has_the_correlation_fields_and_is_frozen() -> None:
    for event in every_event():
        assert isinstance(event, AiEventBase)
        names = [f.name for f in dataclasses.fields(event)]
        assert names[:6] == [
            "run_id",
            "graph_name",
            "graph_version",
            "request_id",
            "trace_id",
            "seq",
        ]
        assert "type" not in names  # a ClassVar, not a field
        with pytest.raises(dataclasses.FrozenInstanceError):
            event.seq = 99  # type: ignore[misc]


def test_fields_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        DoneAiEvent("r1", "chat", "3", "q", "t", 0, "completed")  # type: ignore[misc]


# ------------------------------------------------------------- JSON form


@pytest.mark.parametrize("event", every_event(), ids=lambda e: e.type)
def test_every_event_survives_json_and_back(event: AiEvent) -> None:
    data = event_to_dict(event)
    assert data["type"] == event.type
    assert next(iter(data)) == "type"
    assert event_from_dict(json.loads(json.dumps(data))) == event


def test_data_fields_become_plain_json() -> None:
    class Draft(BaseModel):
        title: str

    @dataclasses.dataclass
    class Point:
        x: int

    event = InterruptAiEvent(
        **COMMON,
        seq=0,
        node="n",
        interrupt_id="i",
        value={"draft": Draft(title="t"), "at": Point(1), "tags": ("a", "b"), 7: float("inf")},
    )
    data = event_to_dict(event)
    assert data["value"] == {
        "draft": {"title": "t"},
        "at": {"x": 1},
        "tags": ["a", "b"],
        "7": "inf",
    }
    json.dumps(data, allow_nan=False)


def test_json_safe_keeps_plain_values_and_stringifies_the_rest() -> None:
    assert json_safe({"a": [1, 2.5, True, None, "s"]}) == {"a": [1, 2.5, True, None, "s"]}
    assert json_safe({3, 1, 2}) == [1, 2, 3]
    assert json_safe(b"bytes") == "bytes"
    assert json_safe(object) == str(object)


def test_extra_keys_are_ignored_when_reading_an_event_back() -> None:
    data = event_to_dict(every_event()[-1]) | {"added_in_a_later_version": 1}
    assert event_from_dict(data) == every_event()[-1]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "nope"}, "unknown AiEvent type 'nope'"),
        ({}, "unknown AiEvent type None"),
        ({"type": "done", "run_id": "r"}, "missing field(s) graph_name"),
    ],
)
def test_malformed_event_data_is_refused_with_a_clear_error(
    data: dict[str, Any], message: str
) -> None:
    with pytest.raises(EventFormatError, match=message.replace("(", r"\(").replace(")", r"\)")):
        event_from_dict(data)


# ----------------------------------------------------------------- mapping


def one(event: Event, *, seq: int = 0, redactor: Any = None) -> AiEvent:
    kwargs: dict[str, Any] = {} if redactor is None else {"redactor": redactor}
    (mapped,) = map_event(event, IDS, seq=seq, **kwargs)
    return mapped


class Scrub:
    """A toy redactor: removes SECRET from strings, deeply."""

    def redact(self, value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(SECRET, "[REDACTED]")
        if isinstance(value, dict):
            return {k: self.redact(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact(v) for v in value]
        return value

    def text_stream(self) -> HoldBack:
        return HoldBack(self)


class HoldBack:
    def __init__(self, scrub: Scrub) -> None:
        self.scrub, self.held = scrub, ""

    def feed(self, text: str) -> str:
        self.held = self.scrub.redact(self.held + text)
        keep = len(SECRET) - 1
        out, self.held = self.held[:-keep], self.held[-keep:]
        return str(out)

    def flush(self) -> str:
        out, self.held = self.held, ""
        return out


def test_node_lifecycle_events_map_one_to_one_with_the_callers_ids() -> None:
    start = one(NodeStartEvent(**ENGINE, node="a"), seq=4)
    end = one(NodeEndEvent(**ENGINE, node="a", update={"x": 1}, duration=0.25, attempts=1))
    skipped = one(NodeSkippedEvent(**ENGINE, node="b", reason="upstream_failed", detail="d"))
    failed = one(
        NodeErrorEvent(
            **ENGINE,
            node="c",
            error=NodeError(node="c", attempts=1, cause=ValueError(SECRET)),
            duration=0.1,
            attempts=1,
        ),
        redactor=Scrub(),
    )
    run_start = one(RunStartEvent(**ENGINE, input={"q": SECRET}))

    assert start == NodeStartAiEvent(**COMMON, seq=4, node="a")
    assert end == NodeEndAiEvent(**COMMON, seq=0, node="a", duration=0.25)
    assert skipped == NodeSkippedAiEvent(**COMMON, seq=0, node="b", reason="upstream_failed")
    assert isinstance(failed, NodeErrorAiEvent)
    assert failed.error.startswith("NodeError: node 'c' failed after 1 attempt: ValueError: ")
    assert SECRET not in failed.error
    assert "[REDACTED]" in failed.error
    assert run_start == RunStartAiEvent(**COMMON, seq=0, thread_id="t1")


def test_model_and_tool_events_map_with_their_data_redacted() -> None:
    delta = one(TextDeltaEvent(**ENGINE, node="a", block_id="b", text="Hi", invocation_id="i1"))
    usage = one(
        UsageEvent(
            **ENGINE,
            node="a",
            block_id="b",
            provider="openai",
            model="gpt",
            input_tokens=9,
            output_tokens=3,
            invocation_id="i1",
            prompt_hash="v1:ff",
            cost_usd=None,
        )
    )
    start = one(
        ToolCallStartEvent(
            **ENGINE, node="a", tool_call_id="c1", tool_name="t", args={"key": SECRET}
        ),
        redactor=Scrub(),
    )
    result = one(
        ToolCallResultEvent(
            **ENGINE,
            node="a",
            tool_call_id="c1",
            tool_name="t",
            result=None,
            is_error=True,
            error_code="execution",
            safe_message=f"tool failed near {SECRET}",
        ),
        redactor=Scrub(),
    )
    asked = one(
        InterruptEvent(**ENGINE, node="h", interrupt_id="q1", value={"draft": SECRET}),
        redactor=Scrub(),
    )

    assert delta == TextDeltaAiEvent(**COMMON, seq=0, node="a", invocation_id="i1", delta="Hi")
    assert usage == UsageReportAiEvent(
        **COMMON,
        seq=0,
        node="a",
        invocation_id="i1",
        provider="openai",
        model="gpt",
        input_tokens=9,
        output_tokens=3,
        cost_usd=None,
        prompt_hash="v1:ff",
    )
    assert start.args == {"key": "[REDACTED]"}  # type: ignore[union-attr]
    assert result.is_error and result.error_code == "execution"  # type: ignore[union-attr]  # noqa: PT018
    assert result.safe_message == "tool failed near [REDACTED]"  # type: ignore[union-attr]
    assert asked.value == {"draft": "[REDACTED]"}  # type: ignore[union-attr]


def test_engine_only_events_map_to_nothing() -> None:
    for event in (
        NodeCancelledEvent(**ENGINE, node="a", duration=0.1),
        BlockStartEvent(**ENGINE, node="a", block_id="b", block_version=1, kind="llm"),
    ):
        assert map_event(event, IDS, seq=0) == []


def test_the_engines_done_becomes_one_error_per_error_then_exactly_one_done() -> None:
    errors = (ValueError(f"first {SECRET}"), KeyError("second"))
    done = DoneEvent(**ENGINE, status="failed", state={}, errors=errors)
    mapped = map_event(done, IDS, seq=7, redactor=Scrub())

    assert [(e.type, e.seq) for e in mapped] == [("error", 7), ("error", 8), ("done", 9)]
    first, second, last = mapped
    assert (first.error_type, first.message) == ("ValueError", "first [REDACTED]")  # type: ignore[union-attr]
    assert second.error_type == "KeyError"  # type: ignore[union-attr]
    assert last == DoneAiEvent(**COMMON, seq=9, status="failed")


def test_a_run_that_ends_well_has_a_done_and_no_error() -> None:
    done = DoneEvent(**ENGINE, status="completed", state={"x": 1}, errors=())
    assert map_event(done, IDS, seq=3) == [DoneAiEvent(**COMMON, seq=3, status="completed")]


# ----------------------------------------------------------------- the mapper


def deltas(*pieces: str, invocation: str = "i1", node: str = "a") -> list[TextDeltaEvent]:
    return [
        TextDeltaEvent(**ENGINE, node=node, block_id="b", text=p, invocation_id=invocation)
        for p in pieces
    ]


def test_the_mapper_numbers_events_in_order_across_one_run() -> None:
    mapper = AiEventMapper(IDS)
    out: list[AiEvent] = []
    out += mapper.map(RunStartEvent(**ENGINE, input={}))
    out += mapper.map(NodeStartEvent(**ENGINE, node="a"))
    out += mapper.map(DoneEvent(**ENGINE, status="failed", state={}, errors=(ValueError("x"),)))
    assert [(e.type, e.seq) for e in out] == [
        ("run_start", 0),
        ("node_start", 1),
        ("error", 2),
        ("done", 3),
    ]


def test_a_secret_split_across_two_deltas_never_leaves_in_pieces() -> None:
    mapper = AiEventMapper(IDS, Scrub())
    half = len(SECRET) // 2
    out: list[AiEvent] = []
    for event in deltas("the password is ", SECRET[:half], SECRET[half:], " ok"):
        out += mapper.map(event)
    usage = UsageEvent(
        **ENGINE,
        node="a",
        block_id="b",
        provider="p",
        model="m",
        input_tokens=1,
        output_tokens=1,
        invocation_id="i1",
    )
    out += mapper.map(usage)

    text = "".join(e.delta for e in out if isinstance(e, TextDeltaAiEvent))
    assert text == "the password is [REDACTED] ok"
    assert all(SECRET[:half] not in e.delta for e in out if isinstance(e, TextDeltaAiEvent))
    assert out[-1].type == "usage_report"  # the held-back tail came before it
    assert [e.seq for e in out] == list(range(len(out)))


def test_held_back_text_is_flushed_when_the_node_ends_or_the_run_is_done() -> None:
    mapper = AiEventMapper(IDS, Scrub())
    out = mapper.map(deltas("short")[0])  # shorter than the hold-back: nothing yet
    assert out == []
    out = mapper.map(NodeEndEvent(**ENGINE, node="a", update=None, duration=0.1, attempts=1))
    assert [(e.type, getattr(e, "delta", None)) for e in out] == [
        ("text_delta", "short"),
        ("node_end", None),
    ]

    mapper.map(deltas("tail", invocation="i2", node="z")[0])
    out = mapper.map(DoneEvent(**ENGINE, status="cancelled", state={}, errors=()))
    assert [e.type for e in out] == ["text_delta", "done"]
    assert [e.seq for e in out] == [2, 3]


def test_the_mapper_can_end_a_run_that_never_reached_the_engine() -> None:
    ids = Correlation("r9", "req", "tr", graph_name="chat", graph_version="2")
    mapper = AiEventMapper(ids)
    out = mapper.run_start() + mapper.terminal("failed", [LookupError("no graph 'x'")])
    assert [(e.type, e.seq, e.graph_name, e.graph_version) for e in out] == [
        ("run_start", 0, "chat", "2"),
        ("error", 1, "chat", "2"),
        ("done", 2, "chat", "2"),
    ]
    assert (out[1].error_type, out[1].message) == ("LookupError", "no graph 'x'")  # type: ignore[union-attr]
