"""Spec for the ``Graph`` builder: declaring nodes and edges, and compiling."""

from __future__ import annotations

import asyncio
import functools
import itertools
import threading
from typing import Annotated, Any, Literal, TypedDict

import pytest

from flowcore import (
    END,
    START,
    CompiledGraph,
    Graph,
    GraphDefinitionError,
    NodeContext,
    append,
)


class State(TypedDict):
    n: int
    log: Annotated[list[str], append]


class Other(TypedDict):
    n: int
    log: Annotated[list[str], append]
    extra: str


def inc(state: dict[str, Any]) -> dict[str, Any]:
    return {"n": state["n"] + 1, "log": ["inc"]}


def single_node_graph(func: Any, name: str = "node") -> CompiledGraph:
    return Graph(State).add_node(name, func).add_edge(START, name).compile()


# ---------------------------------------------------------------- add_node
def test_add_node_with_name_and_function_registers_it_under_that_name() -> None:
    compiled = Graph(State).add_node("bump", inc).add_edge(START, "bump").compile()

    assert list(compiled.nodes) == ["bump"]
    assert compiled.nodes["bump"].func is inc


def test_add_node_with_function_alone_names_the_node_after_the_function() -> None:
    compiled = Graph(State).add_node(inc).add_edge(START, "inc").compile()

    assert list(compiled.nodes) == ["inc"]
    assert compiled.run_sync({"n": 1}).state["n"] == 2


def test_nodes_keep_their_declaration_order_and_index() -> None:
    g = Graph(State)
    for name in ["c", "a", "b"]:
        g.add_node(name, lambda s: None).add_edge(START, name)
    compiled = g.compile()

    assert list(compiled.nodes) == ["c", "a", "b"]
    assert [compiled.nodes[n].index for n in ["c", "a", "b"]] == [0, 1, 2]


# ------------------------------------------------------ calling conventions
def sync_state(state: dict[str, Any]) -> dict[str, Any]:
    return {"log": ["sync_state"]}


