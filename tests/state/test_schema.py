"""Spec for state schemas: keys, reducers, defaults, input, and applying updates."""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired, Required, TypedDict

import pytest
from pydantic import BaseModel, Field

from flowcore import (
    START,
    FlowcoreError,
    Graph,
    GraphDefinitionError,
    InvalidInputError,
    InvalidUpdateError,
    append,
    merge,
)
from flowcore.state import StateSchema


def keep_max(old: int, new: int) -> int:
    return max(old, new)


def strict_sum(old: int, new: int) -> int:
    if new < 0:
        raise ValueError("negative amounts are not allowed")
    return old + new


class Ledger(TypedDict):
    amount: Annotated[int, strict_sum]


class TDState(TypedDict):
    question: str
    log: Annotated[list[str], append]
    facts: Annotated[dict[str, Any], merge]
    total: Annotated[int, operator.add]
    answer: str


class Partial(TypedDict, total=False):
    inner_not_required: NotRequired[Annotated[list[str], append]]
    outer_not_required: Annotated[NotRequired[list[str]], append]
    inner_required: Required[Annotated[dict[str, int], merge]]
    outer_required: Annotated[Required[int], operator.add]
    plain: NotRequired[str]


class PModel(BaseModel):
    question: str
    retries: int = 3
    tags: list[str] = Field(default_factory=lambda: ["default"])
    log: Annotated[list[str], append]
    facts: Annotated[dict[str, Any], merge] = Field(default_factory=dict)
    total: Annotated[int, operator.add] = 10
    best: Annotated[int, keep_max] = 0


def td() -> StateSchema:
    return StateSchema.from_type(TDState)


def pm() -> StateSchema:
    return StateSchema.from_type(PModel)


# ---------------------------------------------------------------- reading
def test_typeddict_keys_come_in_declaration_order() -> None:
    schema = td()

    assert schema.keys == ("question", "log", "facts", "total", "answer")
    assert schema.name == "TDState"
    assert schema.model is None
    assert "log" in schema
    assert "missing" not in schema


def test_typeddict_annotated_reducers_are_read() -> None:
    schema = td()

    assert schema.reducer("question") is None
    assert schema.reducer("log") is append
    assert schema.reducer("facts") is merge
    assert schema.reducer("total") is operator.add


@pytest.mark.parametrize(
    ("key", "reducer"),
    [
        ("inner_not_required", append),
        ("outer_not_required", append),
        ("inner_required", merge),
        ("outer_required", operator.add),
        ("plain", None),
    ],
)
def test_reducers_are_read_through_required_and_not_required(key: str, reducer: Any) -> None:
    assert StateSchema.from_type(Partial).reducer(key) is reducer


def test_pydantic_keys_and_annotated_reducers_are_read() -> None:
    schema = pm()

    assert schema.keys == ("question", "retries", "tags", "log", "facts", "total", "best")
    assert schema.model is PModel
    assert schema.reducer("question") is None
    assert schema.reducer("tags") is None
    assert schema.reducer("log") is append
    assert schema.reducer("facts") is merge
    assert schema.reducer("total") is operator.add
    assert schema.reducer("best") is keep_max


def test_a_schema_that_is_neither_typeddict_nor_model_is_a_definition_error() -> None:
    with pytest.raises(GraphDefinitionError, match="TypedDict or a pydantic BaseModel"):
        StateSchema.from_type(dict)


# --------------------------------------------------------------- defaults
def test_typeddict_reducer_keys_start_empty_and_plain_keys_start_absent() -> None:
    assert td().initial(None) == {"log": [], "facts": {}, "total": 0}


def test_reducer_keys_start_empty_through_required_and_not_required() -> None:
    initial = StateSchema.from_type(Partial).initial(None)

    assert initial == {
        "inner_not_required": [],
        "outer_not_required": [],
        "inner_required": {},
        "outer_required": 0,
    }


def test_pydantic_field_defaults_are_the_starting_values() -> None:
    initial = pm().initial({"question": "q"})

    assert initial == {
        "question": "q",
        "retries": 3,
        "tags": ["default"],
        "log": [],
        "facts": {},
        "total": 10,
        "best": 0,
    }


def test_default_factories_give_every_run_its_own_value() -> None:
    schema = pm()

    first = schema.initial({"question": "q"})
    second = schema.initial({"question": "q"})

    assert first["tags"] == second["tags"]
    assert first["tags"] is not second["tags"]
    assert first["log"] is not second["log"]


def test_typeddict_initial_state_is_fresh_for_each_call() -> None:
    schema = td()

    first = schema.initial(None)
    first["log"].append("leak")
    first["facts"]["leak"] = True

    assert schema.initial(None) == {"log": [], "facts": {}, "total": 0}


