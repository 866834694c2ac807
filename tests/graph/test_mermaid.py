"""Spec: ``CompiledGraph.to_mermaid()`` draws the graph as a Mermaid flowchart.

START and END are stadium nodes; every node has a safe id (``n_`` + its name,
unsafe characters as ``_``) and its real name, escaped, as label; plain edges
are ``-->``; a join goes through a ``join`` circle; conditional edges are
dotted and labelled with their path-map keys; back edges are labelled
``loop``. The same graph always gives the same text.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import textwrap
from typing import Any, Literal, TypedDict

from flowcore import END, START, CompiledGraph, Graph
from flowcore.graph.mermaid import graph_to_mermaid
from flowcore.graph.spec import CallableShape, EdgeSpec, NodeSpec, RouterSpec
from flowcore.graph.topology import Topology
from flowcore.state.schema import StateSchema


class State(TypedDict):
    n: int


def noop(state: dict[str, Any]) -> None:
    return None


def graph(*names: str) -> Graph:
    g = Graph(State, name="drawn")
    for name in names:
        g.add_node(name, noop)
    return g


def body(text: str) -> list[str]:
    """The lines after the header, without their indent."""
    header, *lines = text.splitlines()
    assert header == "flowchart TD"
    assert all(line.startswith("    ") for line in lines)
    return [line.strip() for line in lines]


# ------------------------------------------------------------------ shapes
def test_a_linear_graph_is_start_nodes_end_joined_by_plain_arrows() -> None:
    g = graph("fetch", "summarize").add_edge(START, "fetch")
    g.add_edge("fetch", "summarize").add_edge("summarize", END)

    assert g.compile().to_mermaid() == textwrap.dedent(
        """\
        flowchart TD
            __start__(["START"])
            n_fetch["fetch"]
            n_summarize["summarize"]
            __end__(["END"])
            __start__ --> n_fetch
            n_fetch --> n_summarize
            n_summarize --> __end__"""
    )


def test_the_method_and_the_function_give_the_same_text() -> None:
    compiled = graph("a").add_edge(START, "a").compile()

    assert compiled.to_mermaid() == graph_to_mermaid(compiled)


def test_end_is_drawn_only_when_something_can_reach_it() -> None:
    lines = body(graph("a").add_edge(START, "a").compile().to_mermaid())

    assert lines == ['__start__(["START"])', 'n_a["a"]', "__start__ --> n_a"]


def test_a_join_goes_through_a_join_circle_while_plain_edges_stay_separate() -> None:
    g = graph("plan", "web", "docs", "merge", "report").add_edge(START, "plan")
    g.add_edge("plan", "web").add_edge("plan", "docs")
    g.add_edge(["web", "docs"], "merge")
    # Two plain edges into one node: either triggers it, so no join circle.
    g.add_edge("merge", "report").add_edge("docs", "report")

    lines = body(g.compile().to_mermaid())

    assert lines.count('join_1(("join"))') == 1
    assert not any(line.startswith("join_2") for line in lines)
    assert lines[lines.index("n_web --> join_1") :][:3] == [
        "n_web --> join_1",
        "n_docs --> join_1",
        "join_1 --> n_merge",
    ]
    assert "n_plan --> n_web" in lines
    assert "n_plan --> n_docs" in lines
    assert "n_merge --> n_report" in lines
    assert "n_docs --> n_report" in lines
    assert "n_web --> n_merge" not in lines


def test_each_join_gets_its_own_circle_in_declaration_order() -> None:
    g = graph("a", "b", "c", "d", "e").add_edge(START, "a").add_edge(START, "b")
    g.add_edge(START, "c").add_edge(["a", "b"], "d").add_edge(["b", "c"], "e")

    lines = body(g.compile().to_mermaid())

    assert [line for line in lines if "join_" in line] == [
        'join_1(("join"))',
        'join_2(("join"))',
        "n_a --> join_1",
        "n_b --> join_1",
        "join_1 --> n_d",
        "n_b --> join_2",
        "n_c --> join_2",
        "join_2 --> n_e",
    ]


# ------------------------------------------------------- conditional edges
def test_conditional_edges_are_dotted_and_labelled_with_their_path_map_keys() -> None:
    g = graph("check", "fix", "publish").add_edge(START, "check")
    g.add_conditional_edges(
        "check", lambda s: "ok", {"ok": "publish", "broken": "fix", "hopeless": END}
    )

    lines = body(g.compile().to_mermaid())

    assert lines[-3:] == [
        'n_check -.->|"ok"| n_publish',
        'n_check -.->|"broken"| n_fix',
        'n_check -.->|"hopeless"| __end__',
    ]
    assert lines[4] == '__end__(["END"])'


def test_keys_leading_to_one_target_share_an_arrow_and_non_string_keys_show_as_python() -> None:
    g = graph("gate", "yes", "no").add_edge(START, "gate")
    g.add_conditional_edges("gate", lambda s: True, {True: "yes", False: "no", None: "no"})

    lines = body(g.compile().to_mermaid())

    assert lines[-2:] == ['n_gate -.->|"True"| n_yes', 'n_gate -.->|"False / None"| n_no']


def test_routes_declared_by_a_list_or_a_literal_carry_no_label() -> None:
    def pick(state: dict[str, Any]) -> Literal["b", "__end__"]:
        return "b"

    g = graph("a", "b", "c").add_edge(START, "a")
    g.add_conditional_edges("a", pick)
    g.add_conditional_edges("b", lambda s: "c", ["c", END])

    lines = body(g.compile().to_mermaid())

    assert lines[-4:] == [
        "n_a -.-> n_b",
        "n_a -.-> __end__",
        "n_b -.-> n_c",
        "n_b -.-> __end__",
    ]


def test_a_router_on_start_routes_the_entry() -> None:
    g = graph("a", "b").add_conditional_edges(START, lambda s: "a", {"first": "a", "second": "b"})

    lines = body(g.compile().to_mermaid())

    assert lines[-2:] == ['__start__ -.->|"first"| n_a', '__start__ -.->|"second"| n_b']


# -------------------------------------------------------------------- loops
def test_back_edges_are_labelled_loop_and_forward_edges_are_not() -> None:
    g = graph("draft", "review", "revise").add_edge(START, "draft")
    g.add_edge("draft", "review")
    g.add_conditional_edges("review", lambda s: "done", {"done": END, "again": "revise"})
    g.add_edge("revise", "draft")

    compiled = g.compile()
    lines = body(compiled.to_mermaid())

    assert compiled.topology.back_edges == frozenset({("revise", "draft")})
    assert 'n_revise -->|"loop"| n_draft' in lines
    assert "n_draft --> n_review" in lines
    assert 'n_review -.->|"again"| n_revise' in lines
    assert [line for line in lines if "loop" in line] == ['n_revise -->|"loop"| n_draft']


def test_a_conditional_back_edge_keeps_its_key_and_says_loop() -> None:
    g = graph("bump", "check").add_edge(START, "bump").add_edge("bump", "check")
    g.add_conditional_edges("check", lambda s: "more", {"more": "bump", "enough": END})

    lines = body(g.compile().to_mermaid())

    assert lines[-2:] == [
        'n_check -.->|"more (loop)"| n_bump',
        'n_check -.->|"enough"| __end__',
    ]


def test_a_self_loop_without_keys_is_labelled_just_loop() -> None:
    def until_three(state: dict[str, Any]) -> Literal["bump"]:
        return "bump"

    g = graph("bump").add_edge(START, "bump").add_conditional_edges("bump", until_three)

    assert body(g.compile().to_mermaid())[-1] == 'n_bump -.->|"loop"| n_bump'


# ----------------------------------------------------------------- escaping
def test_names_mermaid_cannot_take_as_ids_get_safe_ids_and_keep_their_names_as_labels() -> None:
    # "end" is a Mermaid keyword; "-" is not an id character everywhere.
    g = graph("end", "fetch-page", "fetch_page").add_edge(START, "end")
    g.add_edge("end", "fetch-page").add_edge("end", "fetch_page")

    lines = body(g.compile().to_mermaid())

    assert lines[1:4] == [
        'n_end["end"]',
        'n_fetch_page["fetch-page"]',
        'n_fetch_page_2["fetch_page"]',
    ]
    assert "n_end --> n_fetch_page" in lines
    assert "n_end --> n_fetch_page_2" in lines


def built_directly(names: list[str], keys: dict[str, str]) -> CompiledGraph:
    """A chain of ``names`` whose last node routes by ``keys``, assembled from its parts.

    compile() only accepts names of letters, digits, '_' and '-' today; the
    drawing must not rely on that.
    """
    shape = CallableShape(is_async=False, takes_context=False)
    nodes = [NodeSpec(name, noop, shape, i) for i, name in enumerate(names)]
    edges = [EdgeSpec((START,), names[0])]
    edges += [EdgeSpec((a,), b) for a, b in itertools.pairwise(names)]
    targets = tuple(dict.fromkeys(keys.values()))
    routers = [RouterSpec(names[-1], noop, shape, keys, targets, 0)]
    return CompiledGraph(
        name="odd",
        version="1",
        schema=StateSchema.from_type(State),
        nodes=nodes,
        edges=edges,
        routers=routers,
        topology=Topology(names, edges, routers),
    )


SHAPE = re.compile(r"^([^\s\[(]+)[\[(]")
LINK = re.compile(r'^(\S+) (?:-->|-\.->)(?:\|"[^"]*"\|)? (\S+)$')


def test_spaces_quotes_and_markup_in_names_and_keys_are_escaped() -> None:
    names = ['say "hi"', "a b", "a-b", "x|y <b>#1</b> & `c`"]
    compiled = built_directly(names, {'go "back"': 'say "hi"', "a|b": "a b"})

    lines = body(compiled.to_mermaid())

    assert lines[1:5] == [
        'n_say__hi_["say #34;hi#34;"]',
        'n_a_b["a b"]',
        'n_a_b_2["a-b"]',
        'n_x_y__b__1__b_____c_["x#124;y #60;b#62;#35;1#60;/b#62; #38; #96;c#96;"]',
    ]
    assert lines[-2:] == [
        'n_x_y__b__1__b_____c_ -.->|"go #34;back#34; (loop)"| n_say__hi_',
        'n_x_y__b__1__b_____c_ -.->|"a#124;b (loop)"| n_a_b',
    ]
    ids = []
    for line in lines:
        shape, link = SHAPE.match(line), LINK.match(line)
        assert shape or link, f"neither a node nor an edge: {line}"
        ids.extend(shape.groups() if shape else link.groups() if link else ())
    assert len(ids) == 5 + 2 * 6
    assert all(re.fullmatch(r"[A-Za-z0-9_]+", i) for i in ids), ids


# --------------------------------------------------------------- stability
_DRAW = """
from typing import TypedDict
from flowcore import END, START, Graph

