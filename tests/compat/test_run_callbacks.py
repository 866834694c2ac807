"""Spec: LangChain callbacks in a compat run's config, TracePolicy, graph lifecycle handlers.

A run whose config has ``callbacks`` reports a chain run for the graph and a
child run per node task (named after the node, tagged ``graph:step:N``, with
the node's input and what it returned); LangChain code inside a node nests
under the task's run; a node's ``TracePolicy`` changes only what tracers
record. ``GraphCallbackHandler`` subclasses hear pauses and resumes.
"""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    END,
    START,
    Command,
    GraphCallbackHandler,
    GraphInterruptEvent,
    GraphResumeEvent,
    InMemorySaver,
    StateGraph,
    TracePolicy,
    interrupt,
)
from flowcore.compat.langgraph._trace_policy import omit_payload, recorded_payload


class State(TypedDict):
    value: int


def _incr(state: State) -> State:
    return {"value": state["value"] + 1}


def _graph(policy: TracePolicy | None = None) -> Any:
    return (
        StateGraph(State)
        .add_node("n", _incr, trace_policy=policy)
        .add_edge(START, "n")
        .add_edge("n", END)
        .compile()
    )


def _tracer() -> Any:
    tracers = pytest.importorskip("langchain_core.tracers")

    class Recorder(tracers.BaseTracer):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.roots: list[Any] = []

        def _persist_run(self, run: Any) -> None:
            self.roots.append(run)

    return Recorder()


def test_recorded_payload_falls_back_to_the_real_value() -> None:
    assert recorded_payload({"a": 1}, None) == {"a": 1}
    assert recorded_payload({"a": 1}, omit_payload) == {}

    def boom(_: Any) -> Any:
        raise RuntimeError("no")

    value = {"a": 1}
    assert recorded_payload(value, boom) is value


def test_graph_and_node_runs_reach_a_tracer() -> None:
    tracer = _tracer()
    assert _graph().invoke({"value": 1}, {"callbacks": [tracer]}) == {"value": 2}
    (root,) = tracer.roots
    assert root.name == "LangGraph"
    assert (root.inputs, root.outputs) == ({"value": 1}, {"value": 2})
    (node,) = root.child_runs
    assert node.name == "n"
    assert node.tags == ["graph:step:1"]
    assert (node.inputs, node.outputs) == ({"value": 1}, {"value": 2})
    assert node.extra["metadata"]["langgraph_node"] == "n"


def test_trace_policy_changes_only_what_tracers_record() -> None:
    seen: list[Any] = []
    policy = TracePolicy(
        process_inputs=lambda v: seen.append(v) or {"in": "hidden"},
        process_outputs=lambda v: {"out": "hidden"},
    )
    tracer = _tracer()
    assert _graph(policy).invoke({"value": 1}, {"callbacks": [tracer]}) == {"value": 2}
    (node,) = tracer.roots[0].child_runs
    assert (node.inputs, node.outputs) == ({"in": "hidden"}, {"out": "hidden"})
    assert seen == [{"value": 1}]


def test_a_raising_processor_records_the_real_payload() -> None:
    def boom(_: Any) -> Any:
        raise RuntimeError("processor failed")

    tracer = _tracer()
    graph = _graph(TracePolicy(process_inputs=boom))
    assert graph.invoke({"value": 1}, {"callbacks": [tracer]}) == {"value": 2}
    assert tracer.roots[0].child_runs[0].inputs == {"value": 1}
    assert graph.invoke({"value": 1}) == {"value": 2}


def test_langchain_code_in_a_node_nests_under_the_task_run() -> None:
    runnables = pytest.importorskip("langchain_core.runnables")
    inner = runnables.RunnableLambda(lambda x: x * 2).with_config(run_name="double")

    def node(state: State) -> State:
        return {"value": inner.invoke(state["value"])}

    tracer = _tracer()
    graph = StateGraph(State).add_node("n", node).add_edge(START, "n").compile()
    assert graph.invoke({"value": 3}, {"callbacks": [tracer]}) == {"value": 6}
    (node_run,) = tracer.roots[0].child_runs
    assert [c.name for c in node_run.child_runs] == ["double"]


def test_a_failing_node_ends_its_runs_with_the_error() -> None:
    def fail(state: State) -> State:
        raise ValueError("bad")

    tracer = _tracer()
    graph = StateGraph(State).add_node("n", fail).add_edge(START, "n").compile()
    with pytest.raises(ValueError, match="bad"):
        graph.invoke({"value": 1}, {"callbacks": [tracer]})
    (root,) = tracer.roots
    assert "bad" in (root.error or "")
    assert "bad" in (root.child_runs[0].error or "")


def test_a_subgraph_run_nests_under_its_node_run() -> None:
    inner = StateGraph(State).add_node("i", _incr).add_edge(START, "i").compile()
    outer = StateGraph(State).add_node("sub", inner).add_edge(START, "sub").compile()
    tracer = _tracer()
    assert outer.invoke({"value": 1}, {"callbacks": [tracer]}) == {"value": 2}
    (sub,) = tracer.roots[0].child_runs
    assert sub.name == "sub"
    (inner_graph,) = sub.child_runs
    assert [c.name for c in inner_graph.child_runs] == ["i"]


class _Lifecycle(GraphCallbackHandler):
    def __init__(self, *, raise_on_interrupt: bool = False) -> None:
        self.events: list[Any] = []
        self.raise_on_interrupt = raise_on_interrupt

    def on_interrupt(self, event: GraphInterruptEvent) -> None:
        if self.raise_on_interrupt:
            raise ValueError("handler failed")
        self.events.append(event)

    async def on_resume(self, event: GraphResumeEvent) -> None:
        self.events.append(event)


def _asking_graph() -> Any:
    def ask(state: State) -> State:
        return {"value": interrupt("how many?")}

    return (
        StateGraph(State)
        .add_node("ask", ask)
        .add_edge(START, "ask")
        .compile(checkpointer=InMemorySaver())
    )


def test_lifecycle_handlers_hear_pauses_and_resumes() -> None:
    graph = _asking_graph()
    handler = _Lifecycle()
    config = {"configurable": {"thread_id": "t"}, "callbacks": [handler]}
    assert "__interrupt__" in graph.invoke({"value": 0}, config)
    (paused,) = handler.events
    assert isinstance(paused, GraphInterruptEvent)
    assert paused.checkpoint_ns == ()
    assert [i.value for i in paused.interrupts] == ["how many?"]
    assert graph.invoke(Command(resume=4), config) == {"value": 4}
    resumed = handler.events[1]
    assert isinstance(resumed, GraphResumeEvent)
    assert resumed.checkpoint_id == paused.checkpoint_id


def test_a_raising_lifecycle_handler_is_skipped_unless_it_asks_to_raise() -> None:
    quiet, recording = _Lifecycle(raise_on_interrupt=True), _Lifecycle()
    config = {"configurable": {"thread_id": "t"}, "callbacks": [quiet, recording]}
    assert "__interrupt__" in _asking_graph().invoke({"value": 0}, config)
    assert len(recording.events) == 1

    loud = _Lifecycle(raise_on_interrupt=True)
    loud.raise_error = True
    config = {"configurable": {"thread_id": "t"}, "callbacks": [loud]}
    with pytest.raises(ValueError, match="handler failed"):
        _asking_graph().invoke({"value": 0}, config)
