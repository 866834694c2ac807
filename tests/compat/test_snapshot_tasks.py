"""Spec: the tasks a StateSnapshot lists, as LangGraph shows them.

* a ``Send`` task's path is ``("__pregel_push", index, False)`` (also its
  ``langgraph_path`` metadata); an edge-triggered task's ``("__pregel_pull", name)``;
* a finished task's ``result`` in a root-state graph is the value it wrote.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Annotated, Any

from flowcore.compat.langgraph import END, START, InMemorySaver, Send, StateGraph

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


def _graph(seen: list[Any]) -> Any:
    def fan(state: list[str]) -> list[Send]:
        return [Send("work", "x"), Send("work", "y")]

    def work(item: str, config: RunnableConfig) -> list[str]:
        seen.append(config["metadata"]["langgraph_path"])
        return [item]

    builder = StateGraph(Annotated[list, operator.add])
    builder.add_node("start", lambda s: ["s"]).add_node("work", work)
    builder.add_edge(START, "start").add_conditional_edges("start", fan).add_edge("work", END)
    return builder.compile(checkpointer=InMemorySaver(), interrupt_after=["work"])


def test_send_tasks_show_langgraphs_push_path_and_plain_results() -> None:
    seen: list[Any] = []
    graph = _graph(seen)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke([], config)
    assert sorted(seen) == [("__pregel_push", 0, False), ("__pregel_push", 1, False)]
    history = list(graph.get_state_history(config))
    pushed = next(s for s in history if any(t.name == "work" for t in s.tasks))
    assert [(t.path, t.result) for t in pushed.tasks] == [
        (("__pregel_push", 0, False), ["x"]),
        (("__pregel_push", 1, False), ["y"]),
    ]
    started = next(s for s in history if [t.name for t in s.tasks] == ["start"])
    assert [(t.path, t.result) for t in started.tasks] == [(("__pregel_pull", "start"), ["s"])]


def test_a_debug_checkpoint_lists_the_tasks_history_lists() -> None:
    graph = (
        StateGraph(Annotated[list, operator.add])
        .add_node("a", lambda s: ["a"])
        .add_node("b", lambda s: ["b"])
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "t"}}
    events = list(graph.stream([], config, stream_mode="debug"))
    streamed = [e["payload"] for e in events if e["type"] == "checkpoint"]
    history = list(reversed(list(graph.get_state_history(config))))
    assert [[(t["id"], t["name"]) for t in c["tasks"]] for c in streamed] == [
        [(t.id, t.name) for t in snapshot.tasks] for snapshot in history
    ]
    assert [e["step"] for e in events if e["type"] == "checkpoint"] == [-1, 0, 1, 2]
