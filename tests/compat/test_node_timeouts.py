"""Spec: LangGraph node timeouts (``TimeoutPolicy``) kept by flowcore's runtime."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TypedDict

import pytest

from flowcore.compat.langgraph import (
    END,
    START,
    EphemeralValue,
    InMemorySaver,
    LastValue,
    NodeBuilder,
    NodeTimeoutError,
    Pregel,
    RetryPolicy,
    Runtime,
    Send,
    StateGraph,
    TimeoutPolicy,
)
from flowcore.compat.langgraph._node_builder import PregelNode


class State(TypedDict):
    x: int


async def _slow(state: State) -> State:
    await asyncio.sleep(10)
    return {"x": state["x"] + 100}


async def _quick(state: State) -> State:
    return {"x": state["x"] + 1}


def _one_node(action: object, **options: object) -> StateGraph[State]:
    graph: StateGraph[State] = StateGraph(State)
    return graph.add_node("n", action, **options).add_edge(START, "n").add_edge("n", END)


def test_coerce_makes_float_seconds_and_keeps_coerced_policies() -> None:
    assert TimeoutPolicy.coerce(None) is None
    assert TimeoutPolicy.coerce(timedelta(milliseconds=250)) == TimeoutPolicy(run_timeout=0.25)
    assert TimeoutPolicy.coerce(2) == TimeoutPolicy(run_timeout=2.0)
    coerced = TimeoutPolicy.coerce(TimeoutPolicy(run_timeout=1.0, idle_timeout=2.0))
    assert TimeoutPolicy.coerce(coerced) is coerced
    assert TimeoutPolicy.coerce(TimeoutPolicy()) is None


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (0, ValueError),
        (TimeoutPolicy(idle_timeout=-1), ValueError),
        (TimeoutPolicy(run_timeout=1, refresh_on="often"), ValueError),  # type: ignore[arg-type]
        ("5", TypeError),
    ],
)
def test_coerce_refuses_bad_values(value: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        TimeoutPolicy.coerce(value)  # type: ignore[arg-type]


def test_add_node_checks_the_timeout_at_once() -> None:
    with pytest.raises(ValueError, match="greater than 0"):
        StateGraph(State).add_node("n", _quick, timeout=0)


def test_compile_refuses_a_sync_node_with_a_timeout() -> None:
    def sync(state: State) -> State:
        return state

    with pytest.raises(ValueError, match="only supported for async nodes"):
        _one_node(sync, timeout=TimeoutPolicy(idle_timeout=0.05)).compile()


async def test_a_node_past_its_timeout_fails_with_node_timeout_error() -> None:
    app = _one_node(_slow, timeout=TimeoutPolicy(run_timeout=0.05, idle_timeout=0.5)).compile()
    with pytest.raises(NodeTimeoutError) as caught:
        await app.ainvoke({"x": 1})
    error = caught.value
    assert (error.node, error.kind, error.timeout) == ("n", "run", 0.05)
    assert (error.run_timeout, error.idle_timeout) == (0.05, 0.5)
    assert not isinstance(error, TimeoutError)


async def test_an_idle_node_fails_with_kind_idle() -> None:
    app = _one_node(_slow, timeout=TimeoutPolicy(idle_timeout=0.05)).compile()
    with pytest.raises(NodeTimeoutError) as caught:
        await app.ainvoke({"x": 1})
    assert (caught.value.kind, caught.value.run_timeout) == ("idle", None)


async def test_runtime_heartbeat_keeps_an_idle_node_alive() -> None:
    async def busy(state: State, runtime: Runtime[None]) -> State:
        for _ in range(15):
            await asyncio.sleep(0.1)
            runtime.heartbeat()
        return {"x": state["x"] + 1}

    app = _one_node(busy, timeout=TimeoutPolicy(idle_timeout=1.0)).compile()
    assert await app.ainvoke({"x": 1}) == {"x": 2}


async def test_a_retry_policy_retries_a_timed_out_attempt() -> None:
    calls: list[int] = []

    async def flaky(state: State) -> State:
        calls.append(1)
        if len(calls) == 1:
            await asyncio.sleep(10)
        return {"x": state["x"] + 1}

    retry = RetryPolicy(
        max_attempts=3, initial_interval=0.0, jitter=False, retry_on=NodeTimeoutError
    )
    app = _one_node(flaky, timeout=0.1, retry_policy=retry).compile()
    assert await app.ainvoke({"x": 0}) == {"x": 1}
    assert len(calls) == 2


async def test_node_defaults_apply_to_nodes_without_their_own() -> None:
    app = (
        StateGraph(State)
        .set_node_defaults(timeout=TimeoutPolicy(run_timeout=0.05))
        .add_node("n", _slow)
        .add_edge(START, "n")
        .compile()
    )
    with pytest.raises(NodeTimeoutError):
        await app.ainvoke({"x": 1})


async def test_a_node_own_timeout_wins_over_the_default() -> None:
    async def short(state: State) -> State:
        await asyncio.sleep(0.05)
        return {"x": state["x"] + 1}

    app = (
        _one_node(short, timeout=TimeoutPolicy(run_timeout=5.0))
        .set_node_defaults(timeout=TimeoutPolicy(run_timeout=0.01))
        .compile()
    )
    assert await app.ainvoke({"x": 1}) == {"x": 2}


def test_node_default_retry_policy_is_used_after_add_node() -> None:
    calls: list[int] = []

    def flaky(state: State) -> State:
        calls.append(1)
        if len(calls) < 3:
            raise ValueError("not yet")
        return {"x": len(calls)}

    retry = RetryPolicy(max_attempts=3, initial_interval=0.0, jitter=False, retry_on=ValueError)
    app = _one_node(flaky).set_node_defaults(retry_policy=retry).compile()
    assert app.invoke({"x": 0}) == {"x": 3}


def test_node_timeout_error_needs_the_timeout_that_fired() -> None:
    with pytest.raises(ValueError, match="idle_timeout"):
        NodeTimeoutError("n", 1.0, kind="idle", run_timeout=1.0)


async def test_a_send_timeout_replaces_the_node_timeout() -> None:
    def route(state: State) -> list[Send]:
        return [Send("n", state, timeout=TimeoutPolicy(idle_timeout=0.05))]

    app = (
        StateGraph(State)
        .add_node("n", _slow, timeout=TimeoutPolicy(idle_timeout=30.0))
        .add_conditional_edges(START, route)
        .compile()
    )
    with pytest.raises(NodeTimeoutError) as caught:
        await app.ainvoke({"x": 1})
    assert (caught.value.node, caught.value.idle_timeout) == ("n", 0.05)


async def test_a_send_keeps_its_timeout_through_a_checkpoint() -> None:
    def route(state: State) -> list[Send]:
        return [Send("n", state, timeout=TimeoutPolicy(idle_timeout=0.05))]

    saver = InMemorySaver()

    def build() -> object:
        return (
            StateGraph(State)
            .add_node("n", _slow)
            .add_conditional_edges(START, route)
            .compile(checkpointer=saver, interrupt_before=["n"])
        )

    config = {"configurable": {"thread_id": "t"}}
    await build().ainvoke({"x": 1}, config)  # type: ignore[attr-defined]
    # A new graph object: the pending Send comes back from the saver only.
    with pytest.raises(NodeTimeoutError) as caught:
        await build().ainvoke(None, config)  # type: ignore[attr-defined]
    assert caught.value.idle_timeout == 0.05


def test_send_timeout_is_checked_and_compared() -> None:
    with pytest.raises(ValueError, match="greater than 0"):
        Send("n", {}, timeout=0)
    assert Send("n", 1, timeout=1) == Send("n", 1, timeout=TimeoutPolicy(run_timeout=1.0))
    assert Send("n", 1, timeout=1) != Send("n", 1)


async def test_a_low_level_node_built_with_set_timeout_is_capped() -> None:
    async def slow(value: int) -> int:
        await asyncio.sleep(10)
        return value

    node = NodeBuilder().subscribe_only("input").do(slow).set_timeout(0.05).write_to("output")
    graph = Pregel(
        nodes={"slow": node},
        channels={"input": EphemeralValue(int), "output": LastValue(int)},
        input_channels="input",
        output_channels="output",
    )
    with pytest.raises(NodeTimeoutError) as caught:
        await graph.ainvoke(1)
    assert (caught.value.node, caught.value.kind) == ("slow", "run")


def test_a_pregel_node_timeout_is_checked_when_made() -> None:
    with pytest.raises(ValueError, match="greater than 0"):
        PregelNode(channels="x", triggers=["x"], timeout=0)
