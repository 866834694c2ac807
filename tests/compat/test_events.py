"""Spec: a LangGraph-style graph's run emits flowcore's own events, as a native run does.

``CompiledStateGraph.run_stream(input, ...)`` is the compat counterpart of
native ``CompiledGraph.stream``: an async iterator of :mod:`flowcore.events`
plus ``result()``. Every event carries the run id, the graph's name and
version; ``run_start`` comes first and exactly one ``done`` last; every task
(``Send`` tasks included) opens with ``node_start`` and is closed by exactly
one ``node_end``, ``node_error``, ``interrupt`` or ``node_cancelled``;
stream-writer chunks are ``custom`` events; chat messages with token counts
give ``usage`` events. A failed run ends ``failed`` without raising.
LangGraph's own stream modes are untouched, and a run nobody streams these
events of builds none.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    END,
    START,
    AIMessage,
    Command,
    InMemorySaver,
    RetryPolicy,
    Send,
    StateGraph,
    get_stream_writer,
    interrupt,
)
from flowcore.compat.langgraph import _events as compat_events
from flowcore.events import CheckpointEvent, Event
from flowcore.interrupts import Resume
from flowcore.result import RunResult
from flowcore.secrets import SecretRedactor

from .fake_chat import ScriptedChat

GUARD = 5.0


class S(TypedDict, total=False):
    items: list[str]
    log: Annotated[list[str], operator.add]
    answer: Any


async def collect(stream: Any) -> tuple[list[Event], RunResult]:
    async with asyncio.timeout(GUARD), stream as events:
        got = [event async for event in events]
        return got, await events.result()


def kinds(events: list[Event]) -> list[tuple[str, str | None]]:
    return [(e.type, getattr(e, "node", None)) for e in events]


def closed_once(events: list[Event]) -> None:
    """Every node_start is closed by exactly one end, error, interrupt or cancel."""
    open_count: dict[str, int] = {}
    for event in events:
        node = getattr(event, "node", None)
        if event.type == "node_start":
            open_count[str(node)] = open_count.get(str(node), 0) + 1
        elif event.type in ("node_end", "node_error", "interrupt", "node_cancelled"):
            assert open_count.get(str(node), 0) > 0, f"{event.type} of {node} without a start"
            open_count[str(node)] -= 1
    assert not any(open_count.values()), f"left open: {open_count}"


def chain(*steps: tuple[str, Callable[..., Any]], checkpointer: Any = None) -> Any:
    graph = StateGraph(S)
    previous = START
    for name, fn in steps:
        graph.add_node(name, fn)
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph.compile(checkpointer=checkpointer, name="chain")


def _first(state: S) -> dict[str, Any]:
    get_stream_writer()({"progress": 50})
    return {"log": ["first"]}


def _second(state: S) -> dict[str, Any]:
    return {"log": ["second"], "answer": 42}


async def test_a_run_streams_start_each_node_custom_chunks_and_one_done() -> None:
    app = chain(("first", _first), ("second", _second))

    events, result = await collect(app.run_stream({"items": []}, run_id="run-1"))

    assert kinds(events) == [
        ("run_start", None),
        ("node_start", "first"),
        ("custom", "first"),
        ("node_end", "first"),
        ("node_start", "second"),
        ("node_end", "second"),
        ("done", None),
    ]
    assert {(e.run_id, e.graph_name, e.graph_version) for e in events} == {
        ("run-1", "chain", app.version)
    }
    start, _, custom, first_end, _, second_end, done = events
    assert start.input == {"items": []}  # type: ignore[union-attr]
    assert custom.data == {"progress": 50}  # type: ignore[union-attr]
    assert first_end.update == {"log": ["first"]}  # type: ignore[union-attr]
    assert second_end.update == {"log": ["second"], "answer": 42}  # type: ignore[union-attr]
    assert first_end.superstep < second_end.superstep
    assert done.status == "completed"  # type: ignore[union-attr]
    assert done.state == {"items": [], "log": ["first", "second"], "answer": 42}  # type: ignore[union-attr]
    assert (result.run_id, result.status, result.errors) == ("run-1", "completed", ())
    assert result.state == done.state  # type: ignore[union-attr]
    assert [(r.node, r.status) for r in result.node_runs] == [
        ("first", "completed"),
        ("second", "completed"),
    ]
    assert result.outputs["second"] == {"log": ["second"], "answer": 42}


async def test_each_send_task_is_a_node_of_its_own() -> None:
    def fan(state: S) -> list[Send]:
        return [Send("work", {"items": [item]}) for item in state["items"]]

    def work(state: S) -> dict[str, Any]:
        return {"log": [f"did {state['items'][0]}"]}

    graph = StateGraph(S)
    graph.add_node("work", work)
    graph.add_conditional_edges(START, fan, ["work"])
    graph.add_edge("work", END)

    events, result = await collect(graph.compile().run_stream({"items": ["a", "b", "c"]}))

    assert [n for t, n in kinds(events) if t == "node_start"] == ["work"] * 3
    assert sorted(
        str(e.update)
        for e in events
        if e.type == "node_end"  # type: ignore[union-attr]
    ) == [
        "{'log': ['did a']}",
        "{'log': ['did b']}",
        "{'log': ['did c']}",
    ]
    closed_once(events)
    assert result.state["log"] == ["did a", "did b", "did c"]


async def test_a_failing_node_fails_the_run_and_its_running_sibling_is_cancelled(
    failing_beside_a_slow_sibling: Callable[[type[Any]], StateGraph],
) -> None:
    graph = failing_beside_a_slow_sibling(S)

    events, result = await collect(graph.compile().run_stream({"items": []}))

    closed_once(events)
    assert ("node_error", "broken") in kinds(events)
    assert ("node_cancelled", "slow") in kinds(events)
    error = next(e for e in events if e.type == "node_error")
    assert str(error.error) == "broken on purpose"  # type: ignore[union-attr]
    assert events[-1].type == "done"
    assert events[-1].status == "failed"  # type: ignore[union-attr]
    assert result.status == "failed"
    assert [str(e) for e in result.errors] == ["broken on purpose"]
    assert sorted((r.node, r.status) for r in result.node_runs) == [
        ("broken", "failed"),
        ("slow", "cancelled"),
    ]


async def test_bad_input_ends_the_run_failed_instead_of_raising() -> None:
    app = chain(("first", _first))

    events, result = await collect(app.run_stream(None))

    assert kinds(events) == [("run_start", None), ("done", None)]
    assert result.status == "failed"
    assert "Received no input" in str(result.errors[0])


def _approve(state: S) -> dict[str, Any]:
    return {"answer": interrupt({"question": "ok?"})}


@pytest.mark.parametrize(
    "answer",
    [Resume("yes"), Command(resume="yes")],
    ids=["flowcore Resume", "LangGraph Command"],
)
async def test_an_interrupt_pauses_the_run_and_a_resume_answers_it(answer: Any) -> None:
    app = chain(("first", _first), ("approve", _approve), checkpointer=InMemorySaver())

    events, paused = await collect(app.run_stream({"items": []}, thread_id="t1"))

    assert kinds(events)[-3:] == [
        ("node_start", "approve"),
        ("interrupt", "approve"),
        ("done", None),
    ]
    closed_once(events)
    asked = events[-2]
    assert asked.value == {"question": "ok?"}  # type: ignore[union-attr]
    assert paused.status == "interrupted"
    assert [(i.id, i.node, i.value) for i in paused.interrupts] == [
        (asked.interrupt_id, "approve", {"question": "ok?"})  # type: ignore[union-attr]
    ]
    assert paused.thread_id == "t1"
    assert paused.checkpoint_id

    events, done = await collect(app.run_stream(answer, thread_id="t1"))

    assert kinds(events) == [
        ("run_start", None),
        ("node_start", "approve"),
        ("node_end", "approve"),
        ("checkpoint", None),
        ("done", None),
    ]
    assert done.status == "completed"
    assert done.state == {"items": [], "log": ["first"], "answer": "yes"}


async def test_cancel_closes_the_running_node_and_ends_cancelled() -> None:
    started = asyncio.Event()

    async def forever(state: S) -> dict[str, Any]:
        started.set()
        await asyncio.Event().wait()
        return {}

    stream = chain(("forever", forever)).run_stream({"items": []})
    async with asyncio.timeout(GUARD), stream as events:
        seen = [await anext(events), await anext(events)]
        await started.wait()
        stream.cancel()
        seen += [event async for event in events]
        result = await events.result()

    assert kinds(seen) == [
        ("run_start", None),
        ("node_start", "forever"),
        ("node_cancelled", "forever"),
        ("done", None),
    ]
    assert seen[-1].status == "cancelled"  # type: ignore[union-attr]
    assert result.status == "cancelled"


async def test_a_stream_cancelled_before_it_started_still_starts_and_ends() -> None:
    stream = chain(("first", _first)).run_stream({"items": []})
    stream.cancel()

    events, result = await collect(stream)

    assert kinds(events) == [("run_start", None), ("done", None)]
    assert result.status == "cancelled"


async def test_each_chat_model_call_is_a_usage_event_when_it_is_made() -> None:
    class Chat(TypedDict, total=False):
        messages: list[Any]

    chat = ScriptedChat(replies=["hi"], tokens=(7, 3), model_name="m-1")

    async def model(state: Chat) -> dict[str, Any]:
        answer = await chat.ainvoke("hello")
        # A message that merely carries token counts made no call: it bills nothing.
        made_up = AIMessage("copied", id="msg-2", usage_metadata={"input_tokens": 99})
        return {"messages": [answer, made_up]}

    graph = StateGraph(Chat)
    graph.add_node("model", model)
    graph.add_edge(START, "model")

    events, result = await collect(graph.compile().run_stream({"messages": []}))

    (usage,) = [e for e in events if e.type == "usage"]
    # Reported when the call returned, inside its node.
    assert kinds(events).index(("usage", "model")) < kinds(events).index(("node_end", "model"))
    assert (usage.model, usage.input_tokens, usage.output_tokens, usage.finish_reason) == (  # type: ignore[union-attr]
        "m-1",
        7,
        3,
        "stop",
    )
    assert usage.invocation_id  # type: ignore[union-attr]
    assert (result.usage.input_tokens, result.usage.output_tokens, result.model_calls) == (7, 3, 1)
    (run,) = result.node_runs
    assert (run.usage.input_tokens, run.usage.output_tokens, run.model_calls) == (7, 3, 1)


async def test_a_redactor_keeps_secrets_out_of_events_and_the_result() -> None:
    secret = "sk-events-CANARY-93e1"

    def leak(state: S) -> dict[str, Any]:
        get_stream_writer()(f"working with {secret}")
        return {"answer": f"it is {secret}"}

    def fail(state: S) -> dict[str, Any]:
        raise RuntimeError(f"{secret} was refused")

    app = chain(("leak", leak), ("fail", fail))

    events, result = await collect(app.run_stream({"items": []}, redactor=SecretRedactor([secret])))

    assert result.status == "failed"
    assert "[REDACTED]" in repr(events)
    assert secret not in repr(events)
    assert secret not in repr(result)


async def test_the_version_follows_the_graphs_shape_and_can_be_named() -> None:
    one = chain(("first", _first), ("second", _second))
    same = chain(("first", _first), ("second", _second))
    other = chain(("first", _first))

    assert one.version == same.version
    assert one.version != other.version
    one.version = "2024-06"
    events, _ = await collect(one.run_stream({"items": []}))
    assert {e.graph_version for e in events} == {"2024-06"}


async def test_runs_without_a_listener_build_no_event(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an event was built for a run nobody streams events of")

    for name in ("NodeStartEvent", "NodeEndEvent", "CustomEvent", "DoneEvent", "RunStartEvent"):
        monkeypatch.setattr(compat_events, name, refuse)
    app = chain(("first", _first), ("second", _second))

    assert await app.ainvoke({"items": []}) == {
        "items": [],
        "log": ["first", "second"],
        "answer": 42,
    }
    modes = ["values", "updates", "custom", "debug", "tasks", "messages"]
    chunks = [chunk async for chunk in app.astream({"items": []}, stream_mode=modes)]
    assert ("custom", {"progress": 50}) in chunks
    assert ("updates", {"second": {"log": ["second"], "answer": 42}}) in chunks
    assert [m for m, _ in chunks].count("tasks") == 4  # two tasks, each started and finished


async def test_a_node_starts_when_its_task_runs_not_when_its_superstep_is_planned() -> None:
    def left(state: S) -> dict[str, Any]:
        return {"log": ["left"]}

    def right(state: S) -> dict[str, Any]:
        return {"log": ["right"]}

    graph = StateGraph(S)
    graph.add_node("left", left)
    graph.add_node("right", right)
    graph.add_edge(START, "left")
    graph.add_edge(START, "right")

    # One task at a time: the second starts only after the first ended.
    stream = graph.compile().run_stream({"items": []}, {"max_concurrency": 1})
    events, _ = await collect(stream)

    assert kinds(events)[1:-1] == [
        ("node_start", "left"),
        ("node_end", "left"),
        ("node_start", "right"),
        ("node_end", "right"),
    ]


async def test_a_retried_node_reports_how_many_attempts_it_took() -> None:
    calls: list[int] = []

    def flaky(state: S) -> dict[str, Any]:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("try again")
        return {"log": ["flaky"]}

    def hopeless(state: S) -> dict[str, Any]:
        raise ConnectionError("never")

    quick = RetryPolicy(initial_interval=0.0, jitter=False, max_attempts=3)
    graph = StateGraph(S)
    graph.add_node("flaky", flaky, retry_policy=quick)
    graph.add_node(
        "hopeless", hopeless, retry_policy=RetryPolicy(initial_interval=0.0, max_attempts=2)
    )
    graph.add_edge(START, "flaky")
    graph.add_edge("flaky", "hopeless")

    events, result = await collect(graph.compile().run_stream({"items": []}))

    ended = {e.node: e.attempts for e in events if e.type in ("node_end", "node_error")}  # type: ignore[union-attr]
    assert ended == {"flaky": 3, "hopeless": 2}
    assert [(r.node, r.status, r.attempts) for r in result.node_runs] == [
        ("flaky", "completed", 3),
        ("hopeless", "failed", 2),
    ]


def checkpoint_events(events: list[Event]) -> list[CheckpointEvent]:
    return [e for e in events if isinstance(e, CheckpointEvent)]


async def history_of(
    app: Any, thread_id: str
) -> list[tuple[str, str | None, int, tuple[str, ...]]]:
    """(id, parent id, step, next) of each stored checkpoint, newest first."""
    config = {"configurable": {"thread_id": thread_id}}
    out = []
    async for snap in app.aget_state_history(config):
        parent = (snap.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        out.append(
            (snap.config["configurable"]["checkpoint_id"], parent, snap.metadata["step"], snap.next)
        )
    return out


@pytest.mark.parametrize("durability", ["sync", "async"])
async def test_each_stored_checkpoint_is_one_event_with_the_ids_history_lists(
    durability: str,
) -> None:
    app = chain(("first", _first), ("second", _second), checkpointer=InMemorySaver())

    events, result = await collect(
        app.run_stream({"items": []}, thread_id="t1", durability=durability)
    )

    announced = checkpoint_events(events)
    assert [(e.checkpoint_id, e.parent_id, e.step, e.next) for e in reversed(announced)] == (
        await history_of(app, "t1")
    )
    assert [e.next for e in announced] == [("__start__",), ("first",), ("second",), ()]
    assert {e.thread_id for e in announced} == {"t1"}
    assert announced[-1].checkpoint_id == result.checkpoint_id
    # Each checkpoint comes after the node events of the step it closes.
    assert kinds(events)[-4:] == [
        ("node_start", "second"),
        ("node_end", "second"),
        ("checkpoint", None),
        ("done", None),
    ]


async def test_a_paused_and_resumed_run_announces_each_checkpoint_once() -> None:
    app = chain(("first", _first), ("approve", _approve), checkpointer=InMemorySaver())

    paused, _ = await collect(app.run_stream({"items": []}, thread_id="t1"))
    resumed, _ = await collect(app.run_stream(Resume("yes"), thread_id="t1"))

    announced = checkpoint_events(paused) + checkpoint_events(resumed)
    assert [(e.checkpoint_id, e.parent_id, e.step, e.next) for e in reversed(announced)] == (
        await history_of(app, "t1")
    )


async def test_exit_durability_names_the_parent_its_one_stored_checkpoint_gets() -> None:
    app = chain(("first", _first), ("second", _second), checkpointer=InMemorySaver())

    before, _ = await collect(app.run_stream({"items": []}, thread_id="t1"))
    held, _ = await collect(app.run_stream({"items": []}, thread_id="t1", durability="exit"))

    history = await history_of(app, "t1")
    last = checkpoint_events(held)[-1]
    assert history[0][:2] == (last.checkpoint_id, last.parent_id)
    assert {e.parent_id for e in checkpoint_events(held)} == {
        checkpoint_events(before)[-1].checkpoint_id
    }
    stored = {h[0] for h in history}
    assert not stored & {e.checkpoint_id for e in checkpoint_events(held)[:-1]}


async def test_a_run_without_a_checkpointer_emits_no_checkpoint_event() -> None:
    app = chain(("first", _first), ("second", _second))

    events, result = await collect(app.run_stream({"items": []}))

    assert result.status == "completed"
    assert checkpoint_events(events) == []


async def test_a_checkpointed_run_nobody_streams_builds_no_checkpoint_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a checkpoint event was built for a run nobody streams")

    monkeypatch.setattr(compat_events, "CheckpointEvent", refuse)
    app = chain(("first", _first), ("second", _second), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}

    assert (await app.ainvoke({"items": []}, config))["answer"] == 42
    chunks = [c async for c in app.astream({"items": []}, config, stream_mode="checkpoints")]
    assert len(chunks) == 4
    assert len(await history_of(app, "t1")) == 8
