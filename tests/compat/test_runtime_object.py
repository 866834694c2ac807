"""A node's ``Runtime``: context, store, writer, execution info, server info and drains."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

import pytest
from pydantic import BaseModel, ValidationError

from flowcore.compat.langgraph import (
    END,
    START,
    ExecutionInfo,
    GraphDrained,
    InMemorySaver,
    RunControl,
    Runtime,
    StateGraph,
    get_runtime,
)


class State(TypedDict, total=False):
    text: str
    second: str


@dataclass
class Ctx:
    api_key: str
    timeout: int = 30


def _one_node(node: Any, **schemas: Any) -> Any:
    builder: StateGraph[State, Ctx] = StateGraph(State, **schemas)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    return builder


def test_a_node_asking_for_runtime_gets_the_run_context() -> None:
    def node(state: State, runtime: Runtime[Ctx]) -> State:
        return {"text": f"{runtime.context.api_key}/{runtime.context.timeout}"}

    graph = _one_node(node, context_schema=Ctx).compile()
    assert graph.invoke({"text": ""}, context=Ctx("k1", 5)) == {"text": "k1/5"}
    # A mapping is coerced to the dataclass schema, defaults filled in.
    assert graph.invoke({"text": ""}, context={"api_key": "k2"}) == {"text": "k2/30"}


def test_get_runtime_inside_a_node_and_outside_any_run() -> None:
    def node(state: State) -> State:
        return {"text": get_runtime(Ctx).context.api_key}

    graph = _one_node(node, context_schema=Ctx).compile()
    assert graph.invoke({"text": ""}, context=Ctx("k3")) == {"text": "k3"}
    with pytest.raises(RuntimeError):
        get_runtime()


def test_context_coercion_errors_are_the_schemas_own() -> None:
    class Model(BaseModel):
        api_key: str
        timeout: int

    def node(state: State, runtime: Runtime[Any]) -> State:
        return {"text": str(runtime.context)}

    with pytest.raises(TypeError):
        _one_node(node, context_schema=Ctx).compile().invoke({}, context={"timeout": 1})
    with pytest.raises(ValidationError):
        _one_node(node, context_schema=Model).compile().invoke(
            {}, context={"api_key": "k", "timeout": "soon"}
        )


def test_no_context_given_is_none() -> None:
    def node(state: State, runtime: Runtime[Ctx]) -> State:
        return {"text": repr(runtime.context)}

    assert _one_node(node, context_schema=Ctx).compile().invoke({}) == {"text": "None"}


def test_execution_info_names_the_task_thread_and_namespace() -> None:
    seen: list[ExecutionInfo] = []

    def node(state: State, runtime: Runtime[None]) -> State:
        assert runtime.execution_info is not None
        seen.append(runtime.execution_info)
        return {"text": "x"}

    graph = _one_node(node).compile(checkpointer=InMemorySaver())
    graph.invoke({}, {"configurable": {"thread_id": "t-1"}, "run_id": "r-1"})
    (info,) = seen
    assert info.thread_id == "t-1"
    assert info.run_id == "r-1"
    assert info.node_attempt == 1
    assert info.checkpoint_ns == f"node:{info.task_id}"
    assert isinstance(info.node_first_attempt_time, float)
    stored = graph.get_state({"configurable": {"thread_id": "t-1"}})
    assert stored.config["configurable"]["checkpoint_id"] != ""


def test_server_info_only_when_the_config_carries_it() -> None:
    seen: list[Any] = []

    def node(state: State, runtime: Runtime[None]) -> State:
        seen.append(runtime.server_info)
        return {"text": "x"}

    graph = _one_node(node).compile()
    graph.invoke({}, {"configurable": {"assistant_id": "a1", "graph_id": "g1"}})
    graph.invoke({})
    assert seen[0] is not None
    assert (seen[0].assistant_id, seen[0].graph_id) == ("a1", "g1")
    assert seen[1] is None


def test_a_drain_stops_at_the_next_step_and_the_thread_goes_on() -> None:
    control = RunControl()
    ran: list[str] = []

    def first(state: State) -> State:
        control.request_drain("sigterm")
        ran.append("first")
        return {"text": "first"}

    def second(state: State) -> State:
        ran.append("second")
        return {"second": "done"}

    builder: StateGraph[State] = StateGraph(State)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "drained"}}
    with pytest.raises(GraphDrained, match="sigterm"):
        graph.invoke({}, config, control=control)
    assert ran == ["first"]
    assert graph.invoke(None, config) == {"text": "first", "second": "done"}
    assert ran == ["first", "second"]


def test_a_drain_in_the_last_step_lets_the_run_finish() -> None:
    control = RunControl()

    def node(state: State) -> State:
        control.request_drain()
        return {"text": "done"}

    assert _one_node(node).compile().invoke({}, control=control) == {"text": "done"}
    assert control.drain_requested


def test_runtime_merge_override_and_patch() -> None:
    control = RunControl()
    base = Runtime(context="c", control=control)
    merged = base.merge(Runtime(store="s"))
    assert (merged.context, merged.store, merged.control) == ("c", "s", control)
    assert base.override(context="d").context == "d"
    with pytest.raises(RuntimeError, match="execution_info"):
        base.patch_execution_info(node_attempt=2)
    info = ExecutionInfo("cp", "", "t")
    assert Runtime(execution_info=info).patch_execution_info(node_attempt=2).execution_info == (
        ExecutionInfo("cp", "", "t", node_attempt=2)
    )


def test_state_graph_takes_type_parameters() -> None:
    builder: StateGraph[State, Ctx, State, State] = StateGraph(State, context_schema=Ctx)
    assert StateGraph[State] is not StateGraph
    assert builder.context_schema is Ctx
