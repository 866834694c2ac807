"""Spec: ``astream_log`` yields LangChain's run-log patches of a compat graph's run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from typing_extensions import TypedDict

from flowcore.compat.langgraph import END, START, StateGraph

pytest.importorskip("langchain_core")


class State(TypedDict):
    n: int


def _app() -> Any:
    graph = StateGraph(State)
    graph.add_node("double", lambda s: {"n": s["n"] * 2})
    graph.add_node("inc", lambda s: {"n": s["n"] + 1})
    graph.add_edge(START, "double").add_edge("double", "inc").add_edge("inc", END)
    return graph.compile()


async def _patches(app: Any, **kwargs: Any) -> list[Any]:
    return [p async for p in app.astream_log({"n": 3}, **kwargs)]


def test_patches_log_each_node_and_the_final_output() -> None:
    with pytest.warns(DeprecationWarning, match="astream_log is deprecated"):
        patches = asyncio.run(_patches(_app()))
    ops = [op for patch in patches for op in patch.ops]
    paths = {op["path"] for op in ops}
    assert "/logs/double/final_output" in paths
    assert "/logs/inc/final_output" in paths
    finals = [op["value"] for op in ops if op["path"] == "/logs/inc/final_output"]
    assert finals == [{"n": 7}]
    # The patches add up to the whole run log: the graph's chunks (its "updates"), the last
    # of them as its output, and one entry per node run.
    log = patches[0]
    for patch in patches[1:]:
        log = log + patch
    assert log.state["streamed_output"] == [{"double": {"n": 6}}, {"inc": {"n": 7}}]
    assert log.state["final_output"] == {"inc": {"n": 7}}
    assert sorted(log.state["logs"]) == ["double", "inc"]


def test_filters_keep_only_the_named_runs() -> None:
    with pytest.warns(DeprecationWarning, match="astream_log is deprecated"):
        patches = asyncio.run(_patches(_app(), include_names=["inc"]))
    logged = {op["path"].split("/")[2] for p in patches for op in p.ops if "/logs/" in op["path"]}
    assert logged == {"inc"}
