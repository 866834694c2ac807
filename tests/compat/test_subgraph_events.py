"""Spec: a subgraph's nodes emit flowcore events too, under the namespace of the task that ran it.

A compiled graph added as a node runs as one task of its parent, and that
task's events have an empty ``namespace``. The subgraph's own nodes emit
``node_start`` / ``node_end`` / ``node_error`` / ``custom`` / ``usage`` with
``namespace == ("<parent node>:<task id>",)`` (one more part per level of
nesting), each closed before the enclosing node ends. The run result's
``node_runs`` and ``outputs`` describe the run's own graph only. A model call
counts once, when it is made, at the node that made it, even though the
subgraph's output hands the answer's message to its parent. An
``interrupt()`` inside a subgraph is one ``interrupt`` event, from the
enclosing node. Through the executor port, AiEvents carry the same
namespace and the usage totals count each model answer once.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import (
    END,
    START,
    InMemorySaver,
    StateGraph,
    add_messages,
    get_stream_writer,
    interrupt,
)
from flowcore.events import Event
from flowcore.interrupts import Resume
from flowcore.port import Caller, InProcExecutor, RunRequest, UsageTotals
from flowcore.port.events import event_from_dict, event_to_dict
from flowcore.result import RunResult

from .fake_chat import LCAIMessage, ScriptedChat

GUARD = 5.0


class S(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    messages: Annotated[list[Any], add_messages]


def _answer(state: S) -> dict[str, Any]:
    get_stream_writer()({"thinking": True})
    usage = {"input_tokens": 11, "output_tokens": 4, "total_tokens": 15}
    # A LangChain chat model call (a sync node: in a worker thread), billed when it returns.
    chat = ScriptedChat(replies=[LCAIMessage("hi", id="m-1", usage_metadata=usage)])
    return {"log": ["answer"], "messages": [chat.invoke("hello")]}


def _check(state: S) -> dict[str, Any]:
    return {"log": ["check"]}


def _inner(**nodes: Any) -> Any:
    graph = StateGraph(S)
    previous = START
    for name, fn in nodes.items():
        graph.add_node(name, fn)
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph.compile()


def _outer(inner: Any, checkpointer: Any = None) -> Any:
    graph = StateGraph(S)
    graph.add_node("prepare", lambda s: {"log": ["prepare"]})
    graph.add_node("agent", inner)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "agent")
    graph.add_edge("agent", END)
    return graph.compile(checkpointer=checkpointer, name="outer")


async def collect(stream: Any) -> tuple[list[Event], RunResult]:
    async with asyncio.timeout(GUARD), stream as events:
        got = [event async for event in events]
        return got, await events.result()


def shown(events: list[Event]) -> list[tuple[str, str | None, int]]:
    """(type, node, nesting depth) of each event."""
    return [(e.type, getattr(e, "node", None), len(e.namespace)) for e in events]


async def test_a_subgraphs_nodes_emit_events_inside_their_enclosing_node() -> None:
    app = _outer(_inner(answer=_answer, check=_check))

    events, result = await collect(app.run_stream({"log": []}))

    assert shown(events) == [
        ("run_start", None, 0),
        ("node_start", "prepare", 0),
        ("node_end", "prepare", 0),
        ("node_start", "agent", 0),
        ("node_start", "answer", 1),
        ("custom", "answer", 1),
        ("usage", "answer", 1),
        ("node_end", "answer", 1),
        ("node_start", "check", 1),
        ("node_end", "check", 1),
        ("node_end", "agent", 0),
        ("done", None, 0),
    ]
    agent_start = next(e for e in events if getattr(e, "node", None) == "answer")
    (part,) = agent_start.namespace
    assert part.startswith("agent:")
    assert len(part) > len("agent:")
    assert {e.namespace for e in events if e.namespace} == {agent_start.namespace}
    inner_end = next(e for e in events if e.type == "node_end" and e.namespace)
    update = inner_end.update  # type: ignore[attr-defined]
    assert update["log"] == ["answer"]
    assert [m.id for m in update["messages"]] == ["m-1"]
    # The result describes the run's own graph.
    assert [run.node for run in result.node_runs] == ["prepare", "agent"]
    assert set(result.outputs) == {"prepare", "agent"}
    # The subgraph's output holds the log it was given, and operator.add appends it.
    assert result.state["log"] == ["prepare", "prepare", "answer", "check"]


async def test_usage_counts_once_per_call_at_the_node_that_made_it() -> None:
    app = _outer(_inner(answer=_answer))

    events, _ = await collect(app.run_stream({"log": []}))

    usages = [e for e in events if e.type == "usage"]
    assert [(u.node, len(u.namespace), u.input_tokens, u.output_tokens) for u in usages] == [  # type: ignore[attr-defined]
        ("answer", 1, 11, 4)
    ]


async def test_two_levels_of_nesting_give_two_part_namespaces() -> None:
    middle = StateGraph(S)
    middle.add_node("deep", _inner(check=_check))
    middle.add_edge(START, "deep")
    app = _outer(middle.compile())

    events, _ = await collect(app.run_stream({"log": []}))

    check = next(e for e in events if getattr(e, "node", None) == "check")
    assert [part.split(":")[0] for part in check.namespace] == ["agent", "deep"]
    assert shown(events)[3:8] == [
        ("node_start", "agent", 0),
        ("node_start", "deep", 1),
        ("node_start", "check", 2),
        ("node_end", "check", 2),
        ("node_end", "deep", 1),
    ]


async def test_a_failing_subgraph_node_is_a_namespaced_error_and_fails_its_parent() -> None:
    def broken(state: S) -> dict[str, Any]:
        raise ValueError("inner broke")

    app = _outer(_inner(broken=broken))

    events, result = await collect(app.run_stream({"log": []}))

    errors = [(e.node, len(e.namespace)) for e in events if e.type == "node_error"]  # type: ignore[attr-defined]
    assert errors == [("broken", 1), ("agent", 0)]
    assert result.status == "failed"
    assert [run.node for run in result.node_runs] == ["prepare", "agent"]


async def test_an_interrupt_inside_a_subgraph_is_reported_once_by_the_enclosing_node() -> None:
    def ask(state: S) -> dict[str, Any]:
        return {"log": [f"told {interrupt('ok?')}"]}

    app = _outer(_inner(ask=ask), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-1"}}

    events, result = await collect(app.run_stream({"log": []}, config))

    pauses = [(e.node, e.namespace, e.value) for e in events if e.type == "interrupt"]  # type: ignore[attr-defined]
    assert pauses == [("agent", (), "ok?")]
    assert result.status == "interrupted"
    started = [e for e in events if e.type == "node_start" and e.namespace]
    assert [getattr(e, "node", None) for e in started] == ["ask"]

    events, result = await collect(app.run_stream(Resume("yes"), config))

    assert result.status == "completed"
    assert result.state["log"][-1] == "told yes"
    assert ("node_end", "ask", 1) in shown(events)


async def test_through_the_port_aievents_keep_the_namespace_and_usage_counts_once() -> None:
    app = _outer(_inner(answer=_answer, check=_check))
    caller = Caller(request_id="req-1", trace_id="tr-1", user_id="ada")

    async with InProcExecutor() as executor, asyncio.timeout(GUARD):
        handle = executor.run(RunRequest(app, {"log": []}, caller))
        got = [event async for event in handle]
        outcome = await handle.final

    nested = [(e.type, getattr(e, "node", None)) for e in got if e.namespace]
    assert nested == [
        ("node_start", "answer"),
        ("data", "answer"),  # its stream writer's custom write, as a port data event
        ("usage_report", "answer"),
        ("node_end", "answer"),
        ("node_start", "check"),
        ("node_end", "check"),
    ]
    assert [e.type for e in got].count("done") == 1
    assert outcome.usage == UsageTotals(input_tokens=11, output_tokens=4, cost_usd=None)
    # The namespace survives the wire form.
    start = next(e for e in got if e.namespace)
    assert event_from_dict(event_to_dict(start)) == start
