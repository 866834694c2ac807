"""Spec: ``DeltaChannel`` is also a channel of its own (LangGraph's channel API).

A low-level ``Pregel`` graph names it among its channels, so it copies,
loads from a checkpoint, folds writes, and replays saved writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from flowcore.compat.langgraph import DeltaChannel, EmptyChannelError, InMemorySaver, Overwrite
from flowcore.compat.langgraph._channel_api import LastValue
from flowcore.compat.langgraph._channels import MISSING
from flowcore.compat.langgraph._lowlevel import Pregel
from flowcore.compat.langgraph._node_builder import NodeBuilder


def extend(current: list[Any], writes: Sequence[Any]) -> list[Any]:
    out = list(current)
    for write in writes:
        out.extend(write if isinstance(write, list) else [write])
    return out


def test_the_declaration_holds_nothing_and_a_loaded_channel_starts_empty() -> None:
    spec = DeltaChannel(extend)
    with pytest.raises(EmptyChannelError):
        spec.get()
    assert spec.from_checkpoint(MISSING).get() == []
    assert spec.from_checkpoint([1, 2]).get() == [1, 2]
    assert spec.checkpoint() is MISSING


def test_a_copy_is_independent_of_the_original() -> None:
    channel = DeltaChannel(extend).from_checkpoint([1])
    clone = channel.copy()
    clone.update([[2]])
    assert channel.get() == [1]
    assert clone.get() == [1, 2]
    assert clone.reducer is channel.reducer


def test_replayed_writes_fold_after_the_last_overwrite() -> None:
    channel = DeltaChannel(extend).from_checkpoint([0])
    channel.replay_writes([("t1", "k", [1]), ("t2", "k", Overwrite([9])), ("t3", "k", [2])])
    assert channel.get() == [9, 2]


def test_bound_takes_the_declared_type_when_none_was_given() -> None:
    assert DeltaChannel(lambda s, ws: s | set(ws)).bound("tags", set).get() == set()
    assert DeltaChannel(lambda s, ws: s, dict).bound("d", list).get() == {}


def test_a_pregel_graph_reads_back_its_delta_channel_per_checkpoint() -> None:
    node = NodeBuilder().subscribe_only("go").do(lambda _: [2]).write_to("log")
    graph = Pregel(
        nodes={"n": node},
        channels={"log": DeltaChannel(extend), "go": LastValue(int)},
        input_channels=["log", "go"],
        output_channels=["log"],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"log": [0], "go": 1}, config) == {"log": [0, 2]}
    assert graph.invoke({"log": [5], "go": 1}, config) == {"log": [0, 2, 5, 2]}
    logs = [state.values.get("log") for state in graph.get_state_history(config)]
    assert logs[0] == [0, 2, 5, 2]
    assert [0, 2] in logs


def test_the_messages_reducer_gives_a_message_with_an_empty_id_a_fresh_one() -> None:
    from flowcore.compat.langgraph import _messages_delta_reducer

    out = _messages_delta_reducer([], [[{"role": "user", "content": "hi", "id": ""}]])
    assert out[0].id
