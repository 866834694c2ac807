"""``get_graph()``: a compiled graph's shape, as LangGraph's drawable graph has it.

A :class:`DrawableGraph` holds nodes (id, display name, the kind of thing
that runs there, metadata) and edges in the order LangGraph lists them, and
renders them as JSON (:meth:`DrawableGraph.to_json`) or a Mermaid flowchart
(:meth:`DrawableGraph.draw_mermaid`). Working out the shape of a compiled
graph is :mod:`._draw_shape`'s job; rendering Mermaid is :mod:`._draw_mermaid`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from flowcore.compat.langgraph._langchain import require_langchain_module

__all__ = ["DrawableEdge", "DrawableGraph", "DrawableNode"]


@dataclass(frozen=True, slots=True)
class DrawableNode:
    """One node: ``kind`` names what runs there (``None`` for START/END markers)."""

    id: str
    name: str
    kind: tuple[str, ...] | None = None
    metadata: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The node as LangGraph's ``Graph.to_json()`` lists it."""
        found: dict[str, Any] = {"id": self.id}
        if self.kind is not None:
            found["type"] = "runnable"
            found["data"] = {"id": list(self.kind), "name": self.id}
        if self.metadata is not None:
            found["metadata"] = self.metadata
        return found


class DrawableEdge(NamedTuple):
    """One edge: ``conditional`` edges are dotted, ``data`` labels them.

    A named tuple in LangChain's ``Edge`` field order, so the two compare equal.
    """

    source: str
    target: str
    data: str | None = None
    conditional: bool = False

    def to_json(self) -> dict[str, Any]:
        """The edge as LangGraph's ``Graph.to_json()`` lists it."""
        found: dict[str, Any] = {"source": self.source, "target": self.target}
        if self.data is not None:
            found["data"] = self.data
        if self.conditional:
            found["conditional"] = True
        return found


