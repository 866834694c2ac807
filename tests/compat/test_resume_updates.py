"""``Command(resume=..., update=...)``: each resume's update is applied once, none is lost."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from flowcore.compat.langgraph import START, Command, InMemorySaver, StateGraph, interrupt


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def test_updates_given_with_successive_resumes_of_one_task_all_apply_once() -> None:
    def ask_three_times(state: Log) -> Log:
        answers = [interrupt(str(n)) for n in range(1, 4)]
        return {"log": ["a:" + "".join(answers)]}

    builder: StateGraph[Log] = StateGraph(Log)
    builder.add_node("a", ask_three_times)
    builder.add_edge(START, "a")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "updates"}}
    graph.invoke({"log": []}, config)

    seen = []
    for n in range(1, 4):
        result = graph.invoke(Command(resume=str(n), update={"log": [f"u{n}"]}), config)
        seen.append(sorted(graph.get_state(config).values["log"]))

    assert seen == [["u1"], ["u1", "u2"], ["a:123", "u1", "u2", "u3"]]
    assert sorted(result["log"]) == ["a:123", "u1", "u2", "u3"]