class S(TypedDict):
    n: int

g = Graph(S)
for name in ["a", "b", "c", "d", "e", "f"]:
    g.add_node(name, lambda s: None)
g.add_edge(START, "a").add_edge("a", "b").add_edge("a", "c").add_edge(["b", "c"], "d")
g.add_conditional_edges("d", lambda s: "x", {"x": "e", "y": "a", "z": END, 3: "f"})
g.add_edge("e", "b").add_edge("f", END)
print(g.compile().to_mermaid())
"""


def test_the_same_graph_always_gives_the_same_text_whatever_the_hash_seed() -> None:
    outputs = {
        subprocess.run(
            [sys.executable, "-c", _DRAW],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("0", "1", "12345")
    }

    (text,) = outputs
    assert body(text.rstrip("\n"))[9:] == [
        "__start__ --> n_a",
        "n_a --> n_b",
        "n_a --> n_c",
        "n_b --> join_1",
        "n_c --> join_1",
        "join_1 --> n_d",
        'n_e -->|"loop"| n_b',
        "n_f --> __end__",
        'n_d -.->|"x"| n_e',
        'n_d -.->|"y (loop)"| n_a',
        'n_d -.->|"z"| __end__',
        'n_d -.->|"3"| n_f',
    ]


def test_compiling_twice_gives_the_same_text() -> None:
    def build() -> CompiledGraph:
        g = graph("a", "b", "c").add_edge(START, "a").add_edge(["a"], "b")
        g.add_conditional_edges("b", lambda s: "c", {"on": "c", "off": "a"})
        return g.compile()

    first = build()
    assert first.to_mermaid() == first.to_mermaid() == build().to_mermaid()
