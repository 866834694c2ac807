"""Spec for reducers: how a write to a state key combines with its old value."""

from __future__ import annotations

import asyncio
import copy
import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore import START, Graph, InvalidUpdateError, append, merge, replace
from flowcore.state import StateSchema

# ------------------------------------------------------------------ replace


@pytest.mark.parametrize(
    ("old", "new"),
    [(1, 2), ([1], [2]), ({"a": 1}, {"b": 2}), (None, "x"), ("x", None)],
)
def test_replace_returns_the_new_value_itself(old: Any, new: Any) -> None:
    assert replace(old, new) is new


# ------------------------------------------------------------------- append
def test_append_extends_the_old_list_with_the_new_items() -> None:
    assert append([1, 2], [3, 4]) == [1, 2, 3, 4]


def test_append_accepts_a_tuple_of_new_items_and_returns_a_list() -> None:
    result = append(["a"], ("b", "c"))

    assert result == ["a", "b", "c"]
    assert type(result) is list


def test_append_to_a_missing_value_starts_a_new_list() -> None:
    new = [1, 2]

    result = append(None, new)

    assert result == [1, 2]
    assert result is not new  # the writer's list is not adopted as state


def test_append_of_an_empty_list_keeps_the_items() -> None:
    assert append([1], []) == [1]


def test_append_does_not_mutate_the_old_list() -> None:
    old = [1, 2]

    result = append(old, [3])

    assert old == [1, 2]
    assert result is not old


@pytest.mark.parametrize(
    "new", ["abc", 3, {"a": 1}, {1, 2}, None], ids=["str", "int", "dict", "set", "None"]
)
def test_append_of_a_non_list_raises_a_type_error_that_says_to_wrap_it(new: Any) -> None:
    with pytest.raises(TypeError) as info:
        append([1], new)

    message = str(info.value)
    assert "append expects a list" in message
    assert type(new).__name__ in message
    assert "wrap a single item in a list" in message


def test_append_to_a_non_list_old_value_raises_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"append needs the current value to be a list, got str"):
        append("abc", ["d"])


# -------------------------------------------------------------------- merge
def test_merge_adds_new_keys_and_new_values_win() -> None:
    assert merge({"a": 1, "b": 2}, {"b": 3, "c": 4}) == {"a": 1, "b": 3, "c": 4}


def test_merge_is_shallow() -> None:
    result = merge({"cfg": {"x": 1, "y": 2}}, {"cfg": {"x": 9}})

    assert result == {"cfg": {"x": 9}}


def test_merge_into_a_missing_value_starts_a_new_dict() -> None:
    new = {"a": 1}

    result = merge(None, new)

    assert result == {"a": 1}
    assert result is not new


def test_merge_does_not_mutate_the_old_dict() -> None:
    old = {"a": 1}

    result = merge(old, {"a": 2, "b": 3})

    assert old == {"a": 1}
    assert result is not old


@pytest.mark.parametrize("new", [[("a", 1)], "ab", 1, None], ids=["pairs", "str", "int", "None"])
def test_merge_of_a_non_mapping_raises_a_type_error(new: Any) -> None:
    with pytest.raises(TypeError, match=r"merge expects a mapping to merge in, got "):
        merge({}, new)


def test_merge_into_a_non_mapping_old_value_raises_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"merge needs the current value to be a mapping, got list"):
        merge([1], {"a": 1})


# --------------------------------------------------- reducers in a schema
def keep_max(old: int, new: int) -> int:
    return max(old, new)


class Counters(TypedDict):
    total: Annotated[int, operator.add]
    best: Annotated[int, keep_max]
    log: Annotated[list[str], append]
    facts: Annotated[dict[str, Any], merge]
    answer: str
    explicit: Annotated[str, replace]


def test_schema_reads_the_reducer_of_each_key() -> None:
    schema = StateSchema.from_type(Counters)

    assert schema.reducer("total") is operator.add
    assert schema.reducer("best") is keep_max
    assert schema.reducer("log") is append
    assert schema.reducer("facts") is merge
    assert schema.reducer("answer") is None
    assert schema.reducer("explicit") is None  # replace is the default, stored as None


def test_operator_add_sums_int_writes_within_one_step() -> None:
    schema = StateSchema.from_type(Counters)

    out = schema.apply({"total": 1}, [("a", {"total": 2}), ("b", {"total": 3})])

    assert out["total"] == 6


def test_a_max_reducer_keeps_the_largest_write() -> None:
    schema = StateSchema.from_type(Counters)

    out = schema.apply({"best": 5}, [("a", {"best": 3}), ("b", {"best": 9}), ("c", {"best": 7})])

    assert out["best"] == 9


def test_custom_reducer_keys_start_from_the_types_empty_value() -> None:
    schema = StateSchema.from_type(Counters)

    initial = schema.initial(None)

    assert initial == {"total": 0, "best": 0, "log": [], "facts": {}}


def test_explicit_replace_annotation_behaves_like_no_reducer() -> None:
    schema = StateSchema.from_type(Counters)

    with pytest.raises(InvalidUpdateError) as info:
        schema.apply({}, [("a", {"explicit": "x"}), ("b", {"explicit": "y"})])

    assert info.value.nodes == ("a", "b")


def test_apply_never_mutates_the_old_values() -> None:
    schema = StateSchema.from_type(Counters)
    old = {"total": 1, "best": 1, "log": ["x"], "facts": {"k": 1}, "answer": "a"}
    snapshot = copy.deepcopy(old)
    log_before, facts_before = old["log"], old["facts"]

    out = schema.apply(
        old,
        [
            ("a", {"total": 1, "best": 4, "log": ["y"], "facts": {"j": 2}, "answer": "b"}),
            ("b", {"total": 1, "log": ["z"], "facts": {"k": 3}}),
        ],
    )

    assert old == snapshot
    assert old["log"] is log_before
    assert old["facts"] is facts_before
    assert out == {
        "total": 3,
        "best": 4,
        "log": ["x", "y", "z"],
        "facts": {"k": 3, "j": 2},
        "answer": "b",
    }


async def test_parallel_writes_combine_through_custom_reducers_in_a_run() -> None:
    both_started = asyncio.Barrier(2)

    async def low(state: dict[str, Any]) -> dict[str, Any]:
        await asyncio.wait_for(both_started.wait(), timeout=30)  # only hit on failure
        return {"total": 10, "best": 2, "log": ["low"]}

    async def high(state: dict[str, Any]) -> dict[str, Any]:
        await asyncio.wait_for(both_started.wait(), timeout=30)  # only hit on failure
        return {"total": 5, "best": 8, "log": ["high"]}

    compiled = (
        Graph(Counters)
        .add_node("low", low)
        .add_node("high", high)
        .add_edge(START, "low")
        .add_edge(START, "high")
        .compile()
    )

    result = await compiled.run({"total": 1, "best": 3})

    assert result.status == "completed"
    assert result.state["total"] == 16
    assert result.state["best"] == 8
    assert result.state["log"] == ["low", "high"]


async def test_a_reducer_type_error_fails_the_writing_node_with_a_clear_error() -> None:
    compiled = (
        Graph(Counters)
        .add_node("writer", lambda s: {"log": "not a list"})
        .add_edge(START, "writer")
        .compile()
    )

    result = await compiled.run({})

    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, InvalidUpdateError)
    assert error.node == "writer"
    assert error.key == "log"
    assert "wrap a single item in a list" in str(error)
