"""Spec: the LangGraph-shaped front door runs LangGraph's superstep semantics on its own.

These run without langgraph installed; tests/conformance compares the same
behaviour against LangGraph itself.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    END,
    START,
    Command,
    GraphRecursionError,
    InvalidUpdateError,
    Send,
    StateGraph,
)


class State(TypedDict, total=False):
    n: int
    log: Annotated[list[Any], operator.add]


def logger(name: str) -> Any:
    return lambda state: {"log": [name]}


def test_a_node_reached_by_separate_edges_runs_once_per_superstep_that_triggers_it() -> None:
    graph = StateGraph(State)
    for name in ("a", "b", "b2", "c", "d"):
        graph.add_node(name, logger(name))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", "b2").add_edge("b2", "d")
    graph.add_edge("a", "c").add_edge("c", "d")

    assert graph.compile().invoke({})["log"] == ["a", "b", "c", "b2", "d", "d"]


def test_a_join_waits_for_every_source() -> None:
    graph = StateGraph(State)
    for name in ("a", "b", "b2", "c", "d"):
        graph.add_node(name, logger(name))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", "b2").add_edge("a", "c")
    graph.add_edge(["b2", "c"], "d")

    assert graph.compile().invoke({})["log"] == ["a", "b", "c", "b2", "d"]


def test_writes_of_a_superstep_are_applied_in_node_name_order() -> None:
    graph = StateGraph(State)
    for name in ("zeta", "alpha", "mid"):
        graph.add_node(name, logger(name)).add_edge(START, name)

    assert graph.compile().invoke({})["log"] == ["alpha", "mid", "zeta"]


def test_two_writes_to_a_plain_key_in_one_superstep_are_refused() -> None:
    graph = StateGraph(State)
    graph.add_node("a", lambda s: {"n": 1}).add_node("b", lambda s: {"n": 2})
    graph.add_edge(START, "a").add_edge(START, "b")

    with pytest.raises(InvalidUpdateError, match="At key 'n': Can receive only one value"):
        graph.compile().invoke({})


@pytest.mark.parametrize(("limit", "ends"), [(3, "error"), (4, "done")])
def test_the_recursion_limit_counts_the_start_step(limit: int, ends: str) -> None:
    graph = StateGraph(State)
    for name in ("a", "b", "c"):
        graph.add_node(name, logger(name))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c")
    app = graph.compile()

    if ends == "error":
        with pytest.raises(GraphRecursionError):
            app.invoke({}, {"recursion_limit": limit})
    else:
        assert app.invoke({}, {"recursion_limit": limit})["log"] == ["a", "b", "c"]


def test_send_fans_out_in_order_and_each_send_follows_the_nodes_edges() -> None:
    graph = StateGraph(State)
    graph.add_node("fan", lambda s: {})
    graph.add_node("work", lambda item: {"log": [item["n"] * 10]})
    graph.add_node("done", logger("done"))
    graph.add_edge(START, "fan").add_edge("work", "done")
    graph.add_conditional_edges("fan", lambda s: [Send("work", {"n": i}) for i in range(4)])

    assert graph.compile().invoke({})["log"] == [0, 10, 20, 30, "done"]


def test_a_command_updates_and_routes_in_one_value() -> None:
    graph = StateGraph(State)
    graph.add_node("a", lambda s: Command(update={"log": ["a"]}, goto="c"))
    graph.add_node("b", logger("b")).add_node("c", logger("c"))
    graph.add_edge(START, "a")

    chunks = list(graph.compile().stream({}, stream_mode="updates"))

    assert chunks == [{"a": {"log": ["a"]}}, {"c": {"log": ["c"]}}]


def test_a_router_sees_the_nodes_own_update_and_may_return_end() -> None:
    graph = StateGraph(State)
    graph.add_node("inc", lambda s: {"n": s.get("n", 0) + 1})
    graph.add_edge(START, "inc")
    graph.add_conditional_edges("inc", lambda s: "inc" if s["n"] < 3 else END)

    assert graph.compile().invoke({"n": 0}) == {"n": 3, "log": []}


@pytest.mark.parametrize("max_concurrency", [None, 3])
async def test_a_failing_node_cancels_the_nodes_running_beside_it(
    max_concurrency: int | None,
) -> None:
    seen: list[str] = []

    async def slow(state: State) -> dict[str, Any]:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("slow cancelled")
            raise
        return {"log": ["slow"]}

    async def fail(state: State) -> dict[str, Any]:
        await asyncio.sleep(0)
        raise ValueError("boom")

    graph = StateGraph(State)
    graph.add_node("slow", slow).add_node("fail", fail).add_node("after", logger("after"))
    graph.add_edge(START, "slow").add_edge(START, "fail")
    graph.add_edge("slow", "after").add_edge("fail", "after")
    config: dict[str, Any] = {}
    if max_concurrency is not None:
        config["max_concurrency"] = max_concurrency
    with pytest.raises(ValueError, match="boom"):
        await asyncio.wait_for(graph.compile().ainvoke({"n": 0}, config), 30)  # hang guard
    assert seen == ["slow cancelled"]
