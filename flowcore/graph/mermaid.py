"""Draw a compiled graph as a Mermaid flowchart, for docs, reviews and debugging.

The text is meant to be pasted into anything that renders Mermaid (GitHub,
GitLab, most doc sites). How each part of a graph is drawn:

- ``START`` and ``END`` are stadium nodes (``([...])``); END is drawn only
  when some edge or router can reach it.
- Every node gets a safe Mermaid id, ``n_`` plus its name with every
  character other than ASCII letters, digits and ``_`` replaced by ``_``
  (a numeric suffix keeps ids unique). The prefix keeps ids clear of
  Mermaid's keywords (``end``, ``graph``...). The real name is the node's
  label, quoted, with characters Mermaid would read as syntax written as
  ``#NN;`` entity codes.
- A plain edge is ``-->``.
- A join, ``add_edge([a, b], c)``, goes through a small circle labelled
  ``join`` (ids ``join_1``, ``join_2``... in declaration order): every
  source points at the circle and the circle points at the target, so a
  reader sees that the target waits for all of them. Two plain edges into
  one node, by contrast, are drawn as two separate arrows (either one
  triggers it).
- A conditional edge is dotted, ``-.->``, one per target the router may
  pick, labelled with the path-map key(s) that lead there (``/`` between
  several). Keys equal to the target's name (a path map given as a list)
  and targets declared by a ``Literal[...]`` annotation carry no label.
- A back edge, an edge that closes a cycle and so starts a new pass (see
  ``docs/concepts.md``, "Cycles, passes and the recursion limit"), is
  labelled ``loop``: ``-->|"loop"|`` when plain, ``-.->|"key (loop)"|`` or
  ``-.->|"loop"|`` when conditional.
- A node's declared ``destinations`` (where ``Command(goto=...)`` may go)
  are dotted edges labelled ``goto`` (``goto (loop)`` when they close a
  cycle).

Lines come in a fixed order (START, nodes in declaration order, join
circles, END; then plain and join edges in declaration order; then router
edges in declaration order; then goto edges in node declaration order), so
the same graph always gives the same text.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING

from flowcore.graph.constants import END, START

if TYPE_CHECKING:
    from flowcore.graph.compiled import CompiledGraph

__all__ = ["graph_to_mermaid"]

_START_ID = "__start__"
_END_ID = "__end__"
_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9_]")
# Characters that would end a quoted label or be read as markup or an entity.
_LABEL_ESCAPES = str.maketrans(
    {
        '"': "#34;",
        "#": "#35;",
        "&": "#38;",
        "<": "#60;",
        ">": "#62;",
        "`": "#96;",
        "|": "#124;",
        "\n": " ",
        "\r": " ",
        "\t": " ",
    }
)
_INDENT = "    "


def graph_to_mermaid(graph: CompiledGraph) -> str:
    """The graph as Mermaid ``flowchart TD`` text (see the module docstring for the drawing).

    Example:
        >>> from typing import TypedDict
        >>> from flowcore import END, START, Graph
        >>> class S(TypedDict):
        ...     x: int
        >>> g = Graph(S).add_node("step-1", lambda s: None)
        >>> g = g.add_edge(START, "step-1").add_edge("step-1", END)
        >>> print(graph_to_mermaid(g.compile()))
        flowchart TD
            __start__(["START"])
            n_step_1["step-1"]
            __end__(["END"])
            __start__ --> n_step_1
            n_step_1 --> __end__
    """
    ids = _node_ids(graph.nodes)
    back_edges = graph.topology.back_edges

    def ref(name: str) -> str:
        if name == START:
            return _START_ID
        if name == END:
            return _END_ID
        return ids[name]

    shapes: list[str] = [f'{_START_ID}(["START"])']
    shapes.extend(f'{ids[name]}["{_escape_label(name)}"]' for name in graph.nodes)
    links: list[str] = []
    reaches_end = False
    joins = 0
    for edge in graph.edges:
        reaches_end = reaches_end or edge.target == END
        target = ref(edge.target)
        if len(edge.sources) == 1:
            source = edge.sources[0]
            if (source, edge.target) in back_edges:
                links.append(f'{ref(source)} -->|"loop"| {target}')
            else:
                links.append(f"{ref(source)} --> {target}")
            continue
        # compile() rejects joins that close a cycle, so a join is never a loop.
        joins += 1
        join_id = f"join_{joins}"
        shapes.append(f'{join_id}(("join"))')
        links.extend(f"{ref(source)} --> {join_id}" for source in edge.sources)
        links.append(f"{join_id} --> {target}")
    for router in graph.routers:
        keys_by_target: dict[str, list[str]] = {t: [] for t in router.targets}
        for key, target in (router.path_map or {}).items():
            if _key_text(key) != target and target in keys_by_target:
                keys_by_target[target].append(_key_text(key))
        for target, keys in keys_by_target.items():
            reaches_end = reaches_end or target == END
            label = " / ".join(keys)
            if (router.source, target) in back_edges:
                label = f"{label} (loop)" if label else "loop"
            arrow = f'-.->|"{_escape_label(label)}"|' if label else "-.->"
            links.append(f"{ref(router.source)} {arrow} {ref(target)}")
    for node in graph.nodes.values():
        for target in node.destinations or ():
            reaches_end = reaches_end or target == END
            label = "goto (loop)" if (node.name, target) in back_edges else "goto"
            links.append(f'{ref(node.name)} -.->|"{label}"| {ref(target)}')
    if reaches_end:
        shapes.append(f'{_END_ID}(["END"])')
    lines = ["flowchart TD", *(_INDENT + line for line in (*shapes, *links))]
    return "\n".join(lines)


def _escape_label(text: str) -> str:
    # Quoted labels may hold anything except these; entity codes render as the character.
    return text.translate(_LABEL_ESCAPES)


def _node_ids(names: Iterable[str]) -> dict[str, str]:
    # Declaration order decides who keeps the plain id when two names clash.
    ids: dict[str, str] = {}
    used: set[str] = {_START_ID, _END_ID}
    for name in names:
        base = "n_" + _UNSAFE_ID_CHARS.sub("_", name)
        candidate, suffix = base, 1
        while candidate in used:
            suffix += 1
            candidate = f"{base}_{suffix}"
        used.add(candidate)
        ids[name] = candidate
    return ids


def _key_text(key: Hashable) -> str:
    return key if isinstance(key, str) else repr(key)
