"""``get_graph()``: a compiled graph's shape, drawn as a Mermaid flowchart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from flowcore.compat.langgraph._types import END, START

if TYPE_CHECKING:
    from flowcore.compat.langgraph._graph import StateGraph

__all__ = ["DrawableEdge", "DrawableGraph"]


@dataclass(frozen=True, slots=True)
class DrawableEdge:
    """One edge: ``conditional`` edges are dotted, ``data`` labels them."""

    source: str
    target: str
    data: str | None = None
    conditional: bool = False


@dataclass(frozen=True, slots=True)
class DrawableGraph:
    """Node names and edges of a graph, in declaration order.

    Example:
        >>> DrawableGraph(("a",), (DrawableEdge(START, "a"),)).draw_mermaid().splitlines()[0]
        'graph TD;'
    """

    nodes: tuple[str, ...]
    edges: tuple[DrawableEdge, ...]

    @classmethod
    def from_builder(cls, builder: StateGraph) -> DrawableGraph:
        """The shape of ``builder``'s graph, with START and END."""
        edges: list[DrawableEdge] = [DrawableEdge(s, t) for s, t in builder.edge_order]
        for starts, end in builder.waiting_edges:
            edges.extend(DrawableEdge(s, end) for s in starts)
        for source, branches in builder.branches.items():
            for branch in branches.values():
                if branch.path_map is not None:
                    for key, target in branch.path_map.items():
                        label = None if key == target else str(key)
                        edges.append(DrawableEdge(source, target, label, True))
                else:
                    for target in branch.ends or (*builder.nodes, END):
                        edges.append(DrawableEdge(source, target, None, True))
        for name, spec in builder.nodes.items():
            for target in spec.destinations or ():
                edges.append(DrawableEdge(name, target, None, True))
        used = {e.target for e in edges} | {e.source for e in edges}
        nodes = [START, *builder.nodes] + ([END] if END in used else [])
        return cls(tuple(nodes), tuple(edges))

    def draw_mermaid(self) -> str:
        """A Mermaid ``graph TD`` flowchart of the graph.

        Example:
            >>> # print(app.get_graph().draw_mermaid())
        """

        def ident(name: str) -> str:
            return name.replace("-", "_").replace(" ", "_")

        lines = ["graph TD;"]
        for name in self.nodes:
            if name in (START, END):
                lines.append(f"\t{ident(name)}([<p>{name}</p>])")
            else:
                lines.append(f"\t{ident(name)}({name})")
        for edge in self.edges:
            arrow = "-.->" if edge.conditional else "-->"
            label = f"|{edge.data}|" if edge.data else ""
            lines.append(f"\t{ident(edge.source)} {arrow}{label} {ident(edge.target)};")
        return "\n".join(lines) + "\n"
