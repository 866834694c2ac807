"""Spec: what a node sends with ``ctx.emit(name, data)`` passes through the port as ``data``.

The engine's ``custom`` event becomes a ``DataAiEvent`` (``node``, ``name``,
``data``) in its place in the run's stream, redacted like every other data
field, JSON-safe on the wire and through SSE.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, TypedDict

from flowcore import START, Graph, NodeContext
from flowcore.events import CustomEvent
from flowcore.port import (
    Caller,
    Correlation,
    DataAiEvent,
    InProcExecutor,
    RunRequest,
    event_from_dict,
    event_to_dict,
    map_event,
    parse_sse,
    to_sse,
)

SECRET = "hunter2-secret"
ENGINE: dict[str, Any] = {
    "run_id": "r1",
    "graph_name": "chat",
    "graph_version": "3",
    "superstep": 1,
    "timestamp": 0.0,
}


class Scrub:
    """A toy redactor: removes SECRET from strings, deeply."""

    def redact(self, value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(SECRET, "[REDACTED]")
        if isinstance(value, dict):
            return {k: self.redact(v) for k, v in value.items()}
        return value

    def text_stream(self) -> Any:  # pragma: no cover - no text in these specs
        raise NotImplementedError


def test_a_custom_event_maps_to_one_data_event_with_its_data_redacted() -> None:
    event = CustomEvent(**ENGINE, node="fetch", name="progress", data={"note": SECRET, "n": 1})

    (mapped,) = map_event(event, Correlation("r1", "req-1", "tr-1"), seq=4, redactor=Scrub())

    assert mapped == DataAiEvent(
        run_id="r1",
        graph_name="chat",
        graph_version="3",
        request_id="req-1",
        trace_id="tr-1",
        seq=4,
        node="fetch",
        name="progress",
        data={"note": "[REDACTED]", "n": 1},
    )


def test_a_data_event_is_json_safe_on_the_wire_and_through_sse() -> None:
    event = DataAiEvent(
        run_id="r1",
        graph_name="chat",
        graph_version="3",
        request_id="q",
        trace_id="t",
        seq=2,
        node="fetch",
        name="rows",
        data={"ids": (1, 2), "ok": True},
    )

    data = event_to_dict(event)
    (parsed,) = parse_sse(to_sse(event))

    assert data["type"] == "data"
    assert data["data"] == {"ids": [1, 2], "ok": True}
    assert event_from_dict(data).data == {"ids": [1, 2], "ok": True}  # type: ignore[union-attr]
    assert parsed == event_from_dict(data)


class State(TypedDict, total=False):
    rows: int


async def test_a_nodes_custom_events_reach_the_ports_stream_in_order() -> None:
    async def fetch(state: Mapping[str, Any], ctx: NodeContext) -> dict[str, Any]:
        for done in (1, 2):
            ctx.emit("progress", {"done": done, "of": 2, "token": SECRET})
        return {"rows": 2}

    graph = Graph(State, name="fetcher")
    graph.add_node("fetch", fetch)
    graph.add_edge(START, "fetch")
    async with InProcExecutor(graphs={"f": graph.compile()}, redactor=Scrub()) as executor:
        handle = executor.run(RunRequest("f", {}, Caller("req-1", "tr-1")))
        async with asyncio.timeout(30):
            events = [e async for e in handle]

    kinds = [e.type for e in events]
    assert kinds == ["run_start", "node_start", "data", "data", "node_end", "done"]
    data = [e for e in events if isinstance(e, DataAiEvent)]
    assert [(e.node, e.name) for e in data] == [("fetch", "progress")] * 2
    assert [e.data for e in data] == [
        {"done": 1, "of": 2, "token": "[REDACTED]"},
        {"done": 2, "of": 2, "token": "[REDACTED]"},
    ]
    assert [e.seq for e in events] == list(range(len(events)))
