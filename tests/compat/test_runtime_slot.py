"""Spec: a runtime a caller seeds in the config, and LangSmith's run tree in a node.

* An object under ``configurable["__pregel_runtime"]`` (a server's runtime that
  is not a ``Runtime``) gives the run its store, and its context when the call
  passes none; a subgraph's nodes see the store of the run that calls it.
* With LangSmith tracing on and no callbacks given, ``get_current_run_tree()``
  in a node is the node's run (LangChain's tracer reports it).
"""

from __future__ import annotations

from typing import Any, TypedDict
from unittest.mock import patch

import pytest

from flowcore.compat.langgraph import START, Runtime, StateGraph


class State(TypedDict, total=False):
    text: str


class _Seeded:
    def __init__(self, context: Any, store: Any) -> None:
        self.context = context
        self.store = store


def _graph(seen: dict[str, Any]) -> Any:
    def node(state: State, runtime: Runtime[Any]) -> State:
        seen["context"], seen["store"] = runtime.context, runtime.store
        return {"text": "done"}

    return StateGraph(State).add_node("node", node).add_edge(START, "node").compile()


def test_seeded_runtime_gives_store_and_default_context() -> None:
    seen: dict[str, Any] = {}
    store = object()
    slot = {"configurable": {"__pregel_runtime": _Seeded({"who": "server"}, store)}}
    assert _graph(seen).invoke({"text": "x"}, slot) == {"text": "done"}
    assert seen == {"context": {"who": "server"}, "store": store}
    _graph(seen).invoke({"text": "x"}, slot, context={"who": "call"})
    assert seen["context"] == {"who": "call"}


def test_subgraph_sees_callers_store() -> None:
    seen: dict[str, Any] = {}
    store = object()
    parent = StateGraph(State).add_node("sub", _graph(seen)).add_edge(START, "sub")
    parent.compile(store=store).invoke({"text": "x"})  # type: ignore[arg-type]
    assert seen["store"] is store


def test_langsmith_run_tree_in_node() -> None:
    langsmith = pytest.importorskip("langsmith")
    pytest.importorskip("langchain_core.tracers.langchain")
    from langsmith import get_current_run_tree

    seen: dict[str, Any] = {}

    def node(state: State) -> State:
        tree = get_current_run_tree()
        seen["name"] = None if tree is None else tree.name
        return {}

    app = StateGraph(State).add_node("node", node).add_edge(START, "node").compile()
    with (
        patch("langsmith.client.Client", spec=langsmith.Client) as client,
        patch("langchain_core.tracers.langchain.get_client") as get_client,
    ):
        get_client.return_value = client
        with langsmith.tracing_context(enabled=True):
            app.invoke({"text": "x"})
    assert seen["name"] == "node"
