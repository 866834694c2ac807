"""Spec: ``update_state(as_node=...)`` runs that node's routers as a run would.

An async router is awaited and a router asking for ``config`` gets it, so
the next step is the one the router picks.
"""

from __future__ import annotations

from typing import Any, TypedDict

from flowcore.compat.langgraph import END, START, InMemorySaver, StateGraph


class State(TypedDict):
    n: int


async def _async_router(state: State) -> str:
    return "big" if state["n"] > 10 else "small"


def _config_router(state: State, config: Any) -> str:
    return config["configurable"]["route"]


def _graph(router: Any) -> Any:
    builder = StateGraph(State)
    for name in ("a", "big", "small"):
        builder.add_node(name, lambda s: {})
    builder.add_edge(START, "a").add_conditional_edges("a", router, ["big", "small"])
    builder.add_edge("big", END).add_edge("small", END)
    return builder.compile(checkpointer=InMemorySaver(), interrupt_before=["big", "small"])


async def test_an_async_router_is_awaited_by_aupdate_state() -> None:
    graph = _graph(_async_router)
    config = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"n": 1}, config)
    assert (await graph.aget_state(config)).next == ("small",)
    await graph.aupdate_state(config, {"n": 50}, as_node="a")
    assert (await graph.aget_state(config)).next == ("big",)


def test_a_router_asking_for_config_gets_it_in_update_state() -> None:
    graph = _graph(_config_router)
    config = {"configurable": {"thread_id": "t", "route": "small"}}
    graph.invoke({"n": 1}, config)
    graph.update_state({"configurable": {"thread_id": "t", "route": "big"}}, {"n": 2}, as_node="a")
    assert graph.get_state(config).next == ("big",)
