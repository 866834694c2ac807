"""Spec: usage meters count every model call charged in their scope and pass it up.

The runtime opens a meter per run and per node run and makes the node's
current while the node's code runs, in its tasks and worker threads too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, TypedDict

from flowcore import START, Graph
from flowcore.llm import Usage
from flowcore.runtime import UsageMeter, charge_usage, current_meter, metering


class State(TypedDict, total=False):
    done: bool


def test_charges_flow_up_to_every_parent() -> None:
    run = UsageMeter()
    node = UsageMeter(parent=run)
    other = UsageMeter(parent=run)

    node.charge(Usage(10, 12, cost_usd=0.5))
    other.charge(Usage(1, 2, cost_usd=0.25))

    assert (node.calls, node.usage) == (1, Usage(10, 12, 0.5))
    assert (run.calls, run.usage) == (2, Usage(11, 14, 0.75))


def test_a_cost_is_known_only_when_every_calls_cost_is() -> None:
    meter = UsageMeter()
    meter.charge(Usage(1, 1, cost_usd=0.5))
    meter.charge(Usage(1, 1))

    assert meter.usage == Usage(2, 2, None)
    assert UsageMeter().usage.cost_usd is None  # no call: nothing is known


def test_outside_any_meter_a_charge_goes_nowhere() -> None:
    assert current_meter() is None
    charge_usage(Usage(5, 5))  # no error, nothing to charge

    with metering(UsageMeter()) as meter:
        charge_usage(Usage(5, 5))
    assert meter.calls == 1
    assert current_meter() is None


async def test_each_node_run_is_charged_what_its_tasks_and_threads_charged() -> None:
    def sync_node(state: Mapping[str, Any]) -> dict[str, Any]:
        charge_usage(Usage(3, 1))  # runs in a worker thread
        return {}

    async def async_node(state: Mapping[str, Any]) -> dict[str, Any]:
        async def call() -> None:
            charge_usage(Usage(10, 2))

        async with asyncio.TaskGroup() as group:
            group.create_task(call())
            group.create_task(call())
        return {"done": True}

    graph = Graph(State, name="metered")
    graph.add_node("sync", sync_node)
    graph.add_node("tasks", async_node)
    graph.add_edge(START, "sync").add_edge(START, "tasks")

    result = await graph.compile().run({})

    by_node = {
        r.node: (r.usage.input_tokens, r.usage.output_tokens, r.model_calls)
        for r in result.node_runs
    }
    assert by_node == {"sync": (3, 1, 1), "tasks": (20, 4, 2)}
    assert (result.usage.input_tokens, result.usage.output_tokens, result.model_calls) == (23, 5, 3)


async def test_a_failed_node_keeps_what_it_was_charged() -> None:
    async def spend_then_fail(state: Mapping[str, Any]) -> dict[str, Any]:
        charge_usage(Usage(10, 12))
        raise RuntimeError("boom")

    graph = Graph(State, name="fails")
    graph.add_node("spend", spend_then_fail)
    graph.add_edge(START, "spend")

    result = await graph.compile().run({})

    (run,) = result.node_runs
    assert (run.status, run.usage.input_tokens, run.model_calls) == ("failed", 10, 1)
    assert result.usage.output_tokens == 12
