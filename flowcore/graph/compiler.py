"""Turn a :class:`~flowcore.graph.builder.Graph` into a validated CompiledGraph.

Every check runs, and every problem is reported in one
:class:`~flowcore.errors.GraphDefinitionError`, so a user fixes a graph in
one round instead of one error at a time.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flowcore._shown import shown
from flowcore.errors import GraphDefinitionError
from flowcore.graph.constants import END, RESERVED_NAMES, START
from flowcore.graph.spec import (
    CallableShape,
    EdgeSpec,
    NodeSpec,
    RouterSpec,
    inspect_callable,
    literal_targets,
)
from flowcore.graph.topology import Topology
from flowcore.state.schema import StateSchema

if TYPE_CHECKING:
    from flowcore.checkpoint.protocol import Checkpointer
    from flowcore.graph.builder import _PendingNode, _PendingRouter
    from flowcore.graph.compiled import CompiledGraph

__all__ = ["compile_graph"]

_NODE_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_NAMESPACES = ("input", "state", "memory", "user")


def _shape_of(func: Any, node: str, cache: dict[Any, CallableShape]) -> CallableShape | str:
    try:
        known = cache.get(func)
    except TypeError:  # an unhashable callable object
        return inspect_callable(func, f"node {shown(node)}")
    if known is not None:
        return known
    shape = inspect_callable(func, f"node {shown(node)}")
    if isinstance(shape, CallableShape):
        cache[func] = shape
    return shape


def compile_graph(
    state_schema: type[Any],
    *,
    name: str,
    version: str | None,
    nodes: Sequence[_PendingNode],
    edges: Sequence[tuple[tuple[str, ...], str]],
    routers: Sequence[_PendingRouter],
    problems: list[str],
    checkpointer: Checkpointer | None = None,
    interrupt_before: Sequence[str] = (),
    interrupt_after: Sequence[str] = (),
) -> CompiledGraph:
    """Validate the declarations and build the immutable compiled graph."""
    from flowcore.graph.compiled import CompiledGraph

    schema: StateSchema | None = None
    try:
        schema = StateSchema.from_type(state_schema)
    except GraphDefinitionError as exc:
        problems.extend(exc.problems)

    node_names = [n.name for n in nodes]
    known = set(node_names)
    specs: list[NodeSpec] = []
    # Graphs often reuse one function for many nodes: read each signature once.
    shapes: dict[Any, CallableShape] = {}
    for index, pending in enumerate(nodes):
        problems.extend(_check_node_name(pending.name))
        shape = _shape_of(pending.func, pending.name, shapes)
        if isinstance(shape, str):
            problems.append(shape)
            shape = CallableShape(is_async=False, takes_context=False)
        if pending.template_error:
            problems.append(f"node {shown(pending.name)} inputs: {pending.template_error}")
        specs.append(
            NodeSpec(  # positional: cheaper than keywords, once per node
                pending.name,
                pending.func,
                shape,
                index,
                pending.template,
                pending.retry,
                pending.timeout,
                pending.output_view,
                pending.destinations,
            )
        )
        for target in pending.destinations or ():
            if target == START:
                problems.append(f"node {shown(pending.name)}: START cannot be a goto destination")
            elif target != END and target not in known:
                problems.append(
                    f"node {shown(pending.name)}: destinations names unknown node "
                    f"{shown(target)}{_suggest(target, known)}"
                )

    edge_specs: list[EdgeSpec] = []
    seen_edges: set[tuple[tuple[str, ...], str]] = set()
    for sources, target in edges:
        # Fast path: a plain edge between known nodes (most edges) needs no checks.
        if len(sources) == 1 and target in known and (sources[0] in known or sources[0] == START):
            if (sources, target) not in seen_edges:
                seen_edges.add((sources, target))
                edge_specs.append(EdgeSpec(sources, target))
            continue
        label = f"edge {' + '.join(sources)} -> {target}"
        bad = False
        for src in sources:
            if src == END:
                problems.append(f"{label}: END cannot be the source of an edge")
                bad = True
            elif src == START and len(sources) > 1:
                problems.append(f"{label}: START cannot be part of a join")
                bad = True
            elif src != START and src not in known:
                problems.append(f"{label}: unknown source node {shown(src)}{_suggest(src, known)}")
                bad = True
        if target == START:
            problems.append(f"{label}: START cannot be the target of an edge")
            bad = True
        elif target != END and target not in known:
            problems.append(
                f"{label}: unknown target node {shown(target)}{_suggest(target, known)}"
            )
            bad = True
        if not bad and (sources, target) not in seen_edges:
            seen_edges.add((sources, target))
            edge_specs.append(EdgeSpec(sources, target))

    router_specs: list[RouterSpec] = []
    for index, pending_router in enumerate(routers):
        spec = _build_router(pending_router, index, known, problems)
        if spec is not None:
            router_specs.append(spec)

    has_entry = any(e.sources == (START,) for e in edge_specs) or any(
        r.source == START for r in router_specs
    )
    if not has_entry:
        problems.append(
            "graph has no entry point: add add_edge(START, '<first node>') "
            "or add_conditional_edges(START, router, ...)"
        )

    topology = Topology(
        node_names,
        edge_specs,
        router_specs,
        {s.name: tuple(t for t in s.destinations if t in known) for s in specs if s.destinations},
    )
    if has_entry:
        for n in node_names:
            if n not in topology.reachable:
                problems.append(
                    f"node {shown(n)} is unreachable from START; connect it with an edge or "
                    "remove it"
                )
    for edge in edge_specs:
        if len(edge.sources) > 1:
            for src in edge.sources:
                if topology.is_back_edge(src, edge.target):
                    problems.append(
                        f"join {' + '.join(edge.sources)} -> {edge.target} closes a cycle; "
                        "a join cannot be a loop's back edge, use a plain or conditional edge"
                    )
                    break  # one report per join, however many of its sources loop

    if schema is not None:
        problems.extend(_check_references(specs, topology, schema, known))

    for option, names in (
        ("interrupt_before", interrupt_before),
        ("interrupt_after", interrupt_after),
    ):
        for n in names:
            if n not in known:
                problems.append(
                    f"{option} names {shown(n)}, which is not a node of this graph; "
                    "use one of the names given to add_node"
                )
    if problems:
        raise GraphDefinitionError(problems, graph=name)
    assert schema is not None
    return CompiledGraph(
        checkpointer=checkpointer,
        interrupt_before=frozenset(interrupt_before),
        interrupt_after=frozenset(interrupt_after),
        name=name,
        version=version or _structural_version(specs, edge_specs, router_specs, schema),
        schema=schema,
        nodes=specs,
        edges=edge_specs,
        routers=router_specs,
        topology=topology,
    )


def _check_node_name(name: str) -> list[str]:
    if name in RESERVED_NAMES:
        return [
            f"node name {shown(name)} is reserved (START, END and the <<ref>> namespaces "
            f"{', '.join(_NAMESPACES)}); rename the node"
        ]
    if not _NODE_NAME.fullmatch(name):
        return [
            f"node name {shown(name)} is not valid: use letters, digits, '_' or '-' so "
            "<<refs>> can name it"
        ]
    return []


def _build_router(
    pending: _PendingRouter, index: int, known: set[str], problems: list[str]
) -> RouterSpec | None:
    source = pending.source
    label = f"conditional edge from {shown(source)}"
    ok = True
    if source == END:
        problems.append(f"{label}: END cannot route anywhere")
        ok = False
    elif source != START and source not in known:
        problems.append(f"{label}: unknown source node {shown(source)}{_suggest(source, known)}")
        ok = False
    shape = inspect_callable(pending.func, f"router of {label}")
    if isinstance(shape, str):
        problems.append(shape)
        return None
    path_map: Mapping[Hashable, str] | None
    raw = pending.path_map
    if raw is None:
        path_map = None
        targets = literal_targets(pending.func)
        if not targets:
            problems.append(
                f"{label}: router {shown(getattr(pending.func, '__name__', pending.func))} has no "
                "declared targets; pass path_map={'key': 'node', ...} or a list of node "
                "names, or annotate its return type as Literal['node_a', 'node_b']"
            )
            ok = False
    elif isinstance(raw, Mapping) and all(isinstance(t, str) for t in raw.values()):
        path_map = dict(raw)
        targets = tuple(dict.fromkeys(path_map.values()))
    elif (
        isinstance(raw, Sequence)
        and not isinstance(raw, str)
        and all(isinstance(t, str) for t in raw)
    ):
        path_map = {t: t for t in raw}
        targets = tuple(dict.fromkeys(raw))
    else:
        problems.append(
            f"{label}: path_map must be a dict or a list of node names (a dict maps each "
            f"route key to a node name string), got {shown(raw)}"
        )
        return None
    if not targets and raw is not None:
        problems.append(f"{label}: path_map is empty; declare at least one target")
        ok = False
    for t in targets:
        if t == START:
            problems.append(f"{label}: START cannot be a route target")
            ok = False
        elif t != END and t not in known:
            problems.append(f"{label}: path map names unknown node {shown(t)}{_suggest(t, known)}")
            ok = False
    if not ok:
        return None
    return RouterSpec(source, pending.func, shape, path_map, tuple(targets), index)


def _check_references(
    specs: Sequence[NodeSpec], topology: Topology, schema: StateSchema, known: set[str]
) -> list[str]:
    problems: list[str] = []
    for spec in specs:
        if spec.inputs is None or spec.inputs.is_static:
            continue
        upstream: frozenset[str] | None = None
        for ref in spec.inputs.references:
            ns = ref.namespace
            where = f"node {shown(spec.name)} input {ref.text}"
            if ns == "state":
                if ref.path and ref.path[0] not in schema:
                    problems.append(
                        f"{where}: state has no key {shown(ref.path[0])} "
                        f"(keys: {', '.join(schema.keys)})"
                    )
            elif ns in ("memory", "user"):
                if ns not in schema:
                    problems.append(
                        f"{where}: the {shown(ns)} namespace reads state[{shown(ns)}]; "
                        f"add a {shown(ns)} key to state schema {schema.name}"
                    )
            elif ns == "input":
                continue
            elif ns in known:
                if upstream is None:
                    upstream = topology.ancestors(spec.name)
                if ns not in upstream:
                    problems.append(
                        f"{where}: node {shown(ns)} is not upstream of {shown(spec.name)}, so its "
                        f"output cannot exist yet; add an edge path {ns} -> {spec.name}"
                    )
            else:
                problems.append(
                    f"{where}: {shown(ns)} is not a node or a namespace "
                    f"({', '.join(_NAMESPACES)}){_suggest(ns, known)}"
                )
    return problems


def _suggest(name: str, known: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean {shown(close[0])}?)" if close else ""


def _structural_version(
    nodes: Sequence[NodeSpec],
    edges: Sequence[EdgeSpec],
    routers: Sequence[RouterSpec],
    schema: StateSchema,
) -> str:
    """A short hash of the graph's shape, so events can tell graph revisions apart."""
    parts = [
        "nodes:" + ",".join(n.name for n in nodes),
        "edges:" + ";".join(f"{'+'.join(e.sources)}>{e.target}" for e in edges),
        "routes:" + ";".join(f"{r.source}>{'|'.join(r.targets)}" for r in routers),
        "state:" + ",".join(schema.keys),
    ]
    gotos = [f"{n.name}>{'|'.join(n.destinations)}" for n in nodes if n.destinations]
    if gotos:  # only then: graphs without destinations keep their version
        parts.append("goto:" + ";".join(gotos))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]
