"""RemoteGraph: a graph on a LangGraph server, driven through a fake SDK client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any, NamedTuple, TypedDict

import pytest

from flowcore.compat.langgraph import (
    START,
    Command,
    GraphInterrupt,
    InMemorySaver,
    Interrupt,
    ParentCommand,
    RemoteException,
    RemoteGraph,
    StateGraph,
    StateSnapshot,
)
from flowcore.compat.langgraph._remote_run_stream import (
    AsyncRemoteGraphRunStream,
    ChannelProjection,
    RemoteGraphRunStream,
)


class Part(NamedTuple):
    """What the SDK's ``runs.stream`` yields."""

    event: str
    data: Any
    id: str | None = None


class FakeRuns:
    """``client.runs``: records each ``stream`` call and replays ``parts``."""

    def __init__(self, parts: list[Part], *, sync: bool) -> None:
        self.parts = parts
        self.sync = sync
        self.calls: list[dict[str, Any]] = []
        self.cancelled: list[tuple[Any, ...]] = []

    def stream(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        parts = list(self.parts)
        if self.sync:
            return iter(parts)

        async def replay() -> AsyncIterator[Part]:
            for part in parts:
                yield part

        return replay()

    def cancel(self, thread_id: str, run_id: str, *, wait: bool) -> None:
        self.cancelled.append((thread_id, run_id, wait))


class FakeThreads:
    """``client.threads``: canned server answers, and the calls made."""

    def __init__(self, sync: bool) -> None:
        self.sync = sync
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.state: dict[str, Any] = {}
        self.history: list[dict[str, Any]] = []
        self.stream_thread: Any = None

    def _answer(self, name: str, kwargs: dict[str, Any], value: Any) -> Any:
        self.calls.append((name, kwargs))
        if self.sync:
            return value

        async def later() -> Any:
            return value

        return later()

    def get_state(self, **kwargs: Any) -> Any:
        return self._answer("get_state", kwargs, self.state)

    def get_history(self, **kwargs: Any) -> Any:
        return self._answer("get_history", kwargs, self.history)

    def update_state(self, **kwargs: Any) -> Any:
        return self._answer("update_state", kwargs, {"checkpoint": CHECKPOINT})

    def stream(self, **kwargs: Any) -> Any:
        self.calls.append(("stream", kwargs))
        return self.stream_thread


class FakeAssistants:
    def __init__(self, sync: bool) -> None:
        self.sync = sync

    def get_graph(self, **kwargs: Any) -> Any:
        graph = {
            "nodes": [
                {"id": "__start__", "type": "schema", "data": "__start__"},
                {"id": "agent", "type": "runnable", "data": {"name": "agent_v1"}},
            ],
            "edges": [{"source": "__start__", "target": "agent"}],
        }
        if self.sync:
            return graph

        async def later() -> Any:
            return graph

        return later()


class FakeClient:
    """A LangGraph SDK client: ``runs``, ``threads`` and ``assistants``."""

    def __init__(self, parts: list[Part] | None = None, *, sync: bool) -> None:
        self.runs = FakeRuns(parts or [], sync=sync)
        self.threads = FakeThreads(sync)
        self.assistants = FakeAssistants(sync)


CHECKPOINT = {"thread_id": "t1", "checkpoint_ns": "", "checkpoint_id": "c2"}
STATE = {
    "values": {"x": 3},
    "next": ["b"],
    "checkpoint": CHECKPOINT,
    "metadata": {"step": 2},
    "created_at": "2026-01-01",
    "parent_checkpoint": {**CHECKPOINT, "checkpoint_id": "c1"},
    "tasks": [
        {
            "id": "task1",
            "name": "b",
            "error": None,
            "interrupts": [{"value": "ok?", "id": "i1"}],
            "state": None,
            "checkpoint": None,
        }
    ],
}


def remote_with(parts: list[Part], **kwargs: Any) -> tuple[RemoteGraph, FakeClient, FakeClient]:
    sync_client, async_client = FakeClient(parts, sync=True), FakeClient(parts, sync=False)
    remote = RemoteGraph("agent", client=async_client, sync_client=sync_client, **kwargs)
    return remote, sync_client, async_client


class S(TypedDict):
    x: int


# ---------------------------------------------------------------- direct calls


def test_invoke_returns_last_values_and_sends_thread_id_apart() -> None:
    remote, sync_client, _ = remote_with([Part("values", {"x": 1}), Part("values", {"x": 2})])
    config = {"configurable": {"thread_id": "t1", "checkpoint_id": "c", "user": "u"}}
    assert remote.invoke({"x": 0}, config, context={"k": 1}) == {"x": 2}
    sent = sync_client.runs.calls[-1]
    assert sent["thread_id"] == "t1"
    assert sent["config"] == {"configurable": {"user": "u"}}
    assert sent["context"] == {"k": 1}
    assert sent["stream_mode"] == ["values", "updates"]
    assert sent["if_not_exists"] == "create"
    assert sent["stream_subgraphs"] is False


def test_a_call_without_config_sends_an_empty_configurable() -> None:
    remote, sync_client, _ = remote_with([])
    list(remote.stream({"x": 0}))
    assert sync_client.runs.calls[-1]["config"] == {"configurable": {}}
    assert sync_client.runs.calls[-1]["thread_id"] is None


def test_invoke_v2_and_no_events() -> None:
    parts = [Part("values", {"x": 1, "__interrupt__": [{"value": "v", "id": "i"}]})]
    remote, _, _ = remote_with(parts)
    out = remote.invoke({"x": 0}, version="v2")
    assert out.value == {"x": 1}
    assert out.interrupts == (Interrupt("v", "i"),)
    empty, _, _ = remote_with([])
    assert empty.invoke({"x": 0}) is None


def test_stream_shapes_follow_mode_and_subgraphs() -> None:
    parts = [Part("updates", {"a": 1}), Part("updates|sub:1", {"b": 2}), Part("values", {"x": 1})]
    remote, _, _ = remote_with(parts)
    assert list(remote.stream({})) == [{"a": 1}]
    assert list(remote.stream({}, stream_mode=["updates"])) == [("updates", {"a": 1}, None)]
    assert list(remote.stream({}, subgraphs=True)) == [((), {"a": 1}), (("sub:1",), {"b": 2})]
    assert list(remote.stream({}, stream_mode=["updates", "values"], subgraphs=True)) == [
        ((), "updates", {"a": 1}),
        (("sub:1",), "updates", {"b": 2}),
        ((), "values", {"x": 1}),
    ]


def test_messages_mode_asks_for_message_tuples() -> None:
    remote, sync_client, _ = remote_with([Part("messages", [{"content": "hi"}, {"node": "a"}])])
    assert list(remote.stream({}, stream_mode="messages")) == [({"content": "hi"}, {"node": "a"})]
    assert sync_client.runs.calls[-1]["stream_mode"] == ["messages-tuple", "updates"]


def test_astream_and_ainvoke() -> None:
    remote, _, async_client = remote_with([Part("values", {"x": 1}), Part("values", {"x": 4})])

    async def main() -> tuple[list[Any], Any]:
        chunks = [c async for c in remote.astream({}, stream_mode="values")]
        return chunks, await remote.ainvoke({}, {"configurable": {"thread_id": "t9"}})

    chunks, result = asyncio.run(main())
    assert chunks == [{"x": 1}, {"x": 4}]
    assert result == {"x": 4}
    assert async_client.runs.calls[-1]["thread_id"] == "t9"


def test_command_input_goes_as_command() -> None:
    remote, sync_client, _ = remote_with([])
    list(remote.stream(Command(resume="yes")))
    sent = sync_client.runs.calls[-1]
    assert sent["input"] is None
    assert sent["command"]["resume"] == "yes"


def test_error_part_raises_remote_exception() -> None:
    remote, _, _ = remote_with([Part("error", {"message": "boom"})])
    with pytest.raises(RemoteException):
        remote.invoke({})


def test_parent_command_part_raises_parent_command() -> None:
    remote, _, _ = remote_with([Part("command", {"graph": Command.PARENT, "goto": "b"})])
    with pytest.raises(ParentCommand) as raised:
        list(remote.stream({}))
    assert raised.value.command.goto == "b"


def test_interrupt_raises_only_under_a_caller_namespace() -> None:
    remote, _, _ = remote_with([Part("updates", {"__interrupt__": [{"value": "?", "id": "i"}]})])
    assert list(remote.stream({})) == [{"__interrupt__": [{"value": "?", "id": "i"}]}]
    caller = {"configurable": {"checkpoint_ns": "outer:1"}}
    with pytest.raises(GraphInterrupt) as raised:
        list(remote.stream({}, caller))
    assert raised.value.interrupts == (Interrupt("?", "i"),)


def test_caller_namespace_prefixes_subgraph_namespaces() -> None:
    remote, _, _ = remote_with([Part("values|sub:1", {"x": 1}), Part("values", {"x": 2})])
    caller = {"configurable": {"checkpoint_ns": "outer:1"}}
    assert list(remote.stream({}, caller, stream_mode="values", subgraphs=True)) == [
        (("outer:1", "sub:1"), {"x": 1}),
        (("outer:1",), {"x": 2}),
    ]


def test_sanitize_config_keeps_plain_values_only() -> None:
    remote = RemoteGraph("agent")
    config = {
        "recursion_limit": 5,
        "tags": ["a", 1],
        "metadata": {"k": (1, 2), "f": print, "n": {"ok": 1, "bad": object()}},
        "configurable": {"checkpoint_map": {}, "__pregel_task_id": "x", 3: "no", "keep": "y"},
        "callbacks": [],
    }
    assert remote._sanitize_config(config) == {
        "recursion_limit": 5,
        "tags": ["a"],
        "metadata": {"k": [1, 2], "n": {"ok": 1}},
        "configurable": {"keep": "y"},
    }


def test_with_config_merges_into_a_copy() -> None:
    remote = RemoteGraph("agent", config={"configurable": {"a": 1}}, name="r")
    copy = remote.with_config({"configurable": {"b": 2}})
    assert copy is not remote
    assert copy.name == "r"
    assert copy.config == {"configurable": {"a": 1, "b": 2}}
    assert remote.config == {"configurable": {"a": 1}}


def test_missing_clients_are_reported() -> None:
    remote = RemoteGraph("agent")
    with pytest.raises(ValueError, match="Sync client"):
        remote.invoke({})
    with pytest.raises(ValueError, match="Async client"):
        asyncio.run(remote.ainvoke({}))


# ---------------------------------------------------------------- threads and graph


def test_get_state_builds_a_snapshot() -> None:
    remote, sync_client, _ = remote_with([])
    sync_client.threads.state = STATE
    snap = remote.get_state({"configurable": {"thread_id": "t1"}})
    assert isinstance(snap, StateSnapshot)
    assert snap.values == {"x": 3}
    assert snap.next == ("b",)
    assert snap.config["configurable"]["checkpoint_id"] == "c2"
    assert snap.parent_config is not None
    assert snap.parent_config["configurable"]["checkpoint_id"] == "c1"
    assert snap.tasks[0].name == "b"
    assert snap.interrupts == (Interrupt("ok?", "i1"),)
    name, sent = sync_client.threads.calls[-1]
    assert name == "get_state"
    assert sent["checkpoint"] == {"thread_id": "t1"}


def test_async_state_history_and_update() -> None:
    remote, _, async_client = remote_with([])
    async_client.threads.history = [STATE]
    config = {"configurable": {"thread_id": "t1"}}

    async def main() -> tuple[list[StateSnapshot], dict[str, Any]]:
        history = [s async for s in remote.aget_state_history(config, limit=None)]
        return history, await remote.aupdate_state(config, {"x": 1}, as_node="a")

    history, updated = asyncio.run(main())
    assert [s.values for s in history] == [{"x": 3}]
    assert updated["configurable"]["checkpoint_id"] == "c2"
    calls = dict(async_client.threads.calls)
    assert calls["get_history"]["limit"] == 10
    assert calls["update_state"]["as_node"] == "a"


def test_get_graph_draws_the_server_graph() -> None:
    pytest.importorskip("langchain_core")
    remote, _, _ = remote_with([])
    drawn = remote.get_graph()
    assert drawn.nodes["agent"].name == "agent_v1"
    assert [(e.source, e.target) for e in drawn.edges] == [("__start__", "agent")]
    assert asyncio.run(remote.aget_graph()).nodes["__start__"].name == "__start__"


# ---------------------------------------------------------------- as a node


def test_runs_as_a_node_and_streams_into_the_parent() -> None:
    parts = [
        Part("updates|inner:1", {"n": {"x": 5}}),
        Part("custom", {"progress": 1}),
        Part("messages", [{"content": "hi"}, {}]),
        Part("values", {"x": 10}),
    ]
    remote, _, async_client = remote_with(parts, name="rem")
    graph = StateGraph(S).add_node(remote).add_edge(START, "rem").compile()
    assert graph.invoke({"x": 1}) == {"x": 10}
    sent = async_client.runs.calls[-1]
    assert sent["stream_subgraphs"] is True
    assert "checkpoint_ns" not in sent["config"]["configurable"]

    chunks = list(
        graph.stream({"x": 1}, stream_mode=["updates", "custom", "messages"], subgraphs=True)
    )
    inner = [c for c in chunks if c[0]]
    assert [(len(ns), mode) for ns, mode, _ in inner] == [
        (2, "updates"),
        (1, "custom"),
        (1, "messages"),
    ]
    ns = inner[0][0]
    assert ns[0].startswith("rem:")
    assert ns[1] == "inner:1"
    assert inner[1][2] == {"progress": 1}
    assert inner[2][2] == ({"content": "hi"}, {})
    assert ((), "updates", {"rem": {"x": 10}}) in chunks
    assert set(async_client.runs.calls[-1]["stream_mode"]) >= {"updates", "custom", "values"}


def test_a_remote_pause_pauses_the_node() -> None:
    parts = [Part("updates", {"__interrupt__": [{"value": "approve?", "id": "r1"}]})]
    remote, _, _ = remote_with(parts, name="rem")
    graph = (
        StateGraph(S).add_node(remote).add_edge(START, "rem").compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "t1"}}
    result = graph.invoke({"x": 1}, config)
    assert result["__interrupt__"] == [Interrupt("approve?", "r1")]
    assert graph.get_state(config).next == ("rem",)


