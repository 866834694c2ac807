"""Spec: LangGraph's public channel classes (``langgraph.channels.*``) as flowcore offers them."""

from __future__ import annotations

import operator
from collections.abc import Sequence

import pytest

from flowcore.compat.langgraph import (
    AnyValue,
    BinaryOperatorAggregate,
    EmptyChannelError,
    EphemeralValue,
    InvalidUpdateError,
    LastValue,
    NamedBarrierValue,
    Topic,
    UntrackedValue,
)
from flowcore.compat.langgraph._channels import MISSING


def test_last_value_keeps_one_value_per_step_and_round_trips_its_checkpoint() -> None:
    channel = LastValue(int).from_checkpoint(MISSING)
    assert channel.ValueType is int
    assert channel.UpdateType is int
    with pytest.raises(EmptyChannelError):
        channel.get()
    with pytest.raises(InvalidUpdateError):
        channel.update([5, 6])
    assert channel.update([3])
    assert channel.get() == 3
    assert not channel.update([])
    assert LastValue(int).from_checkpoint(channel.checkpoint()).get() == 3


def test_topic_spreads_lists_and_forgets_a_step_it_was_not_written() -> None:
    channel = Topic(str).from_checkpoint(MISSING)
    assert channel.ValueType == Sequence[str]
    assert channel.update(["a", ["b", "c"]])
    assert channel.get() == ["a", "b", "c"]
    assert channel.update([])
    with pytest.raises(EmptyChannelError):
        channel.get()
    assert not channel.update([])


def test_an_accumulating_topic_keeps_every_value_and_its_copies_are_independent() -> None:
    channel = Topic(str, accumulate=True).from_checkpoint(MISSING)
    channel.update(["a"])
    assert not channel.update([])
    copy = Topic(str, accumulate=True).from_checkpoint(channel.checkpoint())
    copy.update(["b"])
    assert channel.get() == ["a"]
    assert copy.get() == ["a", "b"]


def test_binary_operator_aggregate_starts_from_the_types_empty_value() -> None:
    channel = BinaryOperatorAggregate(int, operator.add).from_checkpoint(MISSING)
    assert channel.get() == 0
    channel.update([1, 2, 3])
    assert channel.get() == 6
    restored = BinaryOperatorAggregate(int, operator.add).from_checkpoint(channel.checkpoint())
    assert restored.get() == 6


def test_untracked_value_is_never_checkpointed() -> None:
    channel = UntrackedValue(dict).from_checkpoint(MISSING)
    channel.update([{"a": 1}])
    assert channel.get() == {"a": 1}
    assert channel.checkpoint() is MISSING
    with pytest.raises(EmptyChannelError):
        UntrackedValue(dict).from_checkpoint(channel.checkpoint()).get()
    with pytest.raises(InvalidUpdateError):
        channel.update([{}, {}])


def test_ephemeral_and_any_value_clear_after_a_step_without_writes() -> None:
    ephemeral = EphemeralValue(int)
    with pytest.raises(InvalidUpdateError):
        ephemeral.update([1, 2])
    assert EphemeralValue(int, guard=False).update([1, 2])
    anything = AnyValue(int)
    assert anything.update([1, 2])
    assert anything.get() == 2
    assert anything.update([])
    assert not anything.is_available()


def test_named_barrier_opens_once_every_name_wrote_and_consuming_resets_it() -> None:
    barrier = NamedBarrierValue(str, {"a", "b"})
    barrier.update(["a"])
    with pytest.raises(EmptyChannelError):
        barrier.get()
    barrier.update(["b"])
    assert barrier.get() is None
    assert barrier.consume()
    assert not barrier.is_available()
    with pytest.raises(InvalidUpdateError):
        barrier.update(["z"])
    assert NamedBarrierValue(str, {"a", "b"}).from_checkpoint({"a"}).checkpoint() == {"a"}
