"""Spec: a resume addressed at a checkpoint the thread has moved past reruns its finished tasks.

Resuming at the thread's latest checkpoint hands the finished tasks' saved
writes back; resuming at an older one (here: after an ``update_state``) runs
them again, so they see what the resume's ``Command(update=...)`` changed.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import START, Command, InMemorySaver, StateGraph, interrupt


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    flag: bool


def _graph(runs: list[Any]) -> Any:
    def done(state: State) -> dict[str, Any]:
        runs.append(state.get("flag"))
        return {"log": ["done+" if state.get("flag") else "done"]}

    def ask(state: State) -> dict[str, Any]:
        return {"log": [f"ask:{interrupt('q')}"]}

    builder = StateGraph(State)
    builder.add_node("done", done)
    builder.add_node("ask", ask)
    builder.add_edge(START, "done")
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=InMemorySaver())


def test_a_resume_at_the_latest_checkpoint_keeps_the_finished_task_s_writes() -> None:
    runs: list[Any] = []
    graph = _graph(runs)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["in"]}, config)
    paused = graph.get_state(config).config
    out = graph.invoke(Command(resume="yes", update={"flag": True}), paused)
    assert runs == [None]
    assert out["log"] == ["in", "ask:yes", "done"]


def test_a_resume_at_a_superseded_checkpoint_reruns_the_finished_task() -> None:
    runs: list[Any] = []
    graph = _graph(runs)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["in"]}, config)
    paused = graph.get_state(config).config
    graph.update_state(config, None)
    out = graph.invoke(Command(resume="yes", update={"flag": True}), paused)
    assert runs == [None, True]
    assert sorted(out["log"]) == sorted(["in", "ask:yes", "done+"])