async def test_changing_one_runs_result_state_does_not_leak_into_the_next_run() -> None:
    compiled = (
        Graph(TDState).add_node("a", lambda s: {"answer": "x"}).add_edge(START, "a").compile()
    )

    first = await compiled.run({})
    first.state["log"].append("leak")
    first.state["facts"]["leak"] = True
    second = await compiled.run({})

    assert second.state == {"log": [], "facts": {}, "total": 0, "answer": "x"}


# ------------------------------------------------------------------ input
def test_input_is_applied_through_the_reducers() -> None:
    initial = td().initial({"question": "q", "log": ("a", "b"), "total": 4})

    assert initial == {"question": "q", "log": ["a", "b"], "facts": {}, "total": 4}


def test_pydantic_input_is_folded_into_field_defaults_through_reducers() -> None:
    initial = pm().initial({"question": "q", "total": 5, "best": 7, "tags": ["mine"]})

    assert initial["total"] == 15  # default 10 + 5
    assert initial["best"] == 7
    assert initial["tags"] == ["mine"]  # a replace-key: the input wins


def test_a_pydantic_model_instance_is_accepted_as_input() -> None:
    given = PModel(question="q", log=["x"], total=2)

    initial = pm().initial(given)

    assert initial["question"] == "q"
    assert initial["log"] == ["x"]
    # The instance already holds the full values: defaults are not applied twice.
    assert initial["tags"] == ["default"]
    assert initial["total"] == 2


def test_an_unknown_input_key_is_an_invalid_input_error_listing_the_valid_keys() -> None:
    with pytest.raises(InvalidInputError) as info:
        td().initial({"question": "q", "qestion": "typo"})

    message = str(info.value)
    assert "'qestion'" in message
    assert "question, log, facts, total, answer" in message
    assert "TDState" in message
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, FlowcoreError)


def test_every_unknown_input_key_is_named() -> None:
    with pytest.raises(InvalidInputError) as info:
        td().initial({"one": 1, "two": 2})

    assert "'one'" in str(info.value)
    assert "'two'" in str(info.value)


def test_non_mapping_input_is_an_invalid_input_error() -> None:
    with pytest.raises(InvalidInputError, match="must be a mapping") as info:
        td().initial(["question"])  # type: ignore[arg-type]

    assert "{'question': value}" in str(info.value)
    assert "}}" not in str(info.value)


def test_input_rejected_by_a_reducer_is_an_invalid_input_error() -> None:
    with pytest.raises(InvalidInputError, match="'log'"):
        td().initial({"log": "not a list"})


def test_pydantic_validation_failure_on_input_is_an_invalid_input_error() -> None:
    with pytest.raises(InvalidInputError) as info:
        pm().initial({"question": "q", "retries": "many"})

    message = str(info.value)
    assert "PModel" in message
    assert "retries" in message


def test_missing_required_pydantic_field_is_an_invalid_input_error() -> None:
    with pytest.raises(InvalidInputError, match="question"):
        pm().initial(None)


def test_pydantic_input_is_coerced_by_the_model() -> None:
    assert pm().initial({"question": "q", "retries": "7"})["retries"] == 7


async def test_run_raises_invalid_input_before_any_node_runs() -> None:
    ran: list[str] = []
    compiled = (
        Graph(TDState).add_node("a", lambda s: ran.append("a")).add_edge(START, "a").compile()
    )

    with pytest.raises(InvalidInputError, match="'nope'"):
        await compiled.run({"nope": 1})

    assert ran == []


# ----------------------------------------------------------- check_update
def test_check_update_accepts_none_and_returns_none() -> None:
    assert td().check_update("n", None) is None


def test_check_update_accepts_a_mapping_of_known_keys() -> None:
    update = {"answer": "x", "log": ["y"]}

    assert td().check_update("n", update) == update


@pytest.mark.parametrize(
    "update", [["answer"], "answer", 42, ("answer", "x")], ids=["list", "str", "int", "tuple"]
)
def test_check_update_rejects_a_non_mapping(update: object) -> None:
    with pytest.raises(InvalidUpdateError) as info:
        td().check_update("writer", update)

    err = info.value
    assert err.node == "writer"
    assert err.nodes == ("writer",)
    message = str(err)
    assert "'writer'" in message
    assert type(update).__name__ in message
    assert "must return a dict" in message


def test_check_update_rejects_an_unknown_key_and_lists_the_valid_ones() -> None:
    with pytest.raises(InvalidUpdateError) as info:
        td().check_update("writer", {"answer": "x", "anwser": "y"})

    err = info.value
    assert (err.node, err.key) == ("writer", "anwser")
    message = str(err)
    assert "'writer'" in message
    assert "'anwser'" in message
    assert "question, log, facts, total, answer" in message


# ------------------------------------------------------------------ apply
def test_apply_folds_writes_in_the_order_given() -> None:
    schema = td()

    ab = schema.apply({"log": []}, [("a", {"log": ["a"]}), ("b", {"log": ["b"]})])
    ba = schema.apply({"log": []}, [("b", {"log": ["b"]}), ("a", {"log": ["a"]})])

    assert ab["log"] == ["a", "b"]
    assert ba["log"] == ["b", "a"]