def test_called_from_a_sync_node_streams_into_the_parent() -> None:
    remote, _, _ = remote_with([Part("custom", "tick"), Part("values", {"x": 7})])

    def node(state: S) -> Any:
        return remote.invoke(state)

    graph = StateGraph(S).add_node("n", node).add_edge(START, "n").compile()
    chunks = list(graph.stream({"x": 1}, stream_mode=["custom", "updates"], subgraphs=True))
    assert next(c for c in chunks if c[1] == "custom")[2] == "tick"
    assert chunks[-1] == ((), "updates", {"n": {"x": 7}})


def test_a_node_with_only_a_sync_client_uses_it() -> None:
    sync_client = FakeClient([Part("custom", "c"), Part("values", {"x": 2})], sync=True)
    remote = RemoteGraph("agent", sync_client=sync_client, name="rem")
    graph = StateGraph(S).add_node(remote).add_edge(START, "rem").compile()
    chunks = list(graph.stream({"x": 1}, stream_mode=["custom", "values"], subgraphs=True))
    assert chunks[-1] == ((), "values", {"x": 2})
    custom = [c for c in chunks if c[1] == "custom"]
    assert custom[0][0][0].startswith("rem:")
    assert custom[0][2] == "c"
    assert sync_client.runs.calls[-1]["stream_subgraphs"] is True


