"""``get_graph()``: the edges, JSON and Mermaid drawing of compat graphs."""

from __future__ import annotations

from typing import Literal, TypedDict

from flowcore.compat.langgraph import END, START, StateGraph
from flowcore.compat.langgraph._types import Command


class State(TypedDict):
    value: str


def _step(state: State) -> State:
    return state


def _edges(graph: object) -> list[tuple[str, str, bool, str | None]]:
    drawn = graph.get_graph()  # type: ignore[attr-defined]
    return [(e.source, e.target, e.conditional, e.data) for e in drawn.edges]


def test_chain_draws_start_nodes_and_end() -> None:
    builder = StateGraph(State)
    builder.add_node("a", _step)
    builder.add_node("b", _step)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    app = builder.compile()
    assert _edges(app) == [
        ("__start__", "a", False, None),
        ("a", "b", False, None),
        ("b", "__end__", False, None),
    ]
    drawn = app.get_graph().to_json()
    assert [n["id"] for n in drawn["nodes"]] == ["__start__", "a", "b", "__end__"]
    assert drawn["nodes"][1]["type"] == "runnable"
    assert drawn["nodes"][-1] == {"id": "__end__"}
    assert app.get_graph().draw_mermaid(with_styles=False) == (
        "graph TD;\n\t__start__ --> a;\n\ta --> b;\n\tb --> __end__;\n"
    )


def test_loop_without_exit_ends_conditionally_at_last_node() -> None:
    builder = StateGraph(State)
    builder.add_node("human", _step)
    builder.add_node("agent", _step)
    builder.add_edge(START, "human")
    builder.add_edge("human", "agent")
    builder.add_edge("agent", "human")
    edges = _edges(builder.compile())
    assert ("agent", "__end__", True, None) in edges
    assert edges[0] == ("__start__", "human", False, None)


def test_branch_path_map_labels_edges_by_key() -> None:
    builder = StateGraph(State)
    builder.add_node("a", _step)
    builder.add_node("b", _step)
    builder.add_edge(START, "a")
    builder.add_conditional_edges("a", lambda s: "go", {"go": "b", "stop": END})
    edges = _edges(builder.compile())
    assert ("a", "b", True, "go") in edges
    assert ("a", "__end__", True, "stop") in edges
    mermaid = builder.compile().get_graph().draw_mermaid(with_styles=False)
    assert "\ta -. &nbsp;go&nbsp; .-> b;\n" in mermaid


def test_command_destinations_become_conditional_edges() -> None:
    def worker(state: State) -> Command[Literal["worker", "__end__"]]:
        return Command(goto=END)

    builder = StateGraph(State)
    builder.add_node("worker", worker)
    builder.add_edge(START, "worker")
    edges = _edges(builder.compile())
    assert ("worker", "worker", True, None) in edges
    assert ("worker", "__end__", True, None) in edges


def test_join_edge_draws_both_sources() -> None:
    builder = StateGraph(State)
    for name in ("a", "b", "c"):
        builder.add_node(name, _step)
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    builder.add_edge(["a", "b"], "c")
    edges = _edges(builder.compile())
    assert ("a", "c", False, None) in edges
    assert ("b", "c", False, None) in edges
    assert ("c", "__end__", False, None) in edges


def test_styled_mermaid_has_front_matter_shapes_and_classes() -> None:
    builder = StateGraph(State)
    builder.add_node("a", _step, metadata={"role": "x"})
    builder.add_edge(START, "a")
    text = builder.compile(interrupt_before=["a"]).get_graph().draw_mermaid()
    assert text.startswith("---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n")
    assert "\t__start__([<p>__start__</p>]):::first\n" in text
    assert "a(a<hr/><small><em>role = x\n__interrupt = before</em></small>)" in text
    assert "\t__end__([<p>__end__</p>]):::last\n" in text
    assert text.endswith("\tclassDef last fill:#bfb6fc\n")


def test_xray_inlines_subgraph_nodes_with_prefix() -> None:
    inner = StateGraph(State)
    inner.add_node("x", _step)
    inner.add_node("y", _step)
    inner.add_edge(START, "x")
    inner.add_edge("x", "y")
    outer = StateGraph(State)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    app = outer.compile()
    plain = app.get_graph().to_json()
    assert plain["nodes"][1]["data"]["id"][-1] == "CompiledStateGraph"
    drawn = app.get_graph(xray=True)
    assert list(drawn.nodes) == ["__start__", "__end__", "sub:x", "sub:y"]
    assert [(e.source, e.target) for e in drawn.edges] == [
        ("__start__", "sub:x"),
        ("sub:y", "__end__"),
        ("sub:x", "sub:y"),
    ]
    text = drawn.draw_mermaid(with_styles=False)
    assert "\tsubgraph sub\n\tsub\\3ax --> sub\\3ay;\n\tend\n" in text
