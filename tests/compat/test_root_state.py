"""Spec: a graph whose state schema is a plain type keeps its whole state as one value.

``StateGraph(Annotated[list, operator.add])`` or ``StateGraph(int)`` declare no
keys: the input is the state, each node gets the value and returns its
update, and ``invoke`` returns the value. A ``Command``'s update is the
update; a Command inside a ``Send`` survives a saver; and LangGraph's short
``Command`` repr (only the fields set) is kept.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from flowcore.compat.langgraph import (
    END,
    START,
    Command,
    InMemorySaver,
    Send,
    StateGraph,
    interrupt,
)


def test_a_reducer_root_folds_every_update() -> None:
    graph = StateGraph(Annotated[list, operator.add])
    graph.add_node("a", lambda state: ["a"])
    graph.add_node("b", lambda state: [f"b saw {len(state)}"])
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = graph.compile()
    assert app.invoke(["0"]) == ["0", "a", "b saw 2"]
    assert list(app.stream(["0"])) == [{"a": ["a"]}, {"b": ["b saw 2"]}]


def test_a_plain_root_keeps_the_last_value_and_commands_update_it() -> None:
    graph = StateGraph(int)
    graph.add_node("inc", lambda n: n + 1)
    graph.add_node("jump", lambda n: Command(update=n * 10, goto=END))
    graph.add_edge(START, "inc").add_edge("inc", "jump")
    assert graph.compile().invoke(1) == 20


def test_a_command_sent_as_an_argument_survives_a_saver_and_a_pause() -> None:
    seen: list[Any] = []

    def fan(state: list[str]) -> list[Send]:
        return [Send("worker", Command(goto=Send("worker", 3))), Send("asker", "q")]

    def worker(arg: Any) -> Any:
        seen.append(arg)
        if isinstance(arg, Command):
            # The Command it was sent is returned, so its goto runs the worker again.
            return [arg, Command(update=[repr(arg)])]
        return [repr(arg)]

    def asker(arg: Any) -> list[str]:
        return [f"asker:{interrupt(arg)}"]

    graph = StateGraph(Annotated[list, operator.add])
    graph.add_node("start", lambda state: ["s"]).add_node("worker", worker)
    graph.add_node("asker", asker)
    graph.add_edge(START, "start").add_conditional_edges("start", fan)
    app = graph.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    assert list(app.invoke(["0"], config)) == ["__interrupt__"]
    # The paused superstep is planned again from the checkpoint, Command argument and all.
    paused = app.get_state(config)
    assert (paused.next, sorted(t.name for t in paused.tasks)) == (("asker",), ["asker", "worker"])
    assert app.invoke(Command(resume="yes"), config) == [
        "0",
        "s",
        # In the order of the Sends, as LangGraph applies a superstep's writes.
        "Command(goto=Send(node='worker', arg=3))",
        "asker:yes",
        "3",
    ]
    assert seen == [Command(goto=Send("worker", 3)), 3]


def test_a_command_repr_shows_only_what_is_set() -> None:
    assert repr(Command(update={"a": 1})) == "Command(update={'a': 1})"
    assert repr(Command()) == "Command()"
