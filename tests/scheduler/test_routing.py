"""Spec: conditional edges pick where a run goes next.

A router runs right after its source node, sees the state including that
node's own write, and returns a node name, a list of names (run in
parallel), END, or keys of its ``path_map``. Nodes no taken edge leads to are
skipped with reason ``not_triggered``; a join whose sources did not all run
is skipped too. A router that returns something undeclared, or raises, fails
its node with a :class:`RoutingError`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

import pytest

from flowcore import (
    END,
    START,
    FlowcoreError,
    Graph,
    NodeContext,
    NodeSkippedEvent,
    RoutingError,
    append,
)

from .helpers import MODES, collect, logger, runs_of, statuses


class State(TypedDict):
    log: Annotated[list[str], append]
    choice: str
    ok: bool


def branching(router: Any, path_map: Any = None, *, targets: tuple[str, ...] = ("b", "c")) -> Graph:
    """START -> a, then ``router`` picks among ``targets`` (each logs its name)."""
    graph = Graph(State).add_node("a", logger("a"))
    for name in targets:
        graph.add_node(name, logger(name))
    graph.add_edge(START, "a")
    graph.add_conditional_edges("a", router, path_map)
    return graph


def ran(result: Any) -> list[str]:
    return [r.node for r in result.node_runs if r.status == "completed"]


def skipped(result: Any) -> dict[str, str | None]:
    return {r.node: r.skip_reason for r in result.node_runs if r.status == "skipped"}


async def test_router_returning_a_node_name_runs_only_that_node() -> None:
    def route(state: Any) -> Literal["b", "c"]:
        return "c"

    result = await branching(route).compile().run({})

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["a", "c"]
    assert skipped(result) == {"b": "not_triggered"}


async def test_router_returning_a_list_runs_the_targets_in_parallel() -> None:
    def route(state: Any) -> list[Literal["b", "c", "d"]]:
        return ["d", "b"]

    result = await branching(route, targets=("b", "c", "d")).compile().run({})

    assert result.status == "completed", result.errors
    # Parallel: same superstep, writes applied in declaration order.
    assert result.state["log"] == ["a", "b", "d"]
    assert runs_of(result, "b")[0].superstep == runs_of(result, "d")[0].superstep == 2
    assert skipped(result) == {"c": "not_triggered"}


async def test_router_returning_end_stops_that_branch() -> None:
    def route(state: Any) -> Literal["b", "c", "__end__"]:
        return END

    result = await branching(route).compile().run({})

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["a"]
    assert skipped(result) == {"b": "not_triggered", "c": "not_triggered"}


@pytest.mark.parametrize(("ok", "expected"), [(True, "b"), (False, "c")])
async def test_path_map_dict_with_bool_keys(ok: bool, expected: str) -> None:
    result = await branching(lambda s: s["ok"], {True: "b", False: "c"}).compile().run({"ok": ok})

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["a", expected]


async def test_path_map_dict_can_map_a_key_to_end() -> None:
    graph = branching(lambda s: "stop", {"go": "b", "stop": END}, targets=("b",))

    result = await graph.compile().run({})

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["a"]


async def test_path_map_list_declares_the_targets() -> None:
    result = await branching(lambda s: "c", ["b", "c"]).compile().run({})

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["a", "c"]


async def test_router_taking_state_and_context() -> None:
    seen: list[tuple[str, str]] = []

    def route(state: Any, ctx: NodeContext) -> Literal["b", "c"]:
        seen.append((ctx.node, ctx.run_id))
        return ctx.config["branch"]  # type: ignore[no-any-return]

    result = await branching(route).compile().run({}, config={"branch": "b"}, run_id="r-1")

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["a", "b"]
    assert seen == [("a", "r-1")]


async def test_async_router() -> None:
    async def route(state: Any) -> Literal["b", "c"]:
        return "b"

    result = await branching(route).compile().run({})

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["a", "b"]


@pytest.mark.parametrize("mode", MODES)
async def test_router_sees_its_source_nodes_own_write(mode: str) -> None:
    graph = Graph(State)
    graph.add_node("a", lambda s: {"choice": "c"})
    graph.add_node("b", logger("b")).add_node("c", logger("c"))
    graph.add_edge(START, "a")
    graph.add_conditional_edges("a", lambda s: s["choice"], ["b", "c"])

    result = await graph.compile().run({"choice": "b"}, mode=mode)  # type: ignore[arg-type]

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["c"]


@pytest.mark.parametrize("mode", MODES)
async def test_untaken_branch_is_skipped_and_does_not_stall_a_downstream_node(mode: str) -> None:
    # a routes to b or c; both have their own plain edge into d. Only b is
    # taken, yet d runs exactly once, right after b.
    graph = branching(lambda s: "b", ["b", "c"])
    graph.add_node("d", logger("d"))
    graph.add_edge("b", "d").add_edge("c", "d")
    compiled = graph.compile()

    result = await compiled.run({}, mode=mode)  # type: ignore[arg-type]
    events = await collect(compiled.stream({}, mode=mode))  # type: ignore[arg-type]

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["a", "b", "d"]
    assert statuses(result) == {
        "a": ["completed"],
        "b": ["completed"],
        "c": ["skipped"],
        "d": ["completed"],
    }
    skips = [e for e in events if isinstance(e, NodeSkippedEvent)]
    assert [(e.node, e.reason) for e in skips] == [("c", "not_triggered")]


@pytest.mark.parametrize("mode", MODES)
async def test_join_whose_source_was_not_taken_is_skipped(mode: str) -> None:
    graph = branching(lambda s: "b", ["b", "c"])
    graph.add_node("d", logger("d"))
    graph.add_edge(["b", "c"], "d")
    compiled = graph.compile()

    result = await compiled.run({}, mode=mode)  # type: ignore[arg-type]
    events = await collect(compiled.stream({}, mode=mode))  # type: ignore[arg-type]

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["a", "b"]
    assert skipped(result) == {"c": "not_triggered", "d": "not_triggered"}
    skips = {e.node: e.reason for e in events if isinstance(e, NodeSkippedEvent)}
    assert skips == {"c": "not_triggered", "d": "not_triggered"}


@pytest.mark.parametrize("mode", MODES)
async def test_join_runs_when_the_router_takes_every_source(mode: str) -> None:
    graph = branching(lambda s: ["b", "c"], ["b", "c"])
    graph.add_node("d", logger("d"))
    graph.add_edge(["b", "c"], "d")

    result = await graph.compile().run({}, mode=mode)  # type: ignore[arg-type]

    assert result.status == "completed", result.errors
    assert result.state["log"] == ["a", "b", "c", "d"]


async def test_router_returning_an_undeclared_target_fails_the_run() -> None:
    def route(state: Any) -> Literal["b", "c"]:
        return "nowhere"  # type: ignore[return-value]

    result = await branching(route).compile().run({})

    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, RoutingError)
    assert isinstance(error, FlowcoreError)
    assert error.node == "a"
    assert "'a'" in str(error)
    assert "'nowhere'" in str(error)
    assert ran(result) == []
    assert runs_of(result, "a")[0].status == "failed"
    # The failed node's own write is not applied either.
    assert result.state["log"] == []


async def test_router_returning_an_unknown_path_map_key_fails_the_run() -> None:
    result = await branching(lambda s: "maybe", {"yes": "b", "no": "c"}).compile().run({})

    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, RoutingError)
    assert error.node == "a"
    message = str(error)
    assert "'a'" in message
    assert "'maybe'" in message
    assert "path_map" in message


async def test_router_raising_fails_with_routing_error_chained_to_the_cause() -> None:
    boom = KeyError("missing")

    def route(state: Any) -> Literal["b", "c"]:
        raise boom

    result = await branching(route).compile().run({})

    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, RoutingError)
    assert error.node == "a"
    assert error.__cause__ is boom
    assert "'a'" in str(error)
    assert "KeyError" in str(error)


@pytest.mark.parametrize(("ok", "expected"), [(True, ["b"]), (False, ["c"])])
@pytest.mark.parametrize("mode", MODES)
async def test_conditional_edges_from_start_pick_the_entry(
    mode: str, ok: bool, expected: list[str]
) -> None:
    graph = Graph(State).add_node("b", logger("b")).add_node("c", logger("c"))
    graph.add_conditional_edges(START, lambda s: s["ok"], {True: "b", False: "c"})

    result = await graph.compile().run({"ok": ok}, mode=mode)  # type: ignore[arg-type]

    assert result.status == "completed", result.errors
    assert result.state["log"] == expected


async def test_start_router_returning_an_undeclared_target_fails_the_run() -> None:
    graph = Graph(State).add_node("b", logger("b"))
    graph.add_conditional_edges(START, lambda s: "nope", {"yes": "b"})

    result = await graph.compile().run({})

    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, RoutingError)
    assert result.node_runs == ()