# ---------------------------------------------------------------- v3 event streams


class FakeThreadStream:
    """The SDK's thread stream: entered, started, projected, closed."""

    def __init__(self) -> None:
        self.thread_id = "th"
        self.entered = 0
        self.exited: list[Any] = []
        self.started: list[dict[str, Any]] = []
        self.closed = 0
        self.values = ["v"]
        self.events = iter(["e1", "e2"])
        self.run = self

    def __enter__(self) -> FakeThreadStream:
        self.entered += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        self.exited.append(exc)

    def start(self, **kwargs: Any) -> dict[str, Any]:
        self.started.append(kwargs)
        return {"run_id": "run1"}

    def close(self) -> None:
        self.closed += 1

    def subscribe(self, channels: list[str]) -> Iterator[dict[str, Any]]:
        return iter(
            [
                {"method": "updates", "params": {"data": 1}},
                {"method": "updates", "params": {}},
                {"method": "values", "params": {"data": 2}},
            ]
        )


def test_stream_events_v3_runs_through_the_sdk_thread_stream() -> None:
    remote, sync_client, _ = remote_with([])
    sdk = FakeThreadStream()
    sync_client.threads.stream_thread = sdk
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": "x", "u": 1}}
    run = remote.stream_events(Command(resume="go"), config, version="v3", metadata={"m": 1})
    assert isinstance(run, RemoteGraphRunStream)
    name, sent = sync_client.threads.calls[-1]
    assert name == "stream"
    assert sent["thread_id"] == "t1"
    assert sent["assistant_id"] == "agent"
    with run as entered:
        assert entered is run
        assert sdk.started == [
            {"input": "go", "config": {"configurable": {"u": 1}}, "metadata": {"m": 1}}
        ]
        assert entered.values == ["v"]
        assert list(entered.extensions["updates"]) == [1]
        assert isinstance(entered.extensions["tasks"], ChannelProjection)
        assert list(iter(entered)) == ["e1", "e2"]
        entered.abort()
        entered.abort()
    assert sync_client.runs.cancelled == [("th", "run1", False)]
    assert sdk.closed == 1
    assert sdk.exited == []