def test_apply_returns_a_new_dict_and_leaves_the_input_alone() -> None:
    schema = td()
    values = {"answer": "old", "log": ["x"]}

    out = schema.apply(values, [("a", {"answer": "new", "log": ["y"]})])

    assert values == {"answer": "old", "log": ["x"]}
    assert out == {"answer": "new", "log": ["x", "y"]}
    assert out is not values


def test_apply_with_no_writes_copies_the_values() -> None:
    values = {"answer": "x"}

    out = td().apply(values, [])

    assert out == values
    assert out is not values


def test_one_write_to_a_replace_key_per_apply_is_fine() -> None:
    out = td().apply({}, [("a", {"answer": "x"}), ("b", {"question": "y"})])

    assert out == {"answer": "x", "question": "y"}


def test_two_writes_to_a_replace_key_in_one_apply_name_both_nodes_and_the_key() -> None:
    with pytest.raises(InvalidUpdateError) as info:
        td().apply(
            {},
            [("first", {"answer": "x"}), ("middle", {"log": ["m"]}), ("second", {"answer": "y"})],
        )

    err = info.value
    assert err.nodes == ("first", "second")
    assert err.key == "answer"
    message = str(err)
    assert "'first'" in message
    assert "'second'" in message
    assert "'answer'" in message
    assert "reducer" in message  # says how to fix it


def test_writes_to_a_replace_key_in_separate_applies_are_fine() -> None:
    schema = td()

    step1 = schema.apply({}, [("a", {"answer": "x"})])
    step2 = schema.apply(step1, [("b", {"answer": "y"})])

    assert step2["answer"] == "y"


def test_a_reducer_that_raises_is_an_invalid_update_naming_reducer_key_and_node() -> None:
    schema = StateSchema.from_type(Ledger)

    with pytest.raises(InvalidUpdateError) as info:
        schema.apply({"amount": 1}, [("ok", {"amount": 2}), ("refund", {"amount": -5})])

    err = info.value
    assert (err.node, err.key) == ("refund", "amount")
    message = str(err)
    assert "strict_sum" in message
    assert "'amount'" in message
    assert "'refund'" in message
    assert "negative amounts are not allowed" in message
    assert isinstance(err.__cause__, ValueError)


def test_builtin_reducer_type_error_names_the_reducer_key_and_node() -> None:
    with pytest.raises(InvalidUpdateError) as info:
        td().apply({"facts": {}}, [("writer", {"facts": ["not", "a", "dict"]})])

    message = str(info.value)
    assert "merge" in message
    assert "'facts'" in message
    assert "'writer'" in message
    assert isinstance(info.value.__cause__, TypeError)


# -------------------------------------------------- pydantic end to end
class Ticket(BaseModel):
    text: str
    priority: int = 1
    labels: Annotated[list[str], append]
    summary: str | None = None


async def test_a_run_with_a_pydantic_state_model() -> None:
    seen: list[object] = []

    def classify(state: Ticket) -> dict[str, Any]:
        seen.append(state)
        label = "urgent" if "down" in state.text else "normal"
        return {"labels": [label], "priority": state.priority + 1}

    async def summarize(state: Ticket) -> dict[str, Any]:
        seen.append(state)
        return {"summary": f"{state.text} [{', '.join(state.labels)}] p{state.priority}"}

    compiled = (
        Graph(Ticket)
        .add_node(classify)
        .add_node(summarize)
        .add_edge(START, "classify")
        .add_edge("classify", "summarize")
        .compile()
    )

    result = await compiled.run({"text": "site is down", "labels": ["web"]})

    assert result.status == "completed", result.errors
    assert all(isinstance(s, Ticket) for s in seen)
    assert type(result.state) is dict
    assert result.state == {
        "text": "site is down",
        "priority": 2,
        "labels": ["web", "urgent"],
        "summary": "site is down [web, urgent] p2",
    }


async def test_a_pydantic_state_run_accepts_a_model_instance_as_input() -> None:
    def node(state: Ticket) -> dict[str, Any]:
        return {"labels": ["seen"]}

    compiled = Graph(Ticket).add_node(node).add_edge(START, "node").compile()

    result = await compiled.run(Ticket(text="hi", labels=["given"]))

    assert result.status == "completed"
    assert result.state == {
        "text": "hi",
        "priority": 1,
        "labels": ["given", "seen"],
        "summary": None,
    }


async def test_a_pydantic_state_run_rejects_invalid_input() -> None:
    compiled = Graph(Ticket).add_node("n", lambda s: None).add_edge(START, "n").compile()

    with pytest.raises(InvalidInputError, match="text"):
        await compiled.run({"priority": 2})
