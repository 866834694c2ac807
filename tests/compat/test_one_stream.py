"""Spec: a compat run reports what happens as ONE stream of records, and both
LangGraph's stream modes and flowcore's events are projections of it.

The run hands every record to its sink as ``(namespace, kind, payload)``;
``astream``'s chunk formatter and ``run_stream``'s ``EventProjector`` are two
readers of that sink, and one run can feed both at once. A run builds only the
record kinds some reader wants (``Run.wants``). A subgraph's run shares its
parent's sink, so its records arrive there under the subgraph's namespace.
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
    InMemorySaver,
    StateGraph,
    get_stream_writer,
)
from flowcore.compat.langgraph._events import EventProjector
from flowcore.compat.langgraph._pregel_helpers import _ChunkFormatter
from flowcore.compat.langgraph._records import KINDS, TaskEnd, fan_out, kinds_for_modes
from flowcore.events import Event

# Records of model and tool calls: only a graph whose nodes make such calls sends them.
CALL_KINDS = frozenset({"model_call", "tool_call"})

GUARD = 5.0


class S(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _node(name: str) -> Any:
    def node(state: S) -> dict[str, Any]:
        get_stream_writer()({"from": name})
        return {"log": [name]}

    return node


def fan_graph(checkpointer: Any = None) -> Any:
    """start -> (left, right) -> join: two tasks in one superstep, then one."""
    graph = StateGraph(S)
    for name in ("left", "right", "join"):
        graph.add_node(name, _node(name))
    graph.add_edge(START, "left")
    graph.add_edge(START, "right")
    graph.add_edge(["left", "right"], "join")
    graph.add_edge("join", END)
    return graph.compile(checkpointer=checkpointer, name="fan")


class Recorder:
    """A sink that keeps every record it is handed."""

    def __init__(self) -> None:
        self.records: list[tuple[tuple[str, ...], str, Any]] = []

    def __call__(self, ns: tuple[str, ...], kind: str, payload: Any) -> None:
        self.records.append((ns, kind, payload))

    def kinds(self) -> set[str]:
        return {kind for _, kind, _ in self.records}


async def execute(app: Any, sink: Any, wants: set[str], config: Any = None) -> Any:
    run = app._run(
        {"log": []}, config, sink, durability=None, interrupt_before=None, interrupt_after=None
    )
    run.wants = wants
    async with asyncio.timeout(GUARD):
        await run.execute()
    return run


async def test_one_run_read_by_both_projections_gives_chunks_and_events_that_agree() -> None:
    app = fan_graph(InMemorySaver())
    log: list[tuple[str, Any]] = []
    formatter = _ChunkFormatter(["tasks", "custom", "checkpoints"], single=False, subgraphs=False)
    projector = EventProjector(app, "run-1", lambda e: log.append(("event", e)), None)

    def chunks(ns: tuple[str, ...], kind: str, payload: Any) -> None:
        log.extend(("chunk", c) for c in formatter.format(ns, kind, payload))

    run = await execute(
        app,
        fan_out(chunks, projector.record),
        formatter.kinds() | EventProjector.KINDS,
        {"configurable": {"thread_id": "t1"}},
    )
    projector.finish("completed", run, ())

    # Each record gives its chunk, then its event: the two projections keep one order.
    def fact(item: tuple[str, Any]) -> tuple[str, Any] | None:
        side, value = item
        if side == "chunk":
            mode, payload = value
            if mode == "tasks" and "result" in payload:
                return ("ended", payload["name"])
            if mode == "custom":
                return ("custom", payload["from"])
            if mode == "checkpoints":
                return ("checkpoint", payload["config"]["configurable"]["checkpoint_id"])
            return None
        event: Event = value
        if event.type == "node_end":
            return ("ended", event.node)
        if event.type == "custom":
            return ("custom", event.data["from"])
        if event.type == "checkpoint":
            return ("checkpoint", event.checkpoint_id)
        return None

    facts = [(side, f) for side, value in log if (f := fact((side, value))) is not None]
    from_chunks = [f for side, f in facts if side == "chunk"]
    from_events = [f for side, f in facts if side == "event"]
    assert from_chunks == from_events
    assert facts == [pair for f in from_chunks for pair in (("chunk", f), ("event", f))]
    assert [f for f in from_chunks if f[0] == "ended"][-1] == ("ended", "join")
    assert {f for f in from_chunks if f[0] == "ended"} == {
        ("ended", "left"),
        ("ended", "right"),
        ("ended", "join"),
    }
    assert len([f for f in from_chunks if f[0] == "checkpoint"]) == 4


@pytest.mark.parametrize(
    "wants",
    [
        {"values"},
        set(EventProjector.KINDS),
        kinds_for_modes(["updates"]),
        kinds_for_modes(["messages"]),
        kinds_for_modes(["debug"]),
        set(),
    ],
    ids=["invoke", "run_stream", "updates", "messages", "debug", "nobody"],
)
async def test_a_run_hands_its_sink_only_the_record_kinds_someone_reads(wants: set[str]) -> None:
    recorder = Recorder()

    await execute(fan_graph(InMemorySaver()), recorder, wants, {"configurable": {"thread_id": "t"}})

    # The fan graph calls no model and no tool: those records have nothing to say.
    assert recorder.kinds() == wants - CALL_KINDS


async def test_a_run_nobody_narrowed_hands_its_sink_every_kind() -> None:
    recorder = Recorder()

    await execute(
        fan_graph(InMemorySaver()), recorder, set(KINDS), {"configurable": {"thread_id": "t"}}
    )

    assert recorder.kinds() == KINDS - CALL_KINDS
    ended = [(p.task.name, p.outcome) for _, k, p in recorder.records if k == "task_end"]
    started = [p.task.name for _, k, p in recorder.records if k == "task_start"]
    assert sorted(started) == sorted(name for name, _ in ended) == ["join", "left", "right"]
    assert {outcome for _, outcome in ended} == {"done"}


async def test_a_subgraphs_records_reach_the_parents_sink_under_its_namespace() -> None:
    inner = fan_graph()
    outer = StateGraph(S)
    outer.add_node("inner", inner)
    outer.add_edge(START, "inner")
    app = outer.compile(name="outer")
    recorder = Recorder()
    events: list[Event] = []
    projector = EventProjector(app, "run-1", events.append, None)

    await execute(app, fan_out(recorder, projector.record), set(EventProjector.KINDS))

    started = [(ns, p.task.name) for ns, k, p in recorder.records if k == "task_start"]
    assert started[0] == ((), "inner")
    assert {len(ns) for ns, _ in started[1:]} == {1}
    assert started[1][0][0].startswith("inner:")
    assert sorted(name for _, name in started[1:]) == ["join", "left", "right"]
    # flowcore's events show the subgraph's tasks inside its parent's, namespaced.
    shown = [
        (e.type, getattr(e, "node", None), len(e.namespace))
        for e in events
        if e.type in ("node_start", "node_end")
    ]
    assert shown[0] == ("node_start", "inner", 0)
    assert shown[-1] == ("node_end", "inner", 0)
    assert sorted(shown[1:-1]) == sorted(
        [
            (kind, name, 1)
            for name in ("join", "left", "right")
            for kind in ("node_start", "node_end")
        ]
    )


async def test_a_task_stopped_by_a_failing_sibling_ends_cancelled_in_the_stream(
    failing_beside_a_slow_sibling: Callable[[type[Any]], StateGraph],
) -> None:
    graph = failing_beside_a_slow_sibling(S)
    recorder = Recorder()

    with pytest.raises(ValueError, match="broken on purpose"):
        await execute(graph.compile(), recorder, {"task_end"})

    ends: list[TaskEnd] = [p for _, k, p in recorder.records if k == "task_end"]
    assert [(e.task.name, e.outcome) for e in ends] == [("broken", "error"), ("slow", "cancelled")]
    assert isinstance(ends[1].task.error, asyncio.CancelledError)
