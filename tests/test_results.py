"""Spec: the RunResult a run hands back, and input validation by ``run()``.

A failed run does not raise: its result says ``failed`` and lists the
errors, and ``raise_for_status()`` raises the first one. Input that does not
fit the state schema raises :class:`InvalidInputError` before anything runs.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel

from flowcore import (
    END,
    START,
    FlowcoreError,
    Graph,
    InvalidInputError,
    NodeError,
    NodeRun,
    RunResult,
    append,
)


class State(TypedDict):
    log: Annotated[list[str], append]
    n: Annotated[int, operator.add]
    answer: str


def looping_graph() -> Graph:
    """START -> step (runs 3 times via a back edge) -> finish; 'skipme' is never routed to."""
    graph = Graph(State, name="results")
    graph.add_node("step", lambda s: {"n": 1, "log": [f"step{s['n'] + 1}"]})
    graph.add_node("finish", lambda s: {"answer": f"done after {s['n']}"})
    graph.add_node("skipme", lambda s: {"log": ["never"]})
    graph.add_edge(START, "step")
    graph.add_conditional_edges(
        "step",
        lambda s: "step" if s["n"] < 3 else ["finish"],
        ["step", "finish", "skipme"],
    )
    graph.add_edge("finish", END)
    return graph


async def test_completed_result_fields() -> None:
    compiled = looping_graph().compile(version="v1")

    result = await compiled.run({}, run_id="r-1")

    assert isinstance(result, RunResult)
    assert result.status == "completed"
    assert result.ok
    assert result.run_id == "r-1"
    assert result.graph_name == "results"
    assert result.graph_version == "v1"
    assert result.state == {"log": ["step1", "step2", "step3"], "n": 3, "answer": "done after 3"}
    assert result.errors == ()
    assert result.duration >= 0


async def test_outputs_hold_each_nodes_last_update() -> None:
    result = await looping_graph().compile().run({})

    assert result.outputs["step"] == {"n": 1, "log": ["step3"]}
    assert result.outputs["finish"] == {"answer": "done after 3"}
    assert "skipme" not in result.outputs


async def test_node_runs_record_every_execution_and_skip_in_order() -> None:
    result = await looping_graph().compile().run({})

    records = [(r.node, r.pass_index, r.superstep, r.status) for r in result.node_runs]
    assert records == [
        ("step", 1, 1, "completed"),
        ("finish", 1, 1, "skipped"),
        ("skipme", 1, 1, "skipped"),
        ("step", 2, 2, "completed"),
        ("finish", 2, 2, "skipped"),
        ("skipme", 2, 2, "skipped"),
        ("step", 3, 3, "completed"),
        # A skip is decided (and recorded) before the batch it would have joined runs.
        ("skipme", 3, 3, "skipped"),
        ("finish", 3, 4, "completed"),
    ]
    for record in result.node_runs:
        assert isinstance(record, NodeRun)
        if record.status == "completed":
            assert record.attempts == 1
            assert record.started_at >= 0
            assert record.duration >= 0
            assert record.error is None
        else:
            assert record.skip_reason == "not_triggered"
            assert record.update is None
    assert [r.update for r in result.node_runs if r.node == "step"] == [
        {"n": 1, "log": ["step1"]},
        {"n": 1, "log": ["step2"]},
        {"n": 1, "log": ["step3"]},
    ]


async def test_supersteps_counts_the_batches_that_ran() -> None:
    result = await looping_graph().compile().run({})

    assert result.supersteps == 4


async def test_failed_result_and_node_run_carry_the_error() -> None:
    def bad(state: Any) -> None:
        raise ZeroDivisionError("oops")

    graph = Graph(State).add_node("ok", lambda s: {"answer": "ok"}).add_node("bad", bad)
    graph.add_edge(START, "ok").add_edge("ok", "bad")

    result = await graph.compile().run({})

    assert result.status == "failed"
    assert not result.ok
    assert result.state == {"log": [], "n": 0, "answer": "ok"}
    (error,) = result.errors
    assert isinstance(error, NodeError)
    failed = [r for r in result.node_runs if r.status == "failed"]
    assert [(r.node, r.error) for r in failed] == [("bad", error)]
    assert failed[0].attempts == 1


async def test_raise_for_status_raises_the_first_error_on_failure() -> None:
    def bad1(state: Any) -> None:
        raise KeyError("first")

    def bad2(state: Any) -> None:
        raise ValueError("second")

    graph = Graph(State).add_node("bad1", bad1).add_node("bad2", bad2)
    graph.add_edge(START, "bad1").add_edge(START, "bad2")

    result = await graph.compile().run({}, on_error="skip_dependents")

    assert len(result.errors) == 2
    with pytest.raises(NodeError) as info:
        result.raise_for_status()
    assert info.value is result.errors[0]


async def test_raise_for_status_returns_the_result_on_success() -> None:
    result = await looping_graph().compile().run({})

    assert result.raise_for_status() is result


def test_raise_for_status_on_a_failure_without_errors_still_raises() -> None:
    result = RunResult(run_id="r", graph_name="g", graph_version="1", status="cancelled", state={})

    with pytest.raises(FlowcoreError, match="cancelled"):
        result.raise_for_status()


def test_run_sync_returns_the_same_result_as_run() -> None:
    result = looping_graph().compile().run_sync({})

    assert result.status == "completed"
    assert result.state["answer"] == "done after 3"


async def test_run_sync_inside_a_running_loop_says_to_await_run_instead() -> None:
    compiled = looping_graph().compile()

    with pytest.raises(RuntimeError, match=r"await graph\.run"):
        compiled.run_sync({})


# ------------------------------------------------------------------ bad input
def tripwire(ran: list[str]) -> Any:
    def node(state: Any) -> None:
        ran.append("ran")

    return Graph(State).add_node("node", node).add_edge(START, "node").compile()


async def test_unknown_input_key_raises_invalid_input_error_before_running() -> None:
    ran: list[str] = []

    with pytest.raises(InvalidInputError) as info:
        await tripwire(ran).run({"answer": "x", "qestion": "typo"})

    message = str(info.value)
    assert "'qestion'" in message
    assert "answer" in message  # lists the valid keys
    assert isinstance(info.value, ValueError)
    assert ran == []


@pytest.mark.parametrize("bad_input", [["answer", "x"], "answer", 42, ("a", 1)])
async def test_non_mapping_input_raises_invalid_input_error_before_running(
    bad_input: Any,
) -> None:
    ran: list[str] = []

    with pytest.raises(InvalidInputError, match="mapping"):
        await tripwire(ran).run(bad_input)

    assert ran == []


async def test_input_with_a_wrong_reducer_value_raises_invalid_input_error() -> None:
    ran: list[str] = []

    with pytest.raises(InvalidInputError, match="log"):
        await tripwire(ran).run({"log": "not a list"})

    assert ran == []


async def test_none_input_starts_from_the_defaults() -> None:
    result = await looping_graph().compile().run(None)

    assert result.status == "completed"
    assert result.state["n"] == 3


class ModelState(BaseModel):
    count: int = 0
    label: str


async def test_pydantic_state_input_is_validated() -> None:
    graph = Graph(ModelState).add_node("inc", lambda s: {"count": s.count + 1})
    compiled = graph.add_edge(START, "inc").compile()

    with pytest.raises(InvalidInputError, match="label"):
        await compiled.run({"count": 1})
    with pytest.raises(InvalidInputError, match="count"):
        await compiled.run({"count": "many", "label": "x"})

    result = await compiled.run({"label": "x"})
    assert result.state == {"count": 1, "label": "x"}
