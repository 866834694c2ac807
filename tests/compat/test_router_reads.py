"""Spec: a router reads its node's writes folded in, and the superstep folds them once more.

LangGraph hands a conditional edge's function the state as it stands after
its node's own writes: each written channel is copied and the writes folded
into the copy, then the superstep folds every task's writes into the real
channels. A reducer flowcore knows to be pure (``operator.add``,
``add_messages``, or one marked with ``pure_reducer``) is not called twice
for the same writes on the same value: the superstep takes the folded value
the router's read made, as a copy of its own.
"""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import END, START, AIMessage, StateGraph, add_messages
from flowcore.compat.langgraph._channels import BinaryOperatorAggregate, LastValue, pure_reducer
from flowcore.compat.langgraph._loop_helpers import new_checkpoint_id


def _loop_graph(state: Any, write: Any, seen: list[Any], route: Any = None) -> Any:
    async def step(s: Any) -> dict[str, Any]:
        return {"n": s["n"] + 1, "log": write(s["n"] + 1)}

    def router(s: Any) -> str:
        seen.append(s)
        return END if s["n"] >= 3 else "step"

    g = StateGraph(state)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", route or router, ["step", END])
    return g.compile()


class Added(TypedDict):
    n: int
    log: Annotated[list[int], operator.add]


class Chat(TypedDict):
    n: int
    log: Annotated[list[Any], add_messages]


async def test_a_router_sees_its_nodes_writes_folded_into_the_state() -> None:
    seen: list[Any] = []
    app = _loop_graph(Added, lambda n: [n], seen)

    out = await app.ainvoke({"n": 0, "log": []})

    assert [s["log"] for s in seen] == [[1], [1, 2], [1, 2, 3]]
    assert out == {"n": 3, "log": [1, 2, 3]}


async def test_a_router_changing_the_list_it_reads_does_not_change_the_state() -> None:
    seen: list[Any] = []

    def meddling(s: Any) -> str:
        seen.append(list(s["log"]))
        s["log"].append("router's own")
        return END if s["n"] >= 2 else "step"

    app = _loop_graph(Added, lambda n: [n], seen, route=meddling)

    out = await app.ainvoke({"n": 0, "log": []})

    assert seen == [[1], [1, 2]]
    assert out == {"n": 2, "log": [1, 2]}


async def test_messages_the_router_saw_are_the_ones_the_state_keeps() -> None:
    seen: list[Any] = []
    app = _loop_graph(Chat, lambda n: [AIMessage(f"m{n}")], seen)

    out = await app.ainvoke({"n": 0, "log": []})

    assert [m.content for m in out["log"]] == ["m1", "m2", "m3"]
    assert [m.id for m in seen[-1]["log"]] == [m.id for m in out["log"]]
    assert all(m.id for m in out["log"])


async def test_a_reducer_not_known_to_be_pure_runs_for_the_router_and_for_the_step() -> None:
    calls: list[tuple[Any, Any]] = []

    def counted(left: list[int], right: list[int]) -> list[int]:
        calls.append((list(left), list(right)))
        return left + right

    state = TypedDict("State", {"n": int, "log": Annotated[list[int], counted]})  # type: ignore[misc]  # noqa: UP013
    app = _loop_graph(state, lambda n: [n], [])

    await app.ainvoke({"n": 0, "log": []})

    # The input's fold, then per step one for the router's read and one for the step.
    assert calls[1:] == [([], [1]), ([], [1]), ([1], [2]), ([1], [2]), ([1, 2], [3]), ([1, 2], [3])]


async def test_a_reducer_marked_pure_runs_once_per_step() -> None:
    calls: list[tuple[Any, Any]] = []

    def counted(left: list[int], right: list[int]) -> list[int]:
        calls.append((list(left), list(right)))
        return left + right

    pure_reducer(counted)
    state = TypedDict("State", {"n": int, "log": Annotated[list[int], counted]})  # type: ignore[misc]  # noqa: UP013
    app = _loop_graph(state, lambda n: [n], [])

    out = await app.ainvoke({"n": 0, "log": []})

    assert calls[1:] == [([], [1]), ([1], [2]), ([1, 2], [3])]
    assert out == {"n": 3, "log": [1, 2, 3]}


def test_preview_leaves_the_channel_as_it_was() -> None:
    channel = BinaryOperatorAggregate("xs", operator.add, [1])

    folded = channel.preview([[2], [3]])

    assert folded.get() == [1, 2, 3]
    assert channel.get() == [1]


def test_a_fold_of_the_same_writes_takes_the_previewed_value_as_its_own_copy() -> None:
    channel = BinaryOperatorAggregate("xs", operator.add, [1])
    write = [2]
    folded = channel.preview([write])

    assert channel.update([write]) is True

    assert channel.get() == [1, 2]
    assert channel.get() is not folded.get()


@pytest.mark.parametrize("other", ["other writes", "changed value"])
def test_a_fold_of_other_writes_or_onto_another_value_calls_the_reducer(other: str) -> None:
    calls: list[Any] = []

    def add(left: list[int], right: list[int]) -> list[int]:
        calls.append(right)
        return left + right

    pure_reducer(add)
    channel = BinaryOperatorAggregate("xs", add, [1])
    channel.preview([[2]])
    if other == "changed value":
        channel.value = [7]
        channel.update([[2]])
        assert channel.get() == [7, 2]
    else:
        channel.update([[2]])  # equal to the previewed write, but not the same object
        assert channel.get() == [1, 2]
    assert len(calls) == 2


def test_a_copy_of_a_channel_does_not_share_what_its_preview_kept() -> None:
    channel = BinaryOperatorAggregate("xs", operator.add, [1])
    write = [2]
    channel.preview([write])
    clone = channel.copy()

    channel.update([write])
    clone.update([write])

    assert channel.get() == clone.get() == [1, 2]
    assert channel.get() is not clone.get()


def test_a_plain_keys_preview_is_a_copy_with_the_write_applied() -> None:
    channel = LastValue("n")
    channel.update([1])

    assert channel.preview([2]).get() == 2
    assert channel.get() == 1


def test_checkpoint_ids_made_in_a_row_sort_in_that_order_whatever_the_clock_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = new_checkpoint_id()
    monkeypatch.setattr(time, "time_ns", lambda: 5)  # the clock went back

    second = new_checkpoint_id(first)
    third = new_checkpoint_id(second)
    after_foreign = new_checkpoint_id(str(first))  # an equal id that is not the same object

    assert first < second < third
    assert after_foreign > first


def test_a_checkpoint_id_is_32_hex_digits_in_uuid_groups_time_first() -> None:
    made = new_checkpoint_id()

    groups = made.split("-")
    assert [len(g) for g in groups] == [8, 4, 4, 4, 12]
    assert all(c in "0123456789abcdef" for c in made.replace("-", ""))
    assert abs(int("".join(groups)[:16], 16) - time.time_ns()) < 60 * 10**9
