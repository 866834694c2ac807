"""Node error handlers: ``add_node(error_handler=)`` and ``set_node_defaults(error_handler=)``."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    END,
    START,
    Command,
    InMemorySaver,
    NodeError,
    RetryPolicy,
    StateGraph,
    interrupt,
)


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _fail(message: str) -> Any:
    def node(state: Log) -> Log:
        raise RuntimeError(message)

    return node


def test_the_handler_gets_the_input_and_the_failure_and_its_result_stands() -> None:
    seen: list[tuple[list[str], str, str]] = []

    def handler(state: Log, error: NodeError) -> Log:
        seen.append((state["log"], error.node, str(error.error)))
        return {"log": ["handled"]}

    builder: StateGraph[Log] = StateGraph(Log)
    builder.add_node("fails", _fail("boom"), error_handler=handler)
    builder.add_node("after", lambda s: {"log": ["after"]})
    builder.add_edge(START, "fails")
    builder.add_edge("fails", "after")
    graph = builder.compile()

    # The failed node's edge does not fire: only the handler's update is applied.
    assert graph.invoke({"log": ["in"]}) == {"log": ["in", "handled"]}
    assert seen == [(["in"], "fails", "boom")]


def test_a_handler_routes_with_a_command_after_the_retries_are_spent() -> None:
    attempts: list[int] = []

    def flaky(state: Log) -> Log:
        attempts.append(1)
        raise ValueError("nope")

    builder: StateGraph[Log] = StateGraph(Log)
    builder.add_node(
        "flaky",
        flaky,
        retry_policy=RetryPolicy(
            max_attempts=3, initial_interval=0, jitter=False, retry_on=ValueError
        ),
        error_handler=lambda s: Command(update={"log": ["recovered"]}, goto="next"),
    )
    builder.add_node("next", lambda s: {"log": ["next"]})
    builder.add_edge(START, "flaky")
    builder.add_edge("next", END)
    graph = builder.compile()

    assert graph.invoke({"log": []}) == {"log": ["recovered", "next"]}
    assert len(attempts) == 3


def test_a_failing_handler_fails_the_run_and_no_default_catches_it() -> None:
    def broken(state: Log, error: NodeError) -> Log:
        raise KeyError("handler")

    builder: StateGraph[Log] = StateGraph(Log)
    builder.set_node_defaults(error_handler=lambda s: {"log": ["default"]})
    builder.add_node("fails", _fail("boom"), error_handler=broken)
    builder.add_edge(START, "fails")
    graph = builder.compile()

    with pytest.raises(KeyError, match="handler"):
        graph.invoke({"log": []})


def test_the_default_handler_covers_nodes_without_their_own() -> None:
    def default(state: Log, error: NodeError) -> Log:
        return {"log": [f"default:{error.node}"]}

    builder: StateGraph[Log] = StateGraph(Log)
    builder.add_node("a", _fail("a"))
    builder.add_node("b", _fail("b"), error_handler=lambda s: {"log": ["own:b"]})
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    builder.set_node_defaults(error_handler=default)
    graph = builder.compile()

    assert sorted(graph.invoke({"log": []})["log"]) == ["default:a", "own:b"]


def test_a_node_named_like_the_default_handler_is_refused() -> None:
    builder: StateGraph[Log] = StateGraph(Log)
    builder.set_node_defaults(error_handler=lambda s: s)
    builder.add_node("__default_error_handler__", lambda s: s)
    builder.add_edge(START, "__default_error_handler__")

    with pytest.raises(ValueError, match="__default_error_handler__"):
        builder.compile()


def test_a_resume_after_the_handler_failed_runs_the_handler_not_the_node() -> None:
    calls = {"node": 0, "handler": 0}
    errors: list[NodeError] = []

    def node(state: Log) -> Log:
        calls["node"] += 1
        raise RuntimeError("boom")

    def handler(state: Log, error: NodeError) -> Log:
        calls["handler"] += 1
        errors.append(error)
        if calls["handler"] == 1:
            raise RuntimeError("handler crash")
        return {"log": ["recovered"]}

    builder: StateGraph[Log] = StateGraph(Log)
    builder.add_node("node", node, error_handler=handler)
    builder.add_edge(START, "node")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "crash"}}

    with pytest.raises(RuntimeError, match="handler crash"):
        graph.invoke({"log": []}, config)
    assert graph.invoke(None, config) == {"log": ["recovered"]}

    assert calls == {"node": 1, "handler": 2}
    assert [e.node for e in errors] == ["node", "node"]
    assert "boom" in str(errors[1].error)
    assert isinstance(errors[1].error, Exception)


def test_an_interrupt_is_not_a_failure() -> None:
    builder: StateGraph[Log] = StateGraph(Log)
    builder.add_node(
        "ask", lambda s: {"log": [interrupt("ok?")]}, error_handler=lambda s: {"log": ["handled"]}
    )
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "ask"}}

    paused = graph.invoke({"log": []}, config)

    assert [i.value for i in paused["__interrupt__"]] == ["ok?"]
    assert graph.invoke(Command(resume="yes"), config) == {"log": ["yes"]}


def test_a_handler_may_be_named_as_a_breakpoint() -> None:
    builder: StateGraph[Log] = StateGraph(Log)
    builder.add_node("fails", _fail("boom"), error_handler=lambda s: {"log": ["handled"]})
    builder.add_edge(START, "fails")
    graph = builder.compile(
        checkpointer=InMemorySaver(), interrupt_before=["__error_handler__fails"]
    )
    config = {"configurable": {"thread_id": "named"}}

    # The handler runs inside the failed node's task, so the run does not stop before it.
    assert graph.invoke({"log": []}, config) == {"log": ["handled"]}

    with pytest.raises(ValueError, match="__error_handler__other"):
        builder.compile(interrupt_before=["__error_handler__other"])
