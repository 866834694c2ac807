"""Spec: stream_events(version="v3") runs a graph lazily behind projection channels.

A v3 run is read through its handle: raw protocol events (numbered ``seq``),
``values``, ``lifecycle`` and ``subgraphs`` projections, transformers of the
caller's own, and ``output`` / ``interrupted`` / ``interrupts``.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    END,
    START,
    AsyncGraphRunStream,
    GraphRunStream,
    InMemorySaver,
    ProtocolEvent,
    StateGraph,
    StreamChannel,
    StreamTransformer,
    SubgraphRunStream,
    get_config,
    get_stream_writer,
    interrupt,
)


class State(TypedDict):
    value: str
    items: Annotated[list[str], operator.add]


START_STATE: State = {"value": "x", "items": []}


def _step(name: str) -> Any:
    def node(state: State) -> dict[str, Any]:
        return {"value": state["value"] + "_" + name, "items": [name]}

    return node


def _flat() -> Any:
    graph = StateGraph(State)
    graph.add_node("a", _step("a"))
    graph.add_node("b", _step("b"))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    return graph


def _nested(inner_node: Any = None) -> Any:
    inner = StateGraph(State)
    inner.add_node("i", inner_node or _step("i"))
    inner.add_edge(START, "i").add_edge("i", END)
    outer = StateGraph(State)
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "inner").add_edge("inner", END)
    return outer.compile()


def test_values_projection_gives_each_snapshot_and_output_is_the_last() -> None:
    run = _flat().compile().stream_events(START_STATE, version="v3")
    assert isinstance(run, GraphRunStream)
    assert [v["value"] for v in run.values] == ["x", "x_a", "x_a_b"]
    assert run.output == {"value": "x_a_b", "items": ["a", "b"]}
    assert run.interrupted is False


def test_raw_events_are_protocol_envelopes_numbered_in_order() -> None:
    events = list(_flat().compile().stream_events(START_STATE, version="v3"))
    assert {e["type"] for e in events} == {"event"}
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["method"] == "values"
    assert events[-1]["params"]["namespace"] == []


def test_nothing_runs_until_the_handle_is_read() -> None:
    calls: list[str] = []

    def a(state: State) -> dict[str, Any]:
        calls.append("a")
        return {}

    graph = StateGraph(State)
    graph.add_node("a", a)
    graph.add_edge(START, "a")
    run = graph.compile().stream_events(START_STATE, version="v3")
    assert calls == []
    assert run.output == START_STATE
    assert calls == ["a"]


def test_a_subgraph_reports_started_then_completed_on_lifecycle() -> None:
    run = _nested().stream_events(START_STATE, version="v3")
    events = list(run.lifecycle)
    assert [e["event"] for e in events] == ["started", "completed"]
    assert events[0]["graph_name"] == "inner"
    assert events[0]["namespace"][0].startswith("inner:")
    assert events[0]["trigger_call_id"] == events[0]["namespace"][0].split(":", 1)[1]


def test_a_subgraph_handle_sees_its_own_scope_only() -> None:
    run = _nested().stream_events(START_STATE, version="v3")
    seen: list[tuple[SubgraphRunStream, list[str]]] = []
    for handle in run.subgraphs:  # read while the run goes: a projection keeps nothing unread
        seen.append((handle, [v["value"] for v in handle.values]))
    assert len(seen) == 1
    handle, values = seen[0]
    assert isinstance(handle, SubgraphRunStream)
    assert handle.graph_name == "inner"
    assert values == ["x_i"]
    assert handle.status == "completed"


def test_a_failing_subgraph_fails_its_handle_and_the_run() -> None:
    def boom(state: State) -> dict[str, Any]:
        raise ValueError("child boom")

    run = _nested(boom).stream_events(START_STATE, version="v3")
    lifecycle = iter(run.lifecycle)
    events = [next(lifecycle), next(lifecycle)]
    with pytest.raises(ValueError, match="child boom"):
        next(lifecycle)
    assert events[-1] == {
        "event": "failed",
        "namespace": events[0]["namespace"],
        "error": "child boom",
    }


def test_an_interrupt_is_reported_by_the_handle() -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"value": interrupt("why?")}

    graph = StateGraph(State)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    app = graph.compile(checkpointer=InMemorySaver())
    run = app.stream_events(START_STATE, {"configurable": {"thread_id": "t"}}, version="v3")
    assert run.interrupted is True
    assert [i.value for i in run.interrupts] == ["why?"]


class Shouts(StreamTransformer):
    """Collects custom writes upper-cased on a named channel."""

    required_stream_modes = ("custom",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self.channel: StreamChannel[str] = StreamChannel("shouts")

    def init(self) -> dict[str, Any]:
        return {"shouts": self.channel}

    def process(self, event: ProtocolEvent) -> bool:
        if event["method"] == "custom":
            self.channel.push(str(event["params"]["data"]).upper())
        return True


def _writer_graph() -> Any:
    def speak(state: State) -> dict[str, Any]:
        get_stream_writer()("hi")
        return {}

    graph = StateGraph(State)
    graph.add_node("speak", speak)
    graph.add_edge(START, "speak")
    return graph


def test_a_callers_transformer_gets_its_modes_and_its_channel_reaches_the_log() -> None:
    run = _writer_graph().compile().stream_events(START_STATE, version="v3", transformers=[Shouts])
    assert list(run.extensions["shouts"]) == ["HI"]
    run = _writer_graph().compile().stream_events(START_STATE, version="v3", transformers=[Shouts])
    methods = [e["method"] for e in run]
    assert "custom:shouts" in methods


def test_compile_transformers_apply_to_every_run() -> None:
    app = _writer_graph().compile(transformers=[Shouts])
    assert list(app.stream_events(START_STATE, version="v3").extensions["shouts"]) == ["HI"]


def test_ready_made_transformers_and_owned_options_are_refused() -> None:
    app = _flat().compile()
    with pytest.raises(TypeError, match="scope-aware"):
        app.stream_events(START_STATE, version="v3", transformers=[Shouts()])
    with pytest.raises(TypeError, match="stream_mode"):
        app.stream_events(START_STATE, version="v3", stream_mode="values")


def test_the_async_handle_drives_the_graph_from_its_projections() -> None:
    async def main() -> tuple[list[Any], Any]:
        run = await _nested().astream_events(START_STATE, version="v3")
        assert isinstance(run, AsyncGraphRunStream)
        lifecycle = [e["event"] async for e in run.lifecycle]
        return lifecycle, await run.output()

    lifecycle, output = asyncio.run(main())
    assert lifecycle == ["started", "completed"]
    assert output == {"value": "x_i", "items": ["i"]}


def test_abort_stops_the_run_and_closes_projections() -> None:
    run = _flat().compile().stream_events(START_STATE, version="v3")
    with run:
        first = next(iter(run.values))
    assert first["value"] == "x"
    assert run._mux._events._closed


def test_messages_projection_gives_a_finished_stream_per_whole_message() -> None:
    # Reading run.messages as LangChain streams: the caller loads LangChain, flowcore never does.
    # Reading run.messages as LangChain streams: the caller loads LangChain, flowcore never does.
    pytest.importorskip("langchain_core.language_models.chat_model_stream")
    from flowcore.compat.langgraph import AIMessage, MessagesState

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="hello there", id="m1")]}

    graph = StateGraph(MessagesState)
    graph.add_node("reply", reply)
    graph.add_edge(START, "reply")
    run = graph.compile().stream_events({"messages": [("user", "hi")]}, version="v3")
    (stream,) = list(run.messages)
    assert stream.node == "reply"
    assert stream.message_id == "m1"
    assert stream.output.text == "hello there"


def test_with_config_graphs_stream_v3_with_their_config() -> None:
    def read(state: State) -> dict[str, Any]:
        return {"value": get_config()["configurable"]["who"]}

    graph = StateGraph(State)
    graph.add_node("read", read)
    graph.add_edge(START, "read")
    app = graph.compile().with_config({"configurable": {"who": "me"}})
    assert app.stream_events(START_STATE, version="v3").output["value"] == "me"