def test_stream_events_v3_rejects_what_the_server_cannot_do() -> None:
    remote, sync_client, _ = remote_with([])
    with pytest.raises(NotImplementedError, match="interrupt_before"):
        remote.stream_events({}, version="v3", interrupt_before=["a"])
    with pytest.raises(NotImplementedError, match="context"):
        remote.stream_events({}, version="v3", context={})
    with pytest.raises(NotImplementedError, match="goto"):
        remote.stream_events(Command(goto="a"), version="v3")
    with pytest.raises(NotImplementedError):
        remote.stream_events({}, version="v2")
    assert sync_client.threads.calls == []


def test_astream_events_v3_returns_an_async_run_stream() -> None:
    remote, _, async_client = remote_with([])
    async_client.threads.stream_thread = object()

    async def main() -> Any:
        with pytest.raises(NotImplementedError):
            await remote.astream_events({}, version="v2")
        return await remote.astream_events({}, {"configurable": {"thread_id": "t"}}, version="v3")

    run = asyncio.run(main())
    assert isinstance(run, AsyncRemoteGraphRunStream)
    assert async_client.threads.calls[-1][1]["thread_id"] == "t"


def test_a_url_uses_the_sdk_the_app_imported_and_never_loads_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys
    import types

    from flowcore.compat.langgraph import RemoteGraph

    monkeypatch.delitem(sys.modules, "langgraph_sdk", raising=False)
    with pytest.raises(ImportError, match="import it before building the RemoteGraph"):
        RemoteGraph("agent", url="http://127.0.0.1:1")
    assert "langgraph_sdk" not in sys.modules

    made: list[tuple[str, str]] = []
    sdk = types.ModuleType("langgraph_sdk")
    sdk.get_client = lambda **kw: made.append(("async", kw["url"])) or "async-client"  # type: ignore[attr-defined]
    sdk.get_sync_client = lambda **kw: made.append(("sync", kw["url"])) or "sync-client"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "langgraph_sdk", sdk)
    remote = RemoteGraph("agent", url="http://127.0.0.1:1")
    assert (remote.client, remote.sync_client) == ("async-client", "sync-client")
    assert made == [("async", "http://127.0.0.1:1"), ("sync", "http://127.0.0.1:1")]
