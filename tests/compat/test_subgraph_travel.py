"""Time travel into a subgraph: a subgraph snapshot's config handed back to the root graph."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from flowcore.compat.langgraph import START, Command, InMemorySaver, StateGraph, interrupt


class State(TypedDict):
    value: Annotated[list[str], operator.add]


def _graph(called: list[str]) -> Any:
    def step_a(state: State) -> State:
        called.append("step_a")
        return {"value": ["a"]}

    def ask(state: State) -> State:
        called.append("ask")
        return {"value": [f"ask:{interrupt('Question?')}"]}

    inner = (
        StateGraph(State)
        .add_node("step_a", step_a)
        .add_node("ask", ask)
        .add_edge(START, "step_a")
        .add_edge("step_a", "ask")
        .compile(checkpointer=True)
    )
    return (
        StateGraph(State)
        .add_node("inner", inner)
        .add_edge(START, "inner")
        .compile(checkpointer=InMemorySaver())
    )


def _paused_then_done(called: list[str]) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    graph = _graph(called)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"value": []}, config)
    parent = graph.get_state(config, subgraphs=True)
    sub_config = parent.tasks[0].state.config
    graph.invoke(Command(resume="first"), config)
    return graph, config, sub_config


def test_a_subgraph_snapshot_config_maps_each_namespace_to_its_checkpoint() -> None:
    graph = _graph([])
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"value": []}, config)

    parent = graph.get_state(config, subgraphs=True)
    sub = parent.tasks[0].state.config["configurable"]

    assert sub["checkpoint_ns"] == "inner"
    assert sub["checkpoint_map"] == {
        "": parent.config["configurable"]["checkpoint_id"],
        "inner": sub["checkpoint_id"],
    }


def test_invoking_the_root_with_a_subgraph_config_replays_the_subgraph_from_there() -> None:
    called: list[str] = []
    graph, config, sub_config = _paused_then_done(called)
    assert graph.get_state(config).values == {"value": ["a", "ask:first"]}
    called.clear()

    replayed = graph.invoke(None, sub_config)

    assert replayed["__interrupt__"][0].value == "Question?"
    assert called == ["ask"]
    assert graph.invoke(Command(resume="second"), config) == {"value": ["a", "ask:second"]}


def test_updating_a_subgraph_config_forks_the_subgraph() -> None:
    called: list[str] = []
    graph, _, sub_config = _paused_then_done(called)
    called.clear()

    fork = graph.update_state(sub_config, {"value": ["forked"]})

    assert fork["configurable"]["checkpoint_ns"] == "inner"
    assert fork["configurable"]["checkpoint_map"]["inner"] == fork["configurable"]["checkpoint_id"]
    assert graph.get_state(fork).values == {"value": ["a", "forked"]}
    result = graph.invoke(None, fork)
    assert result["__interrupt__"][0].value == "Question?"
    assert called == ["ask"]


def test_a_copy_is_a_sibling_fork_that_asks_again() -> None:
    called: list[str] = []
    graph = _graph(called)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"value": []}, config)
    paused = graph.get_state(config)

    copy = graph.update_state(paused.config, None, as_node="__copy__")
    copied = graph.get_state(copy)

    assert copied.metadata["source"] == "fork"
    assert copied.values == paused.values
    assert copied.next == paused.next
    assert copied.parent_config == paused.parent_config
    called.clear()
    assert graph.invoke(None, copy)["__interrupt__"][0].value == "Question?"
    # The subgraph goes back to where it stood at the copy's parent: it had not run.
    assert called == ["step_a", "ask"]


class Parent(TypedDict):
    results: Annotated[list[str], operator.add]


def _stateful_parent(seen: list[list[str]]) -> Any:
    def step(state: State) -> State:
        seen.append(list(state["value"]))
        return {"value": [f"got:{interrupt('q')}"]}

    sub = (
        StateGraph(State).add_node("step", step).add_edge(START, "step").compile(checkpointer=True)
    )

    def first(state: Parent) -> Parent:
        return {"results": ["p"]}

    return (
        StateGraph(Parent)
        .add_node("first", first)
        .add_node("sub", sub)
        .add_edge(START, "first")
        .add_edge("first", "sub")
        .compile(checkpointer=InMemorySaver())
    )


def _two_rounds(graph: Any, config: dict[str, Any]) -> Any:
    for answer in ("one", "two"):
        graph.invoke({"results": []}, config)
        graph.invoke(Command(resume=answer), config)
    history = list(graph.get_state_history(config))
    return next(s for s in history if s.next == ("sub",))


def test_replaying_the_parent_gives_a_stateful_subgraph_its_state_of_then() -> None:
    seen: list[list[str]] = []
    graph = _stateful_parent(seen)
    config = {"configurable": {"thread_id": "t"}}
    before_second = _two_rounds(graph, config)
    seen.clear()

    replayed = graph.invoke(None, before_second.config)

    assert "__interrupt__" in replayed
    assert seen == [["got:one"]]


def test_a_parent_fork_gives_a_stateful_subgraph_its_state_at_the_forked_checkpoint() -> None:
    seen: list[list[str]] = []
    graph = _stateful_parent(seen)
    config = {"configurable": {"thread_id": "t"}}
    before_second = _two_rounds(graph, config)
    fork = graph.update_state(before_second.config, {"results": ["forked"]})
    seen.clear()

    assert "__interrupt__" in graph.invoke(None, fork)
    assert seen == [["got:one"]]


def test_an_update_after_a_runs_input_is_taken_as_more_input() -> None:
    graph = (
        StateGraph(Parent)
        .add_node("first", lambda state: {"results": ["p"]})
        .add_edge(START, "first")
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"results": []}, config)
    graph.invoke({"results": []}, config)
    after_input = next(s for s in graph.get_state_history(config) if s.next == ("first",))

    fork = graph.update_state(after_input.config, {"results": ["forked"]})

    # The input's edges still lead on: the node it scheduled runs after the update.
    assert graph.get_state(fork).next == ("first",)
    assert graph.invoke(None, fork) == {"results": ["p", "forked", "p"]}
