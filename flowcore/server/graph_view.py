"""A run's graph as data for the run viewer: its nodes and edges, next to the Mermaid text.

The viewer lays the graph out and draws it itself (so it works offline and
can colour each node by status); it needs the structure, not a picture.
``START`` and ``END`` are the nodes ``__start__`` and ``__end__``. Edge
kinds follow the Mermaid drawing (``flowcore.graph.mermaid``): ``edge``
(plain), ``join`` (one source of a join that waits for all), ``route`` (a
router may pick it), ``goto`` (a declared ``Command(goto=...)``
destination). An edge that closes a cycle has ``loop`` set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Any

from pydantic import BaseModel, Field

from flowcore.graph.compiled import CompiledGraph
from flowcore.graph.constants import END, START

__all__ = ["GraphEdge", "GraphNode", "RunGraph", "graph_data"]

START_ID = "__start__"
END_ID = "__end__"


class GraphNode(BaseModel):
    """One box of the drawing: ``kind`` is ``start``, ``end`` or ``node``.

    Example:
        >>> GraphNode(id="__start__", label="START", kind="start").label
        'START'
    """

    id: str
    label: str
    kind: str = "node"


class GraphEdge(BaseModel):
    """One arrow: from ``source`` to ``target`` (node ids), how it is taken, its label.

    Example:
        >>> GraphEdge(source="check", target="retry", kind="route", label="again").kind
        'route'
    """

    source: str
    target: str
    kind: str = "edge"
    label: str = ""
    loop: bool = False


class RunGraph(BaseModel):
    """``GET /api/runs/{run_id}/graph``: the run's graph as nodes and edges, and as Mermaid.

    Example:
        >>> RunGraph(run_id="r1", target="review").nodes
        []
    """

    run_id: str
    target: str
    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)
    mermaid: str | None = None


def _ref(name: str) -> str:
    if name == START:
        return START_ID
    if name == END:
        return END_ID
    return name


def _key_text(key: Hashable) -> str:
    return key if isinstance(key, str) else repr(key)


def _native(graph: CompiledGraph) -> tuple[list[GraphNode], list[GraphEdge]]:
    back = graph.topology.back_edges
    nodes = [GraphNode(id=START_ID, label="START", kind="start")]
    nodes.extend(GraphNode(id=name, label=name) for name in graph.nodes)
    edges: list[GraphEdge] = []
    for edge in graph.edges:
        kind = "edge" if len(edge.sources) == 1 else "join"
        for source in edge.sources:
            edges.append(
                GraphEdge(
                    source=_ref(source),
                    target=_ref(edge.target),
                    kind=kind,
                    loop=(source, edge.target) in back,
                )
            )
    for router in graph.routers:
        labels: dict[str, list[str]] = {t: [] for t in router.targets}
        for key, target in (router.path_map or {}).items():
            if _key_text(key) != target and target in labels:
                labels[target].append(_key_text(key))
        for target, keys in labels.items():
            edges.append(
                GraphEdge(
                    source=_ref(router.source),
                    target=_ref(target),
                    kind="route",
                    label=" / ".join(keys),
                    loop=(router.source, target) in back,
                )
            )
    for node in graph.nodes.values():
        for target in node.destinations or ():
            edges.append(
                GraphEdge(
                    source=node.name,
                    target=_ref(target),
                    kind="goto",
                    label="goto",
                    loop=(node.name, target) in back,
                )
            )
    if any(e.target == END_ID for e in edges):
        nodes.append(GraphNode(id=END_ID, label="END", kind="end"))
    return nodes, edges


def _drawn(drawing: Any) -> tuple[list[GraphNode], list[GraphEdge]]:
    """A LangGraph-style ``get_graph()`` drawing: ``nodes`` by id, ``edges`` (``conditional``)."""
    nodes: list[GraphNode] = []
    for node_id in getattr(drawing, "nodes", {}) or {}:
        name = str(node_id)
        kind = "start" if name == START_ID else "end" if name == END_ID else "node"
        label = "START" if kind == "start" else "END" if kind == "end" else name
        nodes.append(GraphNode(id=name, label=label, kind=kind))
    edges = [
        GraphEdge(
            source=str(edge.source),
            target=str(edge.target),
            kind="route" if getattr(edge, "conditional", False) else "edge",
            label=str(getattr(edge, "data", None) or ""),
        )
        for edge in getattr(drawing, "edges", ()) or ()
    ]
    return nodes, edges


async def graph_data(graph: Any) -> tuple[list[GraphNode], list[GraphEdge]]:
    """Nodes and edges of a native compiled graph or a LangGraph-style one (empty if neither).

    Example:
        >>> # nodes, edges = await graph_data(compiled)
        >>> # [n.id for n in nodes]  -> ["__start__", "draft", "approve", "__end__"]
    """
    if isinstance(graph, CompiledGraph):
        return _native(graph)
    draw = getattr(graph, "get_graph", None)
    if draw is None:
        return [], []
    # A LangGraph-style graph builds its drawing synchronously; keep that off the loop.
    drawing = await asyncio.to_thread(draw)
    return _drawn(drawing)
