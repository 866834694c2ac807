"""Spec: ``max_concurrency`` caps how many node bodies run at once; run options
are validated before anything runs.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any, TypedDict

import pytest

from flowcore import START, FlowcoreError, Graph, InvalidInputError, append

from .helpers import MODES


class State(TypedDict):
    log: Annotated[list[str], append]


class Gauge:
    """Ten parallel nodes that track how many of them are inside their body at once."""

    WIDTH = 10

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0
        self.trace: list[str] = []

    def node(self, name: str) -> Any:
        async def body(state: Any) -> dict[str, Any]:
            self.current += 1
            self.peak = max(self.peak, self.current)
            self.trace.append(f"+{name}")
            for _ in range(5):  # yield so that siblings get a chance to enter
                await asyncio.sleep(0)
            self.trace.append(f"-{name}")
            self.current -= 1
            return {"log": [name]}

        return body

    def graph(self) -> Graph:
        graph = Graph(State)
        names = [f"n{i}" for i in range(self.WIDTH)]
        for name in names:
            graph.add_node(name, self.node(name)).add_edge(START, name)
        graph.add_node("sink", lambda s: {"log": ["sink"]})
        graph.add_edge(names, "sink")
        return graph


@pytest.mark.parametrize("mode", MODES)
async def test_without_a_cap_the_whole_batch_runs_at_once(mode: str) -> None:
    gauge = Gauge()

    result = await gauge.graph().compile().run({}, mode=mode)  # type: ignore[arg-type]

    assert result.status == "completed", result.errors
    assert gauge.peak == Gauge.WIDTH


@pytest.mark.parametrize("limit", [2, 3, 7])
@pytest.mark.parametrize("mode", MODES)
async def test_max_concurrency_caps_simultaneous_node_bodies(mode: str, limit: int) -> None:
    gauge = Gauge()

    result = (
        await gauge.graph()
        .compile()
        .run(
            {},
            mode=mode,  # type: ignore[arg-type]
            max_concurrency=limit,
        )
    )

    assert result.status == "completed", result.errors
    assert gauge.peak == limit
    # Every node still ran, and writes stay in declaration order.
    assert result.state["log"] == [f"n{i}" for i in range(Gauge.WIDTH)] + ["sink"]


@pytest.mark.parametrize("mode", MODES)
async def test_max_concurrency_one_runs_nodes_one_after_another(mode: str) -> None:
    gauge = Gauge()

    result = (
        await gauge.graph()
        .compile()
        .run(
            {},
            mode=mode,  # type: ignore[arg-type]
            max_concurrency=1,
        )
    )

    assert result.status == "completed", result.errors
    assert gauge.peak == 1
    # Strictly alternating enter/leave of the same node.
    pairs = list(zip(gauge.trace[::2], gauge.trace[1::2], strict=True))
    assert all(enter[1:] == leave[1:] for enter, leave in pairs)
    assert [enter[0] + leave[0] for enter, leave in pairs] == ["+-"] * Gauge.WIDTH


async def test_max_concurrency_applies_to_sync_nodes_too() -> None:
    lock = threading.Lock()
    counters = {"current": 0, "peak": 0}

    def make(name: str) -> Any:
        def body(state: Any) -> dict[str, Any]:
            with lock:
                counters["current"] += 1
                counters["peak"] = max(counters["peak"], counters["current"])
            threading.Event().wait(0.005)
            with lock:
                counters["current"] -= 1
            return {"log": [name]}

        return body

    graph = Graph(State)
    for i in range(6):
        graph.add_node(f"s{i}", make(f"s{i}")).add_edge(START, f"s{i}")

    result = await graph.compile().run({}, max_concurrency=2)

    assert result.status == "completed", result.errors
    assert counters["peak"] <= 2


INVALID_OPTIONS = [
    pytest.param({"max_concurrency": 0}, "max_concurrency", id="max_concurrency=0"),
    pytest.param({"max_concurrency": -3}, "max_concurrency", id="max_concurrency<0"),
    pytest.param({"mode": "parallel"}, "mode", id="unknown-mode"),
    pytest.param({"on_error": "ignore"}, "on_error", id="unknown-on_error"),
    pytest.param({"recursion_limit": 0}, "recursion_limit", id="recursion_limit=0"),
    pytest.param({"recursion_limit": -1}, "recursion_limit", id="recursion_limit<0"),
]

WRONG_TYPE_OPTIONS = [
    # Values of the wrong type (e.g. read from a config file) are invalid too,
    # not a TypeError from deep inside, nor silently accepted.
    pytest.param({"max_concurrency": "4"}, "max_concurrency", id="max_concurrency-str"),
    pytest.param({"max_concurrency": 2.5}, "max_concurrency", id="max_concurrency-float"),
    pytest.param({"recursion_limit": "5"}, "recursion_limit", id="recursion_limit-str"),
]


def tripwire_graph(ran: list[str]) -> Graph:
    def node(state: Any) -> None:
        ran.append("node")

    return Graph(State).add_node("node", node).add_edge(START, "node")


@pytest.mark.parametrize(("options", "named"), INVALID_OPTIONS + WRONG_TYPE_OPTIONS)
async def test_invalid_run_options_raise_before_anything_runs(
    options: dict[str, Any], named: str
) -> None:
    ran: list[str] = []
    compiled = tripwire_graph(ran).compile()

    with pytest.raises(InvalidInputError, match=named) as info:
        await compiled.run({}, **options)

    assert isinstance(info.value, FlowcoreError)
    assert isinstance(info.value, ValueError)
    assert ran == []


@pytest.mark.parametrize(("options", "named"), INVALID_OPTIONS)
async def test_invalid_stream_options_raise_before_anything_runs(
    options: dict[str, Any], named: str
) -> None:
    ran: list[str] = []
    compiled = tripwire_graph(ran).compile()

    with pytest.raises(InvalidInputError, match=named):
        compiled.stream({}, **options)

    assert ran == []
