"""Strict resume (``configurable["__pregel_strict_resume"]``): a resume must answer what waits."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    START,
    Command,
    InMemorySaver,
    Interrupt,
    StateGraph,
    UnknownInterruptError,
    interrupt,
)

UNKNOWN = "0" * 32


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _parallel(saver: InMemorySaver) -> Any:
    builder: StateGraph[Log] = StateGraph(Log)
    builder.add_node("a", lambda s: {"log": [f"a:{interrupt('a?')}"]})
    builder.add_node("b", lambda s: {"log": [f"b:{interrupt('b?')}"]})
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    return builder.compile(checkpointer=saver)


def _config(thread: str, *, strict: bool = True) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, "__pregel_strict_resume": strict}}


def _ids(graph: Any, config: dict[str, Any]) -> dict[str, str]:
    return {i.value: i.id for i in graph.get_state(config).interrupts}


def test_an_unknown_id_is_refused_before_anything_is_written() -> None:
    saver = InMemorySaver()
    graph = _parallel(saver)
    config = _config("unknown")
    graph.invoke({"log": []}, config)
    checkpoints = len(list(saver.list(config)))
    ids = _ids(graph, config)

    with pytest.raises(UnknownInterruptError, match=UNKNOWN) as refused:
        graph.invoke(Command(resume={UNKNOWN: "x"}), config)

    assert (refused.value.reason, refused.value.interrupt_ids, refused.value.pending_ids) == (
        "not_pending",
        (UNKNOWN,),
        tuple(sorted(ids.values())),
    )
    assert len(list(saver.list(config))) == checkpoints
    result = graph.invoke(Command(resume={ids["a?"]: "y", ids["b?"]: "n"}), config)
    assert sorted(result["log"]) == ["a:y", "b:n"]


def test_an_answered_id_an_empty_map_and_one_value_for_two_are_refused() -> None:
    graph = _parallel(InMemorySaver())
    config = _config("refused")
    graph.invoke({"log": []}, config)
    ids = _ids(graph, config)

    with pytest.raises(UnknownInterruptError) as empty:
        graph.invoke(Command(resume={}), config)
    with pytest.raises(UnknownInterruptError) as ambiguous:
        graph.invoke(Command(resume="yes"), config)
    graph.invoke(Command(resume={ids["a?"]: "yes"}), config)
    with pytest.raises(UnknownInterruptError) as answered:
        graph.invoke(Command(resume={ids["a?"]: "again"}), config)

    assert [empty.value.reason, ambiguous.value.reason, answered.value.reason] == [
        "empty_map",
        "ambiguous",
        "not_pending",
    ]
    assert answered.value.pending_ids == (ids["b?"],)
    assert sorted(graph.invoke(Command(resume="no"), config)["log"]) == ["a:yes", "b:no"]


def test_one_value_resumes_a_breakpoint() -> None:
    builder: StateGraph[Log] = StateGraph(Log)
    builder.add_node("a", lambda s: {"log": ["a"]})
    builder.add_edge(START, "a")
    graph = builder.compile(checkpointer=InMemorySaver(), interrupt_before=["a"])
    config = _config("breakpoint")
    graph.invoke({"log": []}, config)

    assert graph.invoke(Command(resume="go"), config) == {"log": ["a"]}


def test_without_strict_mode_an_unknown_id_is_ignored() -> None:
    graph = _parallel(InMemorySaver())
    config = _config("lenient", strict=False)
    graph.invoke({"log": []}, config)

    graph.invoke(Command(resume={UNKNOWN: "x"}), config)

    assert set(_ids(graph, config)) == {"a?", "b?"}
    with pytest.raises(RuntimeError, match="multiple pending interrupts"):
        graph.invoke(Command(resume="yes"), config)


def test_a_resume_pinned_to_the_head_checkpoint_is_checked() -> None:
    saver = InMemorySaver()
    graph = _parallel(saver)
    config = _config("pinned-head")
    graph.invoke({"log": []}, config)
    head = graph.get_state(config).config
    pinned = {"configurable": {**config["configurable"], **head["configurable"]}}

    with pytest.raises(UnknownInterruptError):
        graph.invoke(Command(resume={UNKNOWN: "x"}), pinned)

    ids = _ids(graph, config)
    result = graph.invoke(Command(resume={ids["a?"]: "y", ids["b?"]: "n"}), pinned)
    assert sorted(result["log"]) == ["a:y", "b:n"]


def test_a_saver_stores_interrupt_objects_handed_to_put_writes() -> None:
    saver = InMemorySaver()
    builder: StateGraph[Log] = StateGraph(Log)
    builder.add_node("a", lambda s: {"log": [f"{interrupt('one?')},{interrupt('two?')}"]})
    builder.add_edge(START, "a")
    graph = builder.compile(checkpointer=saver)
    config = _config("put-writes")
    graph.invoke({"log": []}, config)
    (card,) = graph.get_state(config).interrupts
    graph.invoke(Command(resume={card.id: "1"}), config)
    state = graph.get_state(config)
    # A later question saved (by code of its own) under the first one's id.
    saver.put_writes(
        state.config, [("__interrupt__", (Interrupt("two?", id=card.id),))], state.tasks[0].id
    )
    assert graph.get_state(config).interrupts == (Interrupt("two?", id=card.id),)
    assert graph.invoke(Command(resume={card.id: "2"}), config)["log"] == ["1,2"]
