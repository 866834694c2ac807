"""Spec: the metadata a node's run carries, and what ``messages`` mode shows with it.

* The ids a run's config names (thread, checkpoint, task, run, assistant,
  graph) are in every node's metadata; other ``configurable`` keys (settings,
  secrets) are not. The run's own ``metadata`` wins over them.
* A message a node returns, in its update, a ``Command``'s update or a list of
  ``Command``s, is shown with the node's metadata (LangGraph's keys and
  ``ls_integration``), once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flowcore.compat.langgraph import START, Command, MessagesState, StateGraph
from flowcore.compat.langgraph import HumanMessage as Message

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


def test_config_ids_in_node_metadata() -> None:
    seen: dict[str, Any] = {}

    def node(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        seen.update(config["metadata"])
        return {}

    app = StateGraph(MessagesState).add_node("n", node).add_edge(START, "n").compile()
    app.invoke(
        {"messages": []},
        {
            "configurable": {"thread_id": "t1", "assistant_id": "a1", "api_key": "s", "x": 1},
            "metadata": {"assistant_id": "mine"},
        },
    )
    assert seen["thread_id"] == "t1"
    assert seen["assistant_id"] == "mine"
    assert "api_key" not in seen
    assert "x" not in seen
    assert seen["langgraph_node"] == "n"


def test_returned_messages_shown_with_node_metadata() -> None:
    def plain(state: MessagesState) -> dict[str, Any]:
        return {"messages": Message(content="a")}

    def command(state: MessagesState) -> Command[Any]:
        return Command(update={"messages": Message(content="b")})

    def commands(state: MessagesState) -> list[Command[Any]]:
        return [Command(update={"messages": Message(content="c")})]

    app = (
        StateGraph(MessagesState)
        .add_sequence([plain, command, commands])
        .add_edge(START, "plain")
        .compile()
    )
    shown = list(
        app.stream({"messages": []}, {"configurable": {"thread_id": "t"}}, stream_mode="messages")
    )
    assert [m.content for m, _ in shown] == ["a", "b", "c"]
    _, meta = shown[1]
    assert meta["ls_integration"] == "langgraph"
    assert meta["langgraph_node"] == "command"
    assert meta["langgraph_step"] == 2
    assert meta["langgraph_path"] == ("__pregel_pull", "command")
    assert meta["langgraph_checkpoint_ns"].startswith("command:")
    assert meta["thread_id"] == "t"


def test_tasks_records_show_user_metadata_and_tags() -> None:
    app = (
        StateGraph(MessagesState)
        .add_node("n", lambda state: {}, metadata={"owner": "me"})
        .add_edge(START, "n")
        .compile()
    )
    config = {
        "metadata": {"team": "a"},
        "tags": ["t1"],
        "configurable": {"thread_id": "t", "secret": "s"},
    }
    (start, _) = list(app.stream({"messages": []}, config, stream_mode="tasks"))
    assert start["metadata"] == {"team": "a", "owner": "me", "tags": ["t1"]}
    (plain, _) = list(
        StateGraph(MessagesState)
        .add_node("n", lambda state: {})
        .add_edge(START, "n")
        .compile()
        .stream({"messages": []}, stream_mode="tasks")
    )
    assert "metadata" not in plain
