"""Spec: which node actions may carry a timeout, and what restarts an idle timeout.

Only async work can be stopped in-process, so a timeout on a node whose work is
sync (a sync function, a sync ``RunnableLambda``, a chain or map with a sync
step, a ``NodeBuilder`` sequence with a sync step) is refused where the graph is
built. Under ``refresh_on="auto"`` LangChain events of the node's runs (a chat
model's streamed tokens) count as progress.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    END,
    START,
    EphemeralValue,
    LastValue,
    NodeBuilder,
    Pregel,
    StateGraph,
    TimeoutPolicy,
)
from flowcore.compat.langgraph._async_check import has_native_async
from flowcore.compat.langgraph._savers import RunnableConfig

runnables = pytest.importorskip("langchain_core.runnables")


class State(TypedDict):
    x: int


def _sync(value: Any) -> Any:
    return value


async def _async(value: Any) -> Any:
    return value


def test_plain_functions() -> None:
    assert has_native_async(_async)
    assert not has_native_async(_sync)


def test_langchain_runnables() -> None:
    lam = runnables.RunnableLambda
    assert has_native_async(lam(_async))
    assert not has_native_async(lam(_sync))
    assert not has_native_async(lam(_sync).with_config(tags=["t"]))
    assert has_native_async(lam(_async).with_config(tags=["t"]))
    assert not has_native_async(runnables.RunnableParallel(a=lam(_sync), b=lam(_async)))
    assert has_native_async(lam(_async) | lam(_async))
    assert not has_native_async(lam(_async) | lam(_sync))


def _pregel(step: Any) -> Pregel:
    return Pregel(
        nodes={
            "n": NodeBuilder()
            .subscribe_only("input")
            .do(step)
            .set_timeout(TimeoutPolicy(idle_timeout=1))
            .write_to("output")
        },
        channels={"input": EphemeralValue(int), "output": LastValue(int)},
        input_channels="input",
        output_channels="output",
    )


def test_pregel_refuses_a_sync_step_with_a_timeout() -> None:
    with pytest.raises(ValueError, match="only supported for async nodes"):
        _pregel(_sync)
    with pytest.raises(ValueError, match="only supported for async nodes"):
        _pregel(runnables.RunnableLambda(_sync).with_config(tags=["t"]))
    assert asyncio.run(_pregel(runnables.RunnableLambda(_async)).ainvoke(3)) == 3


def test_state_graph_refuses_a_sync_runnable_node_with_a_timeout() -> None:
    builder = StateGraph(State)
    builder.add_node("n", runnables.RunnableLambda(_sync), timeout=TimeoutPolicy(run_timeout=1))
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    with pytest.raises(ValueError, match="only supported for async nodes"):
        builder.compile()


def test_langchain_events_restart_the_idle_clock() -> None:
    manager_mod = pytest.importorskip("langchain_core.callbacks.manager")

    async def node(state: State, config: RunnableConfig) -> State:
        # Events 0.3 s apart keep a 0.5 s idle clock from running out over 1.2 s.
        manager = manager_mod.AsyncCallbackManager.configure(
            inheritable_callbacks=config.get("callbacks")
        )
        for _ in range(3):
            await asyncio.sleep(0.3)
            await manager.on_custom_event("tick", {}, run_id=uuid.uuid4())
        await asyncio.sleep(0.3)
        return {"x": state["x"] + 1}

    builder = StateGraph(State)
    builder.add_node("n", node, timeout=TimeoutPolicy(idle_timeout=0.5))
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    assert asyncio.run(builder.compile().ainvoke({"x": 1})) == {"x": 2}
