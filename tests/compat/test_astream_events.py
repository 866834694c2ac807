"""Spec: ``astream_events`` (LangChain's "v2" and "v1" event schemas) on compat graphs.

The events describe the one run the loop executes: the graph's chain run
(start, one stream event per chunk ``astream`` yields, end with the output
state) and, nested in it, each node task's run (start with its input, its
output as one streamed chunk, end).
"""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from flowcore.compat.langgraph import END, START, InMemorySaver, StateGraph

pytest.importorskip("langchain_core")


class State(TypedDict):
    value: int


def _incr(state: State) -> State:
    return {"value": state["value"] + 1}


def _graph(**compile_kwargs: Any) -> Any:
    return (
        StateGraph(State)
        .add_node("a", _incr)
        .add_node("b", _incr)
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .compile(**compile_kwargs)
    )


async def _events(graph: Any, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    return [event async for event in graph.astream_events(*args, **kwargs)]


async def test_v2_events_follow_the_run() -> None:
    events = await _events(_graph(), {"value": 1}, version="v2")
    assert [(e["event"], e["name"]) for e in events] == [
        ("on_chain_start", "LangGraph"),
        ("on_chain_start", "a"),
        ("on_chain_stream", "a"),
        ("on_chain_end", "a"),
        ("on_chain_stream", "LangGraph"),
        ("on_chain_start", "b"),
        ("on_chain_stream", "b"),
        ("on_chain_end", "b"),
        ("on_chain_stream", "LangGraph"),
        ("on_chain_end", "LangGraph"),
    ]
    root_id = events[0]["run_id"]
    assert events[0]["data"] == {"input": {"value": 1}}
    assert events[-1]["data"]["output"] == {"value": 3}
    assert events[4]["data"] == {"chunk": {"a": {"value": 2}}}
    node_start = events[1]
    assert node_start["parent_ids"] == [root_id]
    assert node_start["tags"] == ["graph:step:1"]
    assert node_start["metadata"]["langgraph_node"] == "a"
    assert events[3]["data"]["output"] == {"value": 2}


async def test_run_id_stream_mode_and_thread_metadata() -> None:
    run_id = "00000000-0000-0000-0000-000000000007"
    config = {"configurable": {"thread_id": "t1"}, "run_id": run_id}
    events = await _events(
        _graph(checkpointer=InMemorySaver()), {"value": 1}, config, stream_mode="values"
    )
    roots = [e for e in events if e["name"] == "LangGraph"]
    assert {e["run_id"] for e in roots} == {run_id}
    assert [e["data"]["chunk"] for e in roots if e["event"] == "on_chain_stream"] == [
        {"value": 1},
        {"value": 2},
        {"value": 3},
    ]
    assert roots[0]["metadata"]["thread_id"] == "t1"
    assert roots[0]["metadata"]["ls_integration"] == "langgraph"


async def test_filters_and_errors() -> None:
    names = {e["name"] for e in await _events(_graph(), {"value": 1}, include_names=["b"])}
    assert names == {"b"}

    def fail(state: State) -> State:
        raise ValueError("bad node")

    failing = StateGraph(State).add_node("f", fail).add_edge(START, "f").compile()
    with pytest.raises(ValueError, match="bad node"):
        await _events(failing, {"value": 1})


@pytest.mark.filterwarnings("ignore:astream_events version='v1' is deprecated")
async def test_v1_schema_and_v3_is_the_stream_protocol() -> None:
    events = await _events(_graph(), {"value": 1}, version="v1")
    assert events[0]["event"] == "on_chain_start"
    assert events[-1]["event"] == "on_chain_end"
    # v1 builds the root's output from the chunks it streamed: the last update.
    assert events[-1]["data"]["output"] == {"b": {"value": 3}}
    # version="v3" is the v3 stream protocol: an awaitable run stream, not callback events.
    run = await _graph().astream_events({"value": 1}, version="v3")
    assert await run.output() == {"value": 3}


async def test_callbacks_bound_with_config_are_kept() -> None:
    base = pytest.importorskip("langchain_core.callbacks")

    class Starts(base.BaseCallbackHandler):  # type: ignore[misc]
        def __init__(self) -> None:
            self.names: list[str] = []

        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            self.names.append(kwargs.get("name", ""))

    handler = Starts()
    graph = _graph().with_config({"callbacks": [handler]})
    await _events(graph, {"value": 1})
    assert handler.names == ["LangGraph", "a", "b"]


async def test_a_graph_composes_into_a_langchain_chain() -> None:
    runnables = pytest.importorskip("langchain_core.runnables")
    chain = _graph() | runnables.RunnableLambda(lambda out: out["value"] * 10)
    assert await chain.ainvoke({"value": 1}) == 30
    assert chain.invoke({"value": 1}) == 30
    # A mapping on the left becomes LangChain's parallel step feeding the graph.
    fed = {"value": runnables.RunnableLambda(lambda n: n + 1)} | _graph()
    assert fed.invoke(5) == {"value": 8}

    ends = [
        e
        async for e in (_graph() | runnables.RunnablePassthrough()).astream_events(
            {"value": 1}, version="v2"
        )
        if e["event"] == "on_chain_end" and e["name"] == "LangGraph"
    ]
    # The graph's run nests under the chain's and ends with the output state.
    assert [(e["data"]["output"], len(e["parent_ids"])) for e in ends] == [({"value": 3}, 1)]
