"""Spec: LangChain models and messages in prebuilt agents, streams, schemas and drawings.

- ``create_react_agent`` takes a LangChain chat model: the agent's tools are bound
  to it, it is called with the conversation, and its tool calls run in ``tools``;
- a model already bound to other tools than the agent's is refused;
- messages a node returns, directly or in a ``Command``, stream with the node run's
  metadata (``ls_integration``, ``langgraph_step``, ``langgraph_path``...);
- a dict of runnables as a node runs as LangChain's ``RunnableParallel``;
- a root state's JSON schema is the value's own schema;
- ``ToolNode`` is drawn under LangGraph's public class path.
"""

from __future__ import annotations

import json
import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    START,
    Command,
    MessagesState,
    StateGraph,
    ToolNode,
    create_react_agent,
)

fake = pytest.importorskip("langchain_core.language_models.fake_chat_models")
lc_messages = pytest.importorskip("langchain_core.messages")
lc_tools = pytest.importorskip("langchain_core.tools")
lc_runnables = pytest.importorskip("langchain_core.runnables")


class _ToolModel(fake.FakeMessagesListChatModel):
    bound: list[Any] = []  # noqa: RUF012 - a pydantic field, copied per instance

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.bound = list(tools)
        return self


@lc_tools.tool
def lookup(query: str) -> str:
    """Look a query up."""
    return f"found {query}"


def _model() -> _ToolModel:
    call = {"id": "c1", "name": "lookup", "args": {"query": "ducks"}}
    return _ToolModel(
        responses=[
            lc_messages.AIMessage(content="", tool_calls=[call]),
            lc_messages.AIMessage(content="ducks are found"),
        ]
    )


def test_react_agent_runs_a_langchain_chat_model() -> None:
    model = _model()
    agent = create_react_agent(model, [lookup])
    assert [t.name for t in model.bound] == ["lookup"]
    result = agent.invoke({"messages": [("user", "find ducks")]})
    kinds = [type(m).__name__ for m in result["messages"]]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert result["messages"][2].content == "found ducks"
    assert result["messages"][-1].content == "ducks are found"


def test_react_agent_refuses_a_model_bound_to_other_tools() -> None:
    model = fake.FakeMessagesListChatModel(responses=[]).bind(
        tools=[{"type": "function", "function": {"name": "other"}}]
    )
    with pytest.raises(ValueError, match="Missing tools"):
        create_react_agent(model, [lookup])


def test_node_messages_stream_with_the_node_runs_metadata() -> None:
    def first(state: Any) -> Any:
        return {"messages": lc_messages.HumanMessage(content="a")}

    def second(state: Any) -> Any:
        return Command(update={"messages": lc_messages.HumanMessage(content="b")})

    graph = StateGraph(MessagesState).add_sequence([first, second]).add_edge(START, "first")
    chunks = list(
        graph.compile().stream(
            {"messages": []}, {"configurable": {"thread_id": "x"}}, stream_mode="messages"
        )
    )
    assert [m.content for m, _ in chunks] == ["a", "b"]
    meta = chunks[1][1]
    assert meta["ls_integration"] == "langgraph"
    assert meta["thread_id"] == "x"
    assert (meta["langgraph_step"], meta["langgraph_node"]) == (2, "second")
    assert meta["langgraph_path"] == ("__pregel_pull", "second")
    assert meta["langgraph_checkpoint_ns"].startswith("second:")


class Count(TypedDict):
    n: int


def test_dict_node_is_a_runnable_parallel() -> None:
    pick = lc_runnables.RunnableLambda(lambda state: state["n"] * 2)
    graph = StateGraph(Count)
    graph.add_node("double", {"n": pick})
    graph.add_edge(START, "double")
    assert graph.compile().invoke({"n": 3}) == {"n": 6}


def test_root_state_json_schema_is_the_values_own() -> None:
    builder: StateGraph[Any] = StateGraph(Annotated[list[int], operator.add])
    builder.add_node("a", lambda items: [1])
    builder.add_edge(START, "a")
    app = builder.compile()
    assert app.get_input_jsonschema() == {
        "default": None,
        "items": {"type": "integer"},
        "title": "LangGraphInput",
        "type": "array",
    }


def test_tool_node_is_drawn_under_langgraphs_class_path() -> None:
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([lookup]))
    graph.add_edge(START, "tools")
    drawn = json.loads(json.dumps(graph.compile().get_graph().to_json()))
    node = next(n for n in drawn["nodes"] if n["id"] == "tools")
    assert node["data"]["id"] == ["langgraph", "prebuilt", "tool_node", "ToolNode"]