def sync_state_ctx(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    return {"log": [f"sync_state_ctx:{ctx.node}"]}


async def async_state(state: dict[str, Any]) -> dict[str, Any]:
    return {"log": ["async_state"]}


async def async_state_ctx(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    return {"log": [f"async_state_ctx:{ctx.node}"]}


@pytest.mark.parametrize(
    ("func", "is_async", "takes_context", "expected_log"),
    [
        (sync_state, False, False, "sync_state"),
        (sync_state_ctx, False, True, "sync_state_ctx:node"),
        (async_state, True, False, "async_state"),
        (async_state_ctx, True, True, "async_state_ctx:node"),
    ],
    ids=["sync(state)", "sync(state,ctx)", "async(state)", "async(state,ctx)"],
)
async def test_sync_async_and_context_taking_nodes_are_detected_and_called_correctly(
    func: Any, is_async: bool, takes_context: bool, expected_log: str
) -> None:
    compiled = single_node_graph(func)

    shape = compiled.nodes["node"].shape
    assert (shape.is_async, shape.takes_context) == (is_async, takes_context)
    result = await compiled.run({"n": 0})
    assert result.status == "completed"
    assert result.state["log"] == [expected_log]


async def test_a_ctx_parameter_with_a_default_still_receives_the_context() -> None:
    seen: list[object] = []

    def node(state: dict[str, Any], ctx: NodeContext | None = None) -> None:
        seen.append(ctx)

    compiled = single_node_graph(node)

    assert compiled.nodes["node"].shape.takes_context is True
    (await compiled.run({"n": 0})).raise_for_status()
    assert isinstance(seen[0], NodeContext)


async def test_sync_nodes_run_in_a_worker_thread_not_on_the_event_loop_thread() -> None:
    threads: list[int] = []

    def node(state: dict[str, Any]) -> None:
        threads.append(threading.get_ident())

    (await single_node_graph(node).run({"n": 0})).raise_for_status()

    assert threads
    assert threads[0] != threading.get_ident()


async def test_functools_partial_of_a_sync_function_is_a_node() -> None:
    def add(state: dict[str, Any], *, amount: int) -> dict[str, Any]:
        return {"n": state["n"] + amount}

    compiled = single_node_graph(functools.partial(add, amount=10))

    shape = compiled.nodes["node"].shape
    assert (shape.is_async, shape.takes_context) == (False, False)
    assert (await compiled.run({"n": 1})).state["n"] == 11


async def test_functools_partial_of_an_async_context_taking_function_is_async() -> None:
    async def tag(state: dict[str, Any], ctx: NodeContext, *, label: str) -> dict[str, Any]:
        return {"log": [f"{label}@{ctx.node}"]}

    compiled = single_node_graph(functools.partial(tag, label="hi"))

    shape = compiled.nodes["node"].shape
    assert (shape.is_async, shape.takes_context) == (True, True)
    assert (await compiled.run({"n": 0})).state["log"] == ["hi@node"]


async def test_partial_that_binds_the_state_argument_away_leaves_a_one_arg_node() -> None:
    def node(prefix: str, state: dict[str, Any]) -> dict[str, Any]:
        return {"log": [f"{prefix}{state['n']}"]}

    compiled = single_node_graph(functools.partial(node, "n="))

    assert compiled.nodes["node"].shape.takes_context is False
    assert (await compiled.run({"n": 3})).state["log"] == ["n=3"]


class SyncCallable:
    def __init__(self, step: int) -> None:
        self.step = step

    def __call__(self, state: dict[str, Any]) -> dict[str, Any]:
        return {"n": state["n"] + self.step}


class AsyncCallableWithContext:
    async def __call__(self, state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        return {"log": [f"called as {ctx.node}"]}


async def test_a_callable_object_is_a_node() -> None:
    compiled = single_node_graph(SyncCallable(5))

    shape = compiled.nodes["node"].shape
    assert (shape.is_async, shape.takes_context) == (False, False)
    assert (await compiled.run({"n": 1})).state["n"] == 6


async def test_a_callable_object_with_async_call_taking_ctx_is_detected() -> None:
    compiled = single_node_graph(AsyncCallableWithContext(), name="obj")

    shape = compiled.nodes["obj"].shape
    assert (shape.is_async, shape.takes_context) == (True, True)
    assert (await compiled.run({"n": 0})).state["log"] == ["called as obj"]


async def test_a_bound_method_is_a_node() -> None:
    class Counter:
        def __init__(self) -> None:
            self.calls = 0

        async def step(self, state: dict[str, Any]) -> dict[str, Any]:
            self.calls += 1
            return {"n": state["n"] * 2}

    counter = Counter()
    compiled = Graph(State).add_node(counter.step).add_edge(START, "step").compile()

    assert compiled.nodes["step"].shape.is_async is True
    assert (await compiled.run({"n": 4})).state["n"] == 8
    assert counter.calls == 1


# ----------------------------------------------------------------- chaining
def test_every_declaration_method_returns_the_builder_for_chaining() -> None:
    g = Graph(State)

    assert g.add_node("a", inc) is g
    assert g.add_node("b", inc) is g
    assert g.add_edge(START, "a") is g
    assert g.add_edge("a", "b") is g
    assert g.add_conditional_edges("b", lambda s: END, [END]) is g
    assert g.set_entry_point("a") is g
    assert g.set_finish_point("b") is g


def test_a_chained_declaration_compiles_and_runs() -> None:
    compiled = (
        Graph(State)
        .add_node("first", inc)
        .add_node("second", inc)
        .set_entry_point("first")
        .add_edge("first", "second")
        .set_finish_point("second")
        .compile()
    )

    result = compiled.run_sync({"n": 0})
    assert result.state == {"n": 2, "log": ["inc", "inc"]}


# ------------------------------------------------------------------ compile
def test_compile_returns_a_compiled_graph() -> None:
    compiled = Graph(State).add_node("a", inc).add_edge(START, "a").compile()

    assert isinstance(compiled, CompiledGraph)


async def test_a_compiled_graph_runs_many_times_from_fresh_state() -> None:
    compiled = Graph(State).add_node("a", inc).add_edge(START, "a").compile()

    results = [await compiled.run({"n": i}) for i in range(5)]

    assert [r.state["n"] for r in results] == [1, 2, 3, 4, 5]
    # Each run starts from its own empty log: nothing leaks between runs.
    assert all(r.state["log"] == ["inc"] for r in results)
    assert len({r.run_id for r in results}) == 5


async def test_concurrent_runs_of_one_compiled_graph_are_independent() -> None:
    # Both runs must be inside "wait" at the same time before either goes on,
    # so the two runs really overlap.
    barrier = asyncio.Barrier(2)

    async def start(state: dict[str, Any]) -> dict[str, Any]:
        return {"log": [f"start{state['n']}"]}

    async def wait(state: dict[str, Any]) -> dict[str, Any]:
        await asyncio.wait_for(barrier.wait(), timeout=30)  # only hit on failure
        return {"n": state["n"] * 10, "log": [f"wait{state['n']}"]}

    async def finish(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        return {"log": [f"finish{state['n']}:{ctx.run_id}"]}

    compiled = (
        Graph(State)
        .add_node("start", start)
        .add_node("wait", wait)
        .add_node("finish", finish)
        .add_edge(START, "start")
        .add_edge("start", "wait")
        .add_edge("wait", "finish")
        .compile()
    )

    r1, r2 = await asyncio.gather(
        compiled.run({"n": 1}, run_id="one"), compiled.run({"n": 2}, run_id="two")
    )

    assert r1.status == r2.status == "completed"
    assert r1.state == {"n": 10, "log": ["start1", "wait1", "finish10:one"]}
    assert r2.state == {"n": 20, "log": ["start2", "wait2", "finish20:two"]}
    assert r1.outputs["wait"] == {"n": 10, "log": ["wait1"]}
    assert r2.outputs["wait"] == {"n": 20, "log": ["wait2"]}


def test_changing_the_builder_after_compile_does_not_change_the_compiled_graph() -> None:
    g = Graph(State).add_node("a", inc).add_edge(START, "a")
    compiled = g.compile()
    version = compiled.version

    g.add_node("b", inc).add_edge("a", "b")

    assert list(compiled.nodes) == ["a"]
    assert compiled.version == version
    assert compiled.run_sync({"n": 0}).state["n"] == 1
    assert g.compile().run_sync({"n": 0}).state["n"] == 2


# ------------------------------------------------------------ name, version
def build_chain(schema: type[Any] = State, nodes: tuple[str, ...] = ("a", "b")) -> Graph:
    g = Graph(schema)
    for name in nodes:
        g.add_node(name, lambda s: None)
    g.add_edge(START, nodes[0])
    for src, dst in itertools.pairwise(nodes):
        g.add_edge(src, dst)
    return g


def test_default_version_is_stable_for_the_same_structure() -> None:
    # Two separate builds with fresh function objects: the shape is the same.
    assert build_chain().compile().version == build_chain().compile().version
    compiled = build_chain().compile()
    assert compiled.version == compiled.version
    assert isinstance(compiled.version, str)
    assert compiled.version


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param(lambda: build_chain(nodes=("a", "b", "c")), id="extra node"),
        pytest.param(lambda: build_chain(nodes=("a", "c")), id="renamed node"),
        pytest.param(lambda: build_chain().add_edge("a", END), id="extra edge"),
        pytest.param(
            lambda: build_chain().add_conditional_edges("b", lambda s: END, [END]),
            id="extra conditional edge",
        ),
        pytest.param(lambda: build_chain(schema=Other), id="state keys"),
    ],
)
def test_default_version_changes_when_the_structure_changes(changed: Any) -> None:
    assert changed().compile().version != build_chain().compile().version


def test_different_router_targets_give_different_versions() -> None:
    one = build_chain().add_conditional_edges("b", lambda s: END, [END]).compile()
    two = build_chain().add_conditional_edges("b", lambda s: END, ["a", END]).compile()

    assert one.version != two.version


def test_explicit_name_and_version_are_used() -> None:
    compiled = build_chain().compile(name="support-bot", version="2024-06-01")

    assert compiled.name == "support-bot"
    assert compiled.version == "2024-06-01"
    result = compiled.run_sync({"n": 0})
    assert (result.graph_name, result.graph_version) == ("support-bot", "2024-06-01")


def test_graph_name_comes_from_compile_then_the_builder_then_a_default() -> None:
    assert build_chain().compile().name == "graph"

    named = Graph(State, name="builder-name").add_node("a", inc).add_edge(START, "a")
    assert named.compile().name == "builder-name"
    assert named.compile(name="override").name == "override"


def test_name_does_not_change_the_default_version() -> None:
    assert build_chain().compile(name="x").version == build_chain().compile(name="y").version


def test_graph_definition_error_names_the_graph() -> None:
    g = Graph(State, name="broken").add_node("a", inc)  # no entry point

    with pytest.raises(GraphDefinitionError) as info:
        g.compile()

    assert info.value.graph == "broken"
    assert "'broken'" in str(info.value)


def test_router_with_literal_annotation_runs() -> None:
    def route(state: dict[str, Any]) -> Literal["big", "small"]:
        return "big" if state["n"] > 5 else "small"

    g = (
        Graph(State)
        .add_node("check", lambda s: None)
        .add_node("big", lambda s: {"log": ["big"]})
        .add_node("small", lambda s: {"log": ["small"]})
        .add_edge(START, "check")
        .add_conditional_edges("check", route)
    )
    compiled = g.compile()

    assert compiled.run_sync({"n": 9}).state["log"] == ["big"]
    assert compiled.run_sync({"n": 1}).state["log"] == ["small"]
