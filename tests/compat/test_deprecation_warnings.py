"""Spec: deprecated LangGraph spellings keep working and warn with LangGraph's warning classes."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import pytest
from typing_extensions import TypedDict

from flowcore.compat.langgraph import (
    END,
    START,
    GraphInterrupt,
    Interrupt,
    LangGraphDeprecatedSinceV05,
    LangGraphDeprecatedSinceV10,
    LangGraphDeprecatedSinceV11,
    LangGraphDeprecationWarning,
    LastValue,
    MessageGraph,
    NodeBuilder,
    NodeInterrupt,
    Pregel,
    RetryPolicy,
    StateGraph,
    entrypoint,
    task,
)
from flowcore.compat.langgraph._stream_v3 import GraphOutput

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


class State(TypedDict, total=False):
    n: int
    durability: str


def test_warning_classes_name_their_versions() -> None:
    w = LangGraphDeprecatedSinceV11("`old` is gone.")
    assert isinstance(w, LangGraphDeprecationWarning)
    assert isinstance(w, DeprecationWarning)
    assert (w.since, w.expected_removal) == ((1, 1), (3, 0))
    assert str(w) == "`old` is gone. Deprecated in LangGraph V1.1 to be removed in V3.0."
    assert LangGraphDeprecatedSinceV05("x").expected_removal == (2, 0)


def test_old_argument_names_warn_and_still_apply() -> None:
    with pytest.warns(LangGraphDeprecatedSinceV05, match="`input` is deprecated"):
        graph = StateGraph(State, input=State)
    assert graph.input_schema is State
    with pytest.warns(LangGraphDeprecatedSinceV10, match="`config_schema` is deprecated"):
        graph = StateGraph(State, config_schema=State)
    assert graph.context_schema is State
    policy = RetryPolicy(max_attempts=2)
    with pytest.warns(LangGraphDeprecatedSinceV05, match="use `retry_policy`"):
        graph.add_node("a", lambda s: s, retry=policy)
    assert graph.nodes["a"].retry is policy


def test_task_and_entrypoint_retry_warn() -> None:
    with pytest.warns(LangGraphDeprecatedSinceV05, match="`retry` is deprecated"):

        @task(retry=RetryPolicy())
        def double(n: int) -> int:
            return n * 2

    with pytest.warns(LangGraphDeprecatedSinceV10, match="`config_schema` is deprecated"):

        @entrypoint(config_schema=State)
        def main(n: int) -> int:
            return n

    assert main.context_schema is State


def test_config_schema_methods_warn_and_describe_the_context() -> None:
    graph = StateGraph(State, State)
    graph.add_node("a", lambda s: s).add_edge(START, "a").add_edge("a", END)
    app = graph.compile()
    with pytest.warns(LangGraphDeprecatedSinceV10, match="get_context_jsonschema"):
        model = app.config_schema()
    assert "configurable" in model.model_fields
    with pytest.warns(LangGraphDeprecatedSinceV10, match="`get_config_jsonschema` is deprecated"):
        schema = app.get_config_jsonschema()
    assert "configurable" in schema["properties"]
    with pytest.warns(LangGraphDeprecatedSinceV10):
        model = app.config_schema(include=["tags", "recursion_limit"])
    assert set(model.model_fields) == {"configurable", "tags", "recursion_limit"}


def test_pregel_config_type_becomes_the_context_schema() -> None:
    node = NodeBuilder().subscribe_only("input").do(lambda x: x + 1).write_to("output")
    with pytest.warns(LangGraphDeprecatedSinceV10, match="`config_type` is deprecated"):
        app = Pregel(
            nodes={"one": node},
            channels={"input": LastValue(int), "output": LastValue(int)},
            input_channels="input",
            output_channels="output",
            config_type=State,
        )
    assert app.context_schema is State
    assert app.invoke(1) == 2


def test_checkpoint_during_picks_the_durability_a_node_sees() -> None:
    def node(state: State, config: RunnableConfig) -> State:
        return {"durability": str(config["configurable"]["__pregel_durability"])}  # type: ignore[index]

    graph = StateGraph(State)
    graph.add_node("a", node).add_edge(START, "a").add_edge("a", END)
    app = graph.compile()
    with pytest.warns(LangGraphDeprecatedSinceV10, match="`checkpoint_during` is deprecated"):
        assert app.invoke({}, checkpoint_during=False)["durability"] == "exit"
    with pytest.warns(LangGraphDeprecatedSinceV10, match="`checkpoint_during` is deprecated"):
        chunks = list(app.stream({}, checkpoint_during=True))
    assert chunks == [{"a": {"durability": "async"}}]
    assert app.invoke({}, durability="sync")["durability"] == "sync"


def test_old_names_warn() -> None:
    with pytest.warns(LangGraphDeprecatedSinceV10, match="`interrupt_id` is deprecated"):
        assert Interrupt("q", id="abc").interrupt_id == "abc"
    with pytest.warns(LangGraphDeprecatedSinceV10, match="NodeInterrupt is deprecated"):
        pause = NodeInterrupt("q", id="i1")
    assert isinstance(pause, GraphInterrupt)
    assert pause.interrupts == (Interrupt("q", id="i1"),)
    with pytest.warns(LangGraphDeprecatedSinceV10, match="MessageGraph is deprecated"):
        MessageGraph()


def test_graph_output_dict_access_warns() -> None:
    out = GraphOutput(value={"n": 1})
    with pytest.warns(LangGraphDeprecatedSinceV11, match=r"result\[key\]"):
        assert out["n"] == 1
    with pytest.warns(LangGraphDeprecatedSinceV11, match="key in result"):
        assert "n" in out
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert out.value == {"n": 1}  # the current spelling never warns


def test_message_graph_merges_messages() -> None:
    with pytest.warns(LangGraphDeprecatedSinceV10):
        graph = MessageGraph()
    graph.add_node("reply", lambda msgs: [("ai", f"{len(msgs)} seen")])
    graph.set_entry_point("reply").set_finish_point("reply")
    out = graph.compile().invoke([("user", "hi")])
    assert [m.content for m in out] == ["hi", "1 seen"]
