"""Spec: declarations with arguments of the wrong type are compile problems, never crashes.

Non-string node names, edges and route targets, unhashable path maps,
inputs that are not mappings, retry policies with fields of the wrong type
and huge ints anywhere used to raise ``TypeError`` or ``ValueError`` from
inside ``compile()``; each is now one line of the ``GraphDefinitionError``.
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

import pytest

from flowcore import END, START, Graph, GraphDefinitionError, RetryPolicy


class S(TypedDict):
    x: Any


def noop(state: Any) -> None:
    return None


def problems_of(graph: Graph, **options: Any) -> tuple[str, ...]:
    with pytest.raises(GraphDefinitionError) as caught:
        graph.compile(**options)
    return caught.value.problems


def base() -> Graph:
    return Graph(S).add_node("a", noop).add_edge(START, "a")


@pytest.mark.parametrize(
    ("declare", "words"),
    [
        (lambda g: g.add_edge("a", 1), "the target must be a node name"),
        (lambda g: g.add_edge(["a", None], END), "the source must be a node name or a list"),
        (lambda g: g.add_edge(10**5000, END), "<an int of about 5001 digits>"),
        (lambda g: g.add_conditional_edges(3, noop, ["a"]), "the source must be a node name"),
        (lambda g: g.add_conditional_edges("a", noop, {True: 1}), "path_map must be a dict"),
        (lambda g: g.add_conditional_edges("a", noop, [["a"]]), "path_map must be a dict"),
        (lambda g: g.add_node("b", noop, inputs=7), "inputs must be a mapping"),
        (lambda g: g.add_node("b", noop, retry=3), "retry must be a RetryPolicy"),
        (lambda g: g.add_node(None, noop), "node name None must be a string"),
    ],
)
def test_a_declaration_of_the_wrong_type_is_one_compile_problem(declare: Any, words: str) -> None:
    problems = problems_of(declare(base()))
    assert any(words in p for p in problems), problems


def test_a_node_name_with_a_trailing_newline_is_not_valid() -> None:
    graph = base().add_node("b\n", noop).add_edge("a", "b\n")
    assert any("is not valid" in p for p in problems_of(graph))


@pytest.mark.parametrize("names", [[["a"]], [1], 10**5000], ids=["nested", "int", "huge int"])
def test_interrupt_options_must_name_nodes_by_string(names: Any) -> None:
    problems = problems_of(base(), interrupt_before=names)
    assert any("interrupt_before must be a list of node names" in p for p in problems)


def test_a_lone_string_interrupt_option_is_one_node_not_its_letters() -> None:
    compiled = base().compile(interrupt_after="a")
    assert compiled.interrupt_after == frozenset({"a"})


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"max_attempts": "3"}, "max_attempts must be an int"),
        ({"max_attempts": 0}, "max_attempts must be >= 1"),
        ({"initial_interval": math.nan}, "initial_interval must be finite"),
        ({"max_interval": 10**5000}, "max_interval must be finite"),
        ({"jitter": "0.1"}, "jitter must be a number"),
        ({"backoff_factor": 0.5}, "backoff_factor must be >= 1"),
        ({"retry_on": 42}, "retry_on must be an exception type"),
        ({"retry_on": (KeyError, "x")}, "retry_on must be an exception type"),
    ],
)
def test_a_retry_policy_with_a_bad_field_is_a_graph_definition_error(
    fields: dict[str, Any], words: str
) -> None:
    with pytest.raises(GraphDefinitionError, match=words):
        RetryPolicy(**fields)
