"""Spec: a ``DeltaChannel`` key folds each superstep's writes with one reducer call.

The value is checkpointed like any reducer key, so forks, time travel and
``update_state`` read back exactly the value the branch built.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    START,
    AIMessage,
    DeltaChannel,
    HumanMessage,
    InMemorySaver,
    InvalidUpdateError,
    RemoveMessage,
    StateGraph,
    _messages_delta_reducer,
)

calls: list[list[Any]] = []


def append(current: list[Any] | None, writes: Sequence[Any]) -> list[Any]:
    calls.append(list(writes))
    out = list(current or [])
    for write in writes:
        out.extend(write if isinstance(write, list) else [write])
    return out


class State(TypedDict):
    log: Annotated[list[Any], DeltaChannel(append, snapshot_frequency=3)]
    plain: Annotated[list[Any], operator.add]


def fan_out() -> Any:
    graph = StateGraph(State)
    graph.add_node("a", lambda s: {"log": ["a"], "plain": ["a"]})
    graph.add_node("b", lambda s: {"log": ["b"], "plain": ["b"]})
    graph.add_edge(START, "a").add_edge(START, "b")
    return graph.compile(checkpointer=InMemorySaver())


def test_a_superstep_s_writes_reach_the_reducer_as_one_list_in_node_order() -> None:
    calls.clear()
    out = fan_out().invoke({"log": ["in"], "plain": ["in"]}, {"configurable": {"thread_id": "t"}})
    assert out == {"log": ["in", "a", "b"], "plain": ["in", "a", "b"]}
    assert calls == [[["in"]], [["a"], ["b"]]]


def test_the_key_reads_empty_before_any_write() -> None:
    graph = fan_out()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"plain": ["in"]}, config)
    root = list(graph.get_state_history(config))[-1]
    assert root.values["log"] == []
    assert graph.get_state(config).values["log"] == ["a", "b"]


def test_a_fork_from_an_earlier_checkpoint_does_not_see_the_abandoned_branch() -> None:
    graph = fan_out()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["one"], "plain": ["one"]}, config)
    graph.invoke({"log": ["two"], "plain": ["two"]}, config)
    base = next(s for s in graph.get_state_history(config) if "two" not in s.values["log"])
    graph.invoke({"log": ["three"], "plain": ["three"]}, base.config)
    values = graph.get_state(config).values
    assert values["log"] == values["plain"] == ["one", "a", "b", "three", "a", "b"]


def test_update_state_goes_through_the_reducer() -> None:
    graph = fan_out()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["in"], "plain": ["in"]}, config)
    graph.update_state(config, {"log": ["edit"]}, as_node="a")
    assert graph.get_state(config).values["log"] == ["in", "a", "b", "edit"]


def test_a_snapshot_blob_restores_as_the_value_it_wraps() -> None:
    class _DeltaSnapshot:  # the shape langgraph-checkpoint stores
        def __init__(self, value: Any) -> None:
            self.value = value

    graph = fan_out()
    channel = graph.new_channels()["log"]
    channel.restore(_DeltaSnapshot(["x"]))
    assert channel.get() == ["x"]
    channel.restore(["plain"])
    assert channel.get() == ["plain"]


@pytest.mark.parametrize("frequency", [0, -1, 1.5, True])
def test_a_snapshot_frequency_that_is_not_a_positive_int_is_refused(frequency: Any) -> None:
    with pytest.raises(ValueError, match="snapshot_frequency must be a positive int"):
        DeltaChannel(append, snapshot_frequency=frequency)


def test_a_reducer_that_is_not_callable_is_refused() -> None:
    with pytest.raises(TypeError, match="callable reducer"):
        DeltaChannel("append")  # type: ignore[arg-type]


def test_specs_with_the_same_reducer_and_frequency_are_equal() -> None:
    assert DeltaChannel(append) == DeltaChannel(append)
    assert DeltaChannel(append) != DeltaChannel(append, snapshot_frequency=5)


def test_the_messages_reducer_merges_by_id_whatever_the_batching() -> None:
    hi = HumanMessage("hi", id="1")
    first = [AIMessage("draft", id="2")]
    second = [AIMessage("final", id="2"), RemoveMessage(id="1"), RemoveMessage(id="404")]
    once = _messages_delta_reducer([hi], [first, second])
    twice = _messages_delta_reducer(_messages_delta_reducer([hi], [first]), [second])
    assert [(m.id, m.content) for m in once] == [("2", "final")]
    assert [(m.id, m.content) for m in twice] == [("2", "final")]


def test_the_messages_reducer_coerces_message_likes_and_gives_them_ids() -> None:
    out = _messages_delta_reducer([], ["hello", [("ai", "hey")]])
    assert [m.type for m in out] == ["human", "ai"]
    assert all(m.id for m in out)


def test_an_update_as_input_leaves_start_pending_like_an_invoke_would() -> None:
    graph = fan_out()
    config = {"configurable": {"thread_id": "t"}}
    graph.update_state(config, {"log": ["in"], "plain": ["in"]}, as_node="__input__")
    state = graph.get_state(config)
    assert state.next == ("__start__",)
    assert state.metadata["source"] == "input"
    assert state.metadata["step"] == -1
    out = graph.invoke(None, config)
    assert out["log"] == out["plain"] == ["in", "a", "b"]


def test_a_saver_reports_a_channel_s_writes_since_its_nearest_stored_value() -> None:
    saver = InMemorySaver()
    graph = StateGraph(State)
    graph.add_node("a", lambda s: {"plain": ["a"]})
    graph.add_node("b", lambda s: {"plain": ["b"]})
    graph.add_edge(START, "a").add_edge("a", "b")
    app = graph.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"plain": ["in"]}, config)
    history = saver.get_delta_channel_history(config=config, channels=["plain", "log"])
    assert history["plain"]["seed"] == ["in", "a"]
    assert [value for _, _, value in history["plain"]["writes"]] == [["b"]]
    # Never written, so never stored: no value to seed from (as in LangGraph).
    assert history["log"] == {"writes": []}
    assert saver.get_delta_channel_history(config=config, channels=[]) == {}


async def test_the_async_history_walk_matches_the_sync_one() -> None:
    saver = InMemorySaver()
    app = StateGraph(State).add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a")
    compiled = app.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    await compiled.ainvoke({"log": ["in"]}, config)
    sync = saver.get_delta_channel_history(config=config, channels=["log"])
    assert await saver.aget_delta_channel_history(config=config, channels=["log"]) == sync


def test_an_exit_run_on_a_new_thread_stores_the_empty_root_it_can_be_forked_from() -> None:
    graph = fan_out()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["one"], "plain": ["one"]}, config, durability="exit")
    graph.invoke({"log": ["two"], "plain": ["two"]}, config, durability="exit")
    history = list(graph.get_state_history(config))
    roots = [s for s in history if s.metadata.get("step") == -2]
    assert len(roots) == 1
    assert history[-1] is roots[0]
    assert roots[0].values == {"log": [], "plain": []}
    out = graph.invoke({"log": ["new"], "plain": ["new"]}, roots[0].config, durability="exit")
    assert out["log"] == out["plain"] == ["new", "a", "b"]


def test_an_exit_run_without_delta_keys_stores_only_its_last_checkpoint() -> None:
    plain_only = StateGraph(dict).add_node("a", lambda s: {"x": 1}).add_edge(START, "a")
    app = plain_only.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"x": 0}, config, durability="exit")
    assert [s.metadata["step"] for s in app.get_state_history(config)] == [1]


def test_an_overwrite_replaces_the_value_and_wins_over_the_step_s_other_writes() -> None:
    channel = fan_out().new_channels()["log"]
    channel.update([["x"], ["y"]])
    assert channel.update([["ignored"], {"__overwrite__": ["fresh"]}])
    assert channel.get() == ["fresh"]
    channel.update([{"__overwrite__": None}])
    assert channel.get() == []


def test_two_overwrites_in_one_superstep_are_refused() -> None:
    channel = fan_out().new_channels()["log"]
    with pytest.raises(InvalidUpdateError, match="only one Overwrite"):
        channel.update([{"__overwrite__": [1]}, {"__overwrite__": [2]}])


def test_an_overwrite_of_a_messages_key_gives_its_messages_ids() -> None:
    class Chat(TypedDict):
        messages: Annotated[list[Any], DeltaChannel(_messages_delta_reducer)]

    channel = StateGraph(Chat).add_node("a", lambda s: {}).add_edge(START, "a")
    messages = channel.compile().new_channels()["messages"]
    messages.update([{"__overwrite__": [("user", "hello")]}])
    (only,) = messages.get()
    assert only.type == "human"
    assert only.id


seen_bases: list[Any] = []


def total(current: int | None, writes: Sequence[int]) -> int:
    seen_bases.append(current)
    return (current or 0) + sum(writes)


class Counter(TypedDict, total=False):
    n: Annotated[int | None, DeltaChannel(total)]


def test_a_key_whose_type_has_no_empty_value_starts_unset_and_the_reducer_gets_none() -> None:
    seen_bases.clear()
    channel = StateGraph(Counter).add_node("a", lambda s: {}).add_edge(START, "a")
    n = channel.compile().new_channels()["n"]
    assert not n.is_available()
    n.update([2, 3])
    assert n.get() == 5
    assert seen_bases == [None]
