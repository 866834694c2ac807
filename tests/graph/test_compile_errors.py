"""Spec for compile-time validation: every problem, reported all at once.

``Graph.compile()`` raises one :class:`GraphDefinitionError` whose
``problems`` lists every mistake in the definition, each naming the node or
edge at fault and saying how to fix it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

import pytest

from flowcore import (
    END,
    START,
    FlowcoreError,
    Graph,
    GraphDefinitionError,
    append,
)


class State(TypedDict):
    question: str
    log: Annotated[list[str], append]


class MemoryState(TypedDict):
    question: str
    memory: dict[str, Any]
    user: dict[str, Any]


def noop(state: dict[str, Any]) -> None:
    return None


def problems_of(g: Graph) -> tuple[str, ...]:
    with pytest.raises(GraphDefinitionError) as info:
        g.compile()
    assert info.value.problems, "GraphDefinitionError without problems"
    return info.value.problems


def one_problem(g: Graph, *needles: str) -> str:
    """The single problem of ``g``; it must contain every needle."""
    problems = problems_of(g)
    assert len(problems) == 1, problems
    for needle in needles:
        assert needle in problems[0], (needle, problems[0])
    return problems[0]


def matching(problems: tuple[str, ...], *needles: str) -> list[str]:
    return [p for p in problems if all(n in p for n in needles)]


def base() -> Graph:
    """A valid graph: START -> alpha -> beta -> END."""
    return (
        Graph(State)
        .add_node("alpha", noop)
        .add_node("beta", noop)
        .add_edge(START, "alpha")
        .add_edge("alpha", "beta")
        .add_edge("beta", END)
    )


def test_the_base_graph_is_valid() -> None:
    base().compile()


# ------------------------------------------------------------ error type
def test_graph_definition_error_is_a_value_error_and_a_flowcore_error() -> None:
    g = Graph(State).add_node("alpha", noop)  # no entry point

    with pytest.raises(GraphDefinitionError) as info:
        g.compile()

    err = info.value
    assert isinstance(err, ValueError)
    assert isinstance(err, FlowcoreError)
    assert err.code == "graph-definition"
    assert isinstance(err.problems, tuple)


def test_the_error_message_lists_every_problem() -> None:
    g = base().add_edge("alpha", "gamma").add_edge("delta", "beta")

    with pytest.raises(GraphDefinitionError) as info:
        g.compile()

    message = str(info.value)
    assert "2 problems" in message
    for problem in info.value.problems:
        assert problem in message


# ---------------------------------------------------------- all at once
def test_all_problems_are_reported_together_in_one_error() -> None:
    def router(state: dict[str, Any]) -> str:
        return "alpha"

    g = (
        base()
        .add_node("alpha", noop)  # duplicate
        .add_node("memory", noop)  # reserved
        .add_node("a.b", noop)  # invalid characters
        .add_node("lonely", noop)  # unreachable
        .add_node("broken", 42)  # not callable
        .add_node("slow", noop, timeout=0)  # bad timeout
        .add_node("cited", noop, inputs={"q": "<<ghost.answer>>"})
        .add_edge("beta", "cited")
        .add_edge("alpha", "gama")  # unknown target
        .add_edge("bta", "alpha")  # unknown source
        .add_edge(END, "alpha")  # END as a source
        .add_edge("beta", START)  # START as a target
        .add_conditional_edges("beta", router)  # no declared targets
        .add_conditional_edges("alpha", router, {"x": "omega"})  # unknown path map target
    )

    problems = problems_of(g)

    expected = [
        ("duplicate node name 'alpha'",),
        ("'memory'", "reserved"),
        ("'a.b'", "not valid"),
        ("'lonely'", "unreachable"),
        ("'broken'", "not callable"),
        ("'slow'", "timeout"),
        ("'cited'", "<<ghost.answer>>"),
        ("unknown target node 'gama'",),
        ("unknown source node 'bta'",),
        ("END cannot be the source",),
        ("START cannot be the target",),
        ("no declared targets",),
        ("unknown node 'omega'",),
    ]
    for needles in expected:
        assert matching(problems, *needles), (needles, problems)
    # The unreachable nodes 'memory', 'a.b', 'broken' and 'slow' are reported too;
    # nothing is reported twice.
    assert len(problems) == len(set(problems))
    assert len(problems) >= len(expected)


# ---------------------------------------------------------------- edges
def test_edge_to_an_unknown_node_names_the_edge_and_suggests_a_fix() -> None:
    problem = one_problem(base().add_edge("beta", "alpah"), "beta -> alpah", "'alpah'")

    assert "unknown target node" in problem
    assert "did you mean 'alpha'?" in problem


def test_edge_from_an_unknown_node_names_the_edge_and_suggests_a_fix() -> None:
    problem = one_problem(base().add_edge("bet", "alpha"), "bet -> alpha", "'bet'")

    assert "unknown source node" in problem
    assert "did you mean 'beta'?" in problem


def test_unknown_node_far_from_every_name_gets_no_suggestion() -> None:
    problem = one_problem(base().add_edge("beta", "zzzzzz"), "'zzzzzz'")

    assert "did you mean" not in problem


def test_join_with_an_unknown_source_names_the_join() -> None:
    g = base().add_node("c", noop).add_edge("beta", "c").add_edge(["alpha", "gamma"], "c")

    one_problem(g, "alpha + gamma -> c", "unknown source node 'gamma'")


def test_end_cannot_be_the_source_of_an_edge() -> None:
    one_problem(base().add_edge(END, "beta"), "END cannot be the source")


def test_start_cannot_be_the_target_of_an_edge() -> None:
    one_problem(base().add_edge("beta", START), "beta -> __start__", "START cannot be the target")


def test_start_cannot_be_part_of_a_join() -> None:
    one_problem(base().add_edge([START, "alpha"], "beta"), "START cannot be part of a join")


def test_a_join_without_sources_is_a_problem() -> None:
    one_problem(base().add_edge([], "beta"), "'beta'", "at least one source")


def test_end_cannot_route_anywhere() -> None:
    one_problem(
        base().add_conditional_edges(END, lambda s: "alpha", ["alpha"]),
        "END cannot route anywhere",
    )


# ---------------------------------------------------------------- names
def test_duplicate_node_names_are_a_problem() -> None:
    one_problem(base().add_node("alpha", noop), "duplicate node name 'alpha'", "unique")


@pytest.mark.parametrize("name", [START, END, "input", "state", "memory", "user"])
def test_reserved_names_cannot_be_node_names(name: str) -> None:
    g = Graph(State).add_node("alpha", noop).add_node(name, noop).add_edge(START, "alpha")

    problems = problems_of(g)

    reserved = matching(problems, repr(name), "reserved")
    assert len(reserved) == 1, problems
    assert "rename the node" in reserved[0]


@pytest.mark.parametrize("name", ["a.b", "a b", "a/b", "<<a>>", "", "naïve!"])
def test_node_names_with_invalid_characters_are_a_problem(name: str) -> None:
    g = Graph(State).add_node(name, noop)
    if name:
        g.add_edge(START, name)
    else:
        g.add_node("alpha", noop).add_edge(START, "alpha")

    problems = problems_of(g)

    invalid = matching(problems, f"node name {name!r} is not valid")
    assert len(invalid) == 1, problems
    assert "letters, digits, '_' or '-'" in invalid[0]


def test_names_with_letters_digits_underscores_and_dashes_are_valid() -> None:
    g = Graph(State)
    for name in ["a", "Node_1", "fetch-docs", "42"]:
        g.add_node(name, noop).add_edge(START, name)
    g.compile()


def test_non_string_node_name_is_a_problem() -> None:
    one_problem(base().add_node(7, noop), "7", "must be a string")  # type: ignore[arg-type]


# ---------------------------------------------------------- reachability
def test_node_without_incoming_edges_is_unreachable() -> None:
    one_problem(
        base().add_node("orphan", noop).add_edge("orphan", END),
        "'orphan'",
        "unreachable from START",
        "connect it with an edge or remove it",
    )


def test_nodes_reachable_only_from_an_unreachable_node_are_unreachable_too() -> None:
    g = base().add_node("x", noop).add_node("y", noop).add_edge("x", "y").add_edge("y", "x")

    problems = problems_of(g)

    assert len(problems) == 2, problems
    assert matching(problems, "'x'", "unreachable")
    assert matching(problems, "'y'", "unreachable")


def test_nodes_reached_through_a_router_are_reachable() -> None:
    (
        base()
        .add_node("gamma", noop)
        .add_conditional_edges("beta", lambda s: "gamma", ["gamma", END])
        .compile()
    )


def test_a_graph_without_an_entry_point_is_a_problem() -> None:
    g = Graph(State).add_node("alpha", noop).add_node("beta", noop).add_edge("alpha", "beta")

    problem = one_problem(g, "no entry point")

    assert "add_edge(START" in problem


def test_an_empty_graph_has_no_entry_point() -> None:
    one_problem(Graph(State), "no entry point")


def test_a_router_from_start_is_an_entry_point() -> None:
    (
        Graph(State)
        .add_node("alpha", noop)
        .add_conditional_edges(START, lambda s: "alpha", ["alpha"])
        .compile()
    )


# -------------------------------------------------------------- routers
def test_path_map_naming_an_unknown_node_is_a_problem() -> None:
    problem = one_problem(
        base().add_conditional_edges("beta", lambda s: "ok", {"ok": "alpah"}),
        "conditional edge from 'beta'",
        "unknown node 'alpah'",
    )

    assert "did you mean 'alpha'?" in problem


def test_path_list_naming_an_unknown_node_is_a_problem() -> None:
    one_problem(
        base().add_conditional_edges("beta", lambda s: "x", ["alpha", "nowhere"]),
        "conditional edge from 'beta'",
        "'nowhere'",
    )


def test_router_from_an_unknown_node_is_a_problem() -> None:
    problem = one_problem(
        base().add_conditional_edges("bet", lambda s: "alpha", ["alpha"]),
        "unknown source node 'bet'",
    )

    assert "did you mean 'beta'?" in problem


def test_start_cannot_be_a_route_target() -> None:
    one_problem(
        base().add_conditional_edges("beta", lambda s: "x", {"x": START}),
        "START cannot be a route target",
    )


def test_an_empty_path_map_is_a_problem() -> None:
    one_problem(
        base().add_conditional_edges("beta", lambda s: "x", {}), "'beta'", "path_map is empty"
    )


def test_a_path_map_of_the_wrong_type_is_a_problem() -> None:
    one_problem(
        base().add_conditional_edges("beta", lambda s: "x", 42),  # type: ignore[arg-type]
        "'beta'",
        "path_map must be a dict or a list",
    )


def test_router_without_declared_targets_is_a_problem_that_says_how_to_declare_them() -> None:
    def pick(state: dict[str, Any]) -> str:
        return "alpha"

    problem = one_problem(
        base().add_conditional_edges("beta", pick), "'beta'", "'pick'", "no declared targets"
    )

    assert "path_map" in problem
    assert "Literal[" in problem


def test_router_with_a_literal_return_annotation_compiles() -> None:
    def pick(state: dict[str, Any]) -> Literal["a", "b"]:
        return "a"

    g = (
        Graph(State)
        .add_node("start", noop)
        .add_node("a", noop)
        .add_node("b", noop)
        .add_edge(START, "start")
        .add_conditional_edges("start", pick)
    )

    compiled = g.compile()

    assert compiled.routers[0].targets == ("a", "b")


def test_router_with_literal_naming_an_unknown_node_is_a_problem() -> None:
    def pick(state: dict[str, Any]) -> Literal["alpha", "omega"]:
        return "alpha"

    one_problem(base().add_conditional_edges("beta", pick), "unknown node 'omega'")


def test_router_that_is_not_callable_is_a_problem() -> None:
    one_problem(
        base().add_conditional_edges("beta", "alpha", ["alpha"]),  # type: ignore[arg-type]
        "not callable",
    )


# ------------------------------------------------------------ functions
def test_a_non_callable_node_is_a_problem() -> None:
    one_problem(
        base().add_node("gamma", "not a function").add_edge("beta", "gamma"),  # type: ignore[arg-type]
        "node 'gamma'",
        "not callable",
    )


def test_add_node_with_a_non_callable_and_no_name_is_a_problem() -> None:
    one_problem(base().add_node(42), "add_node(42)", "add_node(name, func)")  # type: ignore[arg-type]


def test_a_node_requiring_three_arguments_is_a_problem() -> None:
    def three(state: Any, ctx: Any, extra: Any) -> None:
        return None

    one_problem(
        base().add_node("gamma", three).add_edge("beta", "gamma"),
        "node 'gamma'",
        "requires 3 arguments",
        "(state) or (state, ctx)",
    )


def test_a_node_taking_no_arguments_is_a_problem() -> None:
    def nothing() -> None:
        return None

    one_problem(
        base().add_node("gamma", nothing).add_edge("beta", "gamma"),
        "node 'gamma'",
        "takes no arguments",
    )


def test_a_third_argument_with_a_default_is_fine() -> None:
    def node(state: Any, ctx: Any, extra: int = 1) -> None:
        return None

    base().add_node("gamma", node).add_edge("beta", "gamma").compile()


@pytest.mark.parametrize("timeout", [0, -1, -0.5, float("nan")])
def test_a_non_positive_timeout_is_a_problem(timeout: float) -> None:
    one_problem(
        base().add_node("gamma", noop, timeout=timeout).add_edge("beta", "gamma"),
        "node 'gamma'",
        "timeout must be > 0",
    )


def test_a_non_numeric_timeout_is_reported_at_compile_not_raised_by_add_node() -> None:
    # Graph documents that mistakes are collected and reported by compile().
    g = base().add_node("gamma", noop, timeout="5").add_edge("beta", "gamma")  # type: ignore[arg-type]

    one_problem(g, "node 'gamma'", "timeout")


def test_a_positive_timeout_is_fine() -> None:
    base().add_node("gamma", noop, timeout=0.01).add_edge("beta", "gamma").compile()


# -------------------------------------------------------------- <<refs>>
def with_inputs(inputs: dict[str, Any], schema: type[Any] = State) -> Graph:
    """START -> alpha -> beta -> reader; reader has ``inputs``; side hangs off START."""
    return (
        Graph(schema)
        .add_node("alpha", noop)
        .add_node("beta", noop)
        .add_node("side", noop)
        .add_node("reader", noop, inputs=inputs)
        .add_edge(START, "alpha")
        .add_edge(START, "side")
        .add_edge("alpha", "beta")
        .add_edge("beta", "reader")
    )


def test_valid_references_compile() -> None:
    with_inputs(
        {
            "a": "<<alpha.answer>>",
            "b": "from beta: <<beta.items.0>>",
            "q": "<<input.anything.at.all>>",
            "s": "<<state.question>>",
            "whole": "<<state>>",
            "escaped": r"\<<not.a.ref>>",
        }
    ).compile()


def test_reference_syntax_error_is_a_problem() -> None:
    one_problem(with_inputs({"q": "<<alpha.>>"}), "node 'reader' inputs", "<<alpha.>>")


def test_reference_to_an_unknown_namespace_is_a_problem() -> None:
    problem = one_problem(
        with_inputs({"q": "<<alpah.answer>>"}),
        "node 'reader'",
        "<<alpah.answer>>",
        "'alpah' is not a node or a namespace",
    )

    assert "did you mean 'alpha'?" in problem
    assert "input, state, memory, user" in problem


def test_reference_to_a_node_that_is_not_upstream_is_a_problem() -> None:
    problem = one_problem(
        with_inputs({"q": "<<side.answer>>"}),
        "node 'reader'",
        "<<side.answer>>",
        "'side' is not upstream of 'reader'",
    )

    assert "add an edge path side -> reader" in problem


def test_reference_to_a_downstream_node_is_a_problem() -> None:
    g = (
        Graph(State)
        .add_node("first", noop, inputs={"q": "<<second.answer>>"})
        .add_node("second", noop)
        .add_edge(START, "first")
        .add_edge("first", "second")
    )

    one_problem(g, "node 'first'", "'second' is not upstream")


def test_reference_to_the_node_itself_outside_a_loop_is_a_problem() -> None:
    one_problem(with_inputs({"q": "<<reader.answer>>"}), "'reader' is not upstream of 'reader'")


def test_reference_to_a_node_upstream_through_a_loop_back_edge_compiles() -> None:
    # A loop body may read what the end of the previous iteration produced.
    g = (
        Graph(State)
        .add_node("body", noop, inputs={"prev": "<<check.verdict>>"})
        .add_node("check", noop)
        .add_edge(START, "body")
        .add_edge("body", "check")
        .add_conditional_edges("check", lambda s: END, ["body", END])
    )

    g.compile()


def test_reference_to_a_missing_state_key_is_a_problem() -> None:
    one_problem(
        with_inputs({"q": "<<state.questoin>>"}),
        "node 'reader'",
        "<<state.questoin>>",
        "state has no key 'questoin'",
        "question, log",
    )


@pytest.mark.parametrize("namespace", ["memory", "user"])
def test_memory_and_user_namespaces_need_a_state_key_of_that_name(namespace: str) -> None:
    problem = one_problem(
        with_inputs({"q": f"<<{namespace}.name>>"}),
        "node 'reader'",
        f"<<{namespace}.name>>",
        f"add a {namespace!r} key to state schema State",
    )

    assert f"state[{namespace!r}]" in problem


def test_memory_and_user_namespaces_compile_when_the_state_has_those_keys() -> None:
    with_inputs({"m": "<<memory.name>>", "u": "<<user.id>>"}, schema=MemoryState).compile()


def test_every_bad_reference_of_a_node_is_reported() -> None:
    problems = problems_of(
        with_inputs(
            {
                "a": "<<side.x>>",
                "b": "<<state.nope>>",
                "c": ["<<nobody.y>>", {"deep": "<<memory.z>>"}],
            }
        )
    )

    assert len(problems) == 4, problems
    for needle in ["<<side.x>>", "<<state.nope>>", "<<nobody.y>>", "<<memory.z>>"]:
        assert matching(problems, needle), (needle, problems)


# ---------------------------------------------------------------- joins
def test_a_join_that_closes_a_cycle_is_a_problem() -> None:
    g = (
        Graph(State)
        .add_node("a", noop)
        .add_node("b", noop)
        .add_node("c", noop)
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "c")
        .add_edge(["b", "c"], "a")
    )

    problems = problems_of(g)

    cycle = matching(problems, "join b + c -> a", "closes a cycle")
    assert cycle, problems
    assert "use a plain or conditional edge" in cycle[0]
    # Both sources close the loop, but the join is reported once.
    assert len(problems) == 1, problems


def test_a_join_inside_a_dag_compiles() -> None:
    (
        Graph(State)
        .add_node("a", noop)
        .add_node("b", noop)
        .add_node("c", noop)
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge(["a", "b"], "c")
        .compile()
    )


# ---------------------------------------------------------------- schema
def test_a_state_schema_that_is_not_a_typeddict_or_model_is_a_problem() -> None:
    g = Graph(dict).add_node("a", noop).add_edge(START, "a")

    one_problem(g, "state schema", "TypedDict or a pydantic BaseModel")


def test_schema_problems_are_reported_with_graph_problems() -> None:
    g = Graph(int).add_node("a", noop).add_edge("a", "ghost")

    problems = problems_of(g)

    assert matching(problems, "state schema")
    assert matching(problems, "'ghost'")
    assert matching(problems, "no entry point")
