"""Spec: AiEvents as Server-Sent Events text.

Each event is one SSE message (``event: <type>``, ``id: <seq>``, ``data:
<json>``, blank line); data with line breaks is split into several
``data:`` lines, as the SSE spec requires; ``sse_stream`` yields messages as
events arrive, with optional keep-alive comments; ``parse_sse`` reads the
text back into equal events.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from flowcore.port import (
    KEEPALIVE,
    SSE_HEADERS,
    AiEvent,
    Caller,
    DoneAiEvent,
    InProcExecutor,
    RunRequest,
    TextDeltaAiEvent,
    event_to_dict,
    parse_sse,
    sse_stream,
    to_sse,
)

from .graphs import chat_graph

GUARD = 30.0  # only reached when a spec fails; a busy machine stays far below it
COMMON: dict[str, Any] = {
    "run_id": "r1",
    "graph_name": "chat",
    "graph_version": "1",
    "request_id": "q",
    "trace_id": "t",
}


def test_an_event_is_one_message_with_its_type_seq_and_json_data() -> None:
    event = DoneAiEvent(**COMMON, seq=12, status="completed")
    assert to_sse(event) == (
        "event: done\n"
        "id: 12\n"
        'data: {"type":"done","run_id":"r1","graph_name":"chat","graph_version":"1",'
        '"request_id":"q","trace_id":"t","seq":12,"status":"completed"}\n'
        "\n"
    )


def test_line_breaks_in_text_never_break_the_message() -> None:
    event = TextDeltaAiEvent(**COMMON, seq=1, node="a", invocation_id="i", delta="a\nb\r\nc\rd")
    text = to_sse(event)
    # JSON escapes the breaks, so the message keeps exactly one data line and one blank line.
    assert text.count("\n\n") == 1
    assert text.endswith("\n\n")
    assert [line.split(":")[0] for line in text.splitlines() if line] == ["event", "id", "data"]
    assert parse_sse(text) == [event]


def test_multi_line_data_is_split_into_one_data_line_per_line() -> None:
    from flowcore.port.sse import _field

    assert _field("data", "one\ntwo\r\nthree\rfour") == (
        "data: one\ndata: two\ndata: three\ndata: four\n"
    )


def test_non_ascii_text_is_sent_as_utf8_text() -> None:
    event = TextDeltaAiEvent(**COMMON, seq=1, node="a", invocation_id="i", delta="Enten 🦆")
    assert "Enten 🦆" in to_sse(event)
    assert parse_sse(to_sse(event)) == [event]


def test_parse_sse_reads_several_messages_and_skips_comments() -> None:
    events = [
        TextDeltaAiEvent(**COMMON, seq=0, node="a", invocation_id="i", delta="Hi"),
        DoneAiEvent(**COMMON, seq=1, status="completed"),
    ]
    text = KEEPALIVE + to_sse(events[0]) + KEEPALIVE + to_sse(events[1])
    assert parse_sse(text) == events
    assert parse_sse(text.replace("\n", "\r\n")) == events


def test_parse_sse_joins_the_data_lines_of_one_message() -> None:
    event = DoneAiEvent(**COMMON, seq=1, status="completed")
    pretty = json.dumps(event_to_dict(event), indent=1)  # JSON over several lines
    text = "event: done\nid: 1\n" + "".join(f"data: {line}\n" for line in pretty.splitlines())
    assert parse_sse(text + "\n") == [event]


def test_the_headers_name_the_event_stream_and_turn_off_caching() -> None:
    assert SSE_HEADERS["Content-Type"].startswith("text/event-stream")
    assert SSE_HEADERS["Cache-Control"] == "no-cache"


async def test_sse_stream_turns_a_run_into_sse_text_as_it_happens() -> None:
    graph, _ = chat_graph()
    async with InProcExecutor() as executor:
        handle = executor.run(RunRequest(graph, {"question": "q"}, Caller("req-1", "trace-1")))
        async with asyncio.timeout(GUARD):
            chunks = [chunk async for chunk in sse_stream(handle)]

    assert all(chunk.endswith("\n\n") for chunk in chunks)
    events = parse_sse("".join(chunks))
    assert len(events) == len(chunks)
    assert events[0].type == "run_start"
    assert events[-1].type == "done"
    assert chunks[-1].startswith("event: done\n")
    assert [e.seq for e in events] == list(range(len(events)))


async def test_keepalive_comments_fill_the_silences_between_events() -> None:
    release = asyncio.Event()

    async def slow() -> AsyncIterator[AiEvent]:
        yield TextDeltaAiEvent(**COMMON, seq=0, node="a", invocation_id="i", delta="Hi")
        await release.wait()
        yield DoneAiEvent(**COMMON, seq=1, status="completed")

    chunks: list[str] = []
    async with asyncio.timeout(GUARD):
        async for chunk in sse_stream(slow(), keepalive=0.01):
            chunks.append(chunk)
            if chunks.count(KEEPALIVE) == 2:
                release.set()

    assert chunks[0].startswith("event: text_delta")
    assert chunks[1:3] == [KEEPALIVE, KEEPALIVE]
    assert chunks[-1].startswith("event: done")
    assert [e.type for e in parse_sse("".join(chunks))] == ["text_delta", "done"]


async def test_a_client_that_leaves_early_stops_the_stream_cleanly() -> None:
    stopped = asyncio.Event()

    async def endless() -> AsyncIterator[AiEvent]:
        try:
            for seq in range(1_000_000):
                yield TextDeltaAiEvent(**COMMON, seq=seq, node="a", invocation_id="i", delta="x")
                await asyncio.sleep(0.001)
        finally:
            stopped.set()

    stream = sse_stream(endless(), keepalive=1.0)
    assert (await anext(stream)).startswith("event: text_delta")
    await stream.aclose()
    async with asyncio.timeout(GUARD):
        await stopped.wait()