@dataclass(slots=True)
class DrawableGraph:
    """Nodes by id and edges, in the order LangGraph draws them.

    Example:
        >>> g = DrawableGraph()
        >>> _ = g.add_node("__start__"), g.add_node("a", kind=("x",))
        >>> g.add_edge("__start__", "a")
        >>> g.draw_mermaid(with_styles=False).splitlines()[1]
        '\\t__start__ --> a;'
    """

    nodes: dict[str, DrawableNode] = field(default_factory=dict)
    edges: list[DrawableEdge] = field(default_factory=list)

    def add_node(
        self,
        id: str,
        *,
        kind: tuple[str, ...] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> DrawableNode:
        """Add node ``id`` (an id already present is an error)."""
        if id in self.nodes:
            raise ValueError(f"Node with id {id} already exists")
        node = DrawableNode(id, id, kind, metadata)
        self.nodes[id] = node
        return node

    def add_edge(
        self, source: str, target: str, data: str | None = None, conditional: bool = False
    ) -> None:
        """Add an edge between two nodes already present."""
        for end in (source, target):
            if end not in self.nodes:
                raise ValueError(f"Edge end {end!r} is not a node of the graph")
        self.edges.append(DrawableEdge(source, target, data, conditional))

    def to_json(self, *, with_schemas: bool = False) -> dict[str, list[dict[str, Any]]]:
        """``{"nodes": [...], "edges": [...]}`` as LangGraph's graphs give it."""
        return {
            "nodes": [node.to_json() for node in self.nodes.values()],
            "edges": [edge.to_json() for edge in self.edges],
        }

    # ------------------------------------------------------------ ends
    def first_node(self, exclude: tuple[str, ...] = ()) -> DrawableNode | None:
        """The one node no edge leads into (None when there is not exactly one)."""
        targets = {e.target for e in self.edges if e.source not in exclude}
        found = [n for n in self.nodes.values() if n.id not in exclude and n.id not in targets]
        return found[0] if len(found) == 1 else None

    def last_node(self, exclude: tuple[str, ...] = ()) -> DrawableNode | None:
        """The one node no edge leaves (None when there is not exactly one)."""
        sources = {e.source for e in self.edges if e.target not in exclude}
        found = [n for n in self.nodes.values() if n.id not in exclude and n.id not in sources]
        return found[0] if len(found) == 1 else None

    def remove_node(self, id: str) -> None:
        """Drop node ``id`` and every edge touching it."""
        self.nodes.pop(id)
        self.edges = [e for e in self.edges if id not in (e.source, e.target)]

    def trim_first_node(self) -> None:
        """Drop the first node when it has one way out and another node would be first."""
        first = self.first_node()
        if (
            first is not None
            and self.first_node((first.id,)) is not None
            and len({e for e in self.edges if e.source == first.id}) == 1
        ):
            self.remove_node(first.id)

    def trim_last_node(self) -> None:
        """Drop the last node when it has one way in and another node would be last."""
        last = self.last_node()
        if (
            last is not None
            and self.last_node((last.id,)) is not None
            and len({e for e in self.edges if e.target == last.id}) == 1
        ):
            self.remove_node(last.id)

    def extend(
        self, other: DrawableGraph, *, prefix: str = ""
    ) -> tuple[DrawableNode | None, DrawableNode | None]:
        """Copy ``other``'s nodes and edges in, ids as ``prefix:id``; its first and last nodes."""

        def named(id: str) -> str:
            return f"{prefix}:{id}" if prefix else id

        for id, node in other.nodes.items():
            self.nodes[named(id)] = replace(node, id=named(id))
        self.edges.extend(
            e._replace(source=named(e.source), target=named(e.target)) for e in other.edges
        )
        first, last = other.first_node(), other.last_node()
        return (
            replace(first, id=named(first.id)) if first is not None else None,
            replace(last, id=named(last.id)) if last is not None else None,
        )

    # ------------------------------------------------------------ drawing
    def draw_mermaid(
        self,
        *,
        with_styles: bool = True,
        curve_style: Any = "linear",
        node_colors: Any = None,
        wrap_label_n_words: int = 9,
        frontmatter_config: dict[str, Any] | None = None,
    ) -> str:
        """A Mermaid flowchart of the graph, as LangGraph draws it.

        Example:
            >>> # print(app.get_graph().draw_mermaid())
        """
        from flowcore.compat.langgraph._draw_mermaid import render_mermaid

        first, last = self.first_node(), self.last_node()
        return render_mermaid(
            self,
            first=first.id if first is not None else None,
            last=last.id if last is not None else None,
            with_styles=with_styles,
            curve=str(getattr(curve_style, "value", curve_style)),
            node_colors=node_colors,
            wrap_label_n_words=wrap_label_n_words,
            frontmatter_config=frontmatter_config,
        )

    def to_langchain(self) -> Any:
        """The same graph as a ``langchain_core`` ``Graph`` (the app must have loaded LangChain)."""
        drawing = require_langchain_module("runnables.graph", "draw_ascii / draw_mermaid_png")
        Edge, Graph, Node = drawing.Edge, drawing.Graph, drawing.Node

        return Graph(
            nodes={
                n.id: Node(id=n.id, name=n.name, data=None, metadata=n.metadata)
                for n in self.nodes.values()
            },
            edges=[Edge(e.source, e.target, e.data, e.conditional) for e in self.edges],
        )

    def draw_ascii(self) -> str:
        """ASCII art of the graph (drawn by langchain_core, which must be installed)."""
        return str(self.to_langchain().draw_ascii())

    def print_ascii(self) -> None:
        """Print :meth:`draw_ascii`."""
        print(self.draw_ascii())

    def draw_mermaid_png(self, **kwargs: Any) -> bytes:
        """A PNG of the Mermaid drawing (rendered by langchain_core)."""
        found: bytes = self.to_langchain().draw_mermaid_png(**kwargs)
        return found
