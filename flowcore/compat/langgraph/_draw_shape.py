"""Work out the edges LangGraph draws for a compiled graph.

LangGraph finds a graph's edges by dry-running its steps with no state:
every node writes its fixed edges each time it runs, and its conditional
edges (branches with known ends, ``Command`` destinations) once, as
declared. Which node triggered which, step by step, gives the edges; nodes
nothing follows get an edge to END. This module does the same dry run over
a :class:`StateGraph` builder's edges, so the drawing matches LangGraph's
edge for edge and in the same order.
"""

from __future__ import annotations

import sys
import typing
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Union, get_args, get_origin

from flowcore.compat.langgraph._draw import DrawableGraph
from flowcore.compat.langgraph._types import END, START

if TYPE_CHECKING:
    from flowcore.compat.langgraph._graph import StateGraph

__all__ = ["draw_builder", "node_kind"]

_STEP_LIMIT = 250
_CALLABLE = ("langgraph", "_internal", "_runnable", "RunnableCallable")


class _Edge(NamedTuple):
    source: str
    target: str
    conditional: bool
    data: str | None


class _Trigger(NamedTuple):
    """A write seen from the reader's side: (channel or source, conditional, label)."""

    name: str
    conditional: bool
    data: str | None


def _order(item: tuple[Any, ...]) -> tuple[Any, ...]:
    # Labels may be None next to strings; None sorts first, as it cannot tie otherwise.
    return tuple((v is not None, v) if i == len(item) - 1 else v for i, v in enumerate(item))


@dataclass(slots=True)
class _Channels:
    """The trigger channels of the dry run: ``branch:to:X`` and ``join:a+b:X``."""

    deferred: frozenset[str]
    joins: dict[str, frozenset[str]]
    waiting: dict[str, str] = field(default_factory=dict)
    ready: set[str] = field(default_factory=set)
    barriers: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    held: set[str] = field(default_factory=set)

    def target(self, channel: str) -> str:
        return channel.rsplit(":", 1)[-1]

    def apply(self, writes: Iterable[tuple[str, str]]) -> None:
        """Apply one step's writes; ``ready`` becomes the channels that now trigger."""
        self.ready = set()
        for channel, value in writes:
            if channel in self.joins:
                self.barriers[channel].add(value)
                if self.barriers[channel] >= self.joins[channel]:
                    if self.target(channel) in self.deferred:
                        self.held.add(channel)
                    else:
                        self.ready.add(channel)
            elif channel.startswith("branch:to:"):
                if self.target(channel) in self.deferred:
                    self.held.add(channel)
                else:
                    self.ready.add(channel)
        if not self.ready and self.held:
            self.ready, self.held = set(self.held), set()

    def consume(self, channel: str) -> None:
        self.barriers.pop(channel, None)


@dataclass(slots=True)
class _Node:
    """What a node writes when it runs in the dry run."""

    fixed: list[str] = field(default_factory=list)
    joins: list[str] = field(default_factory=list)
    static: list[tuple[tuple[str, str | None], ...]] = field(default_factory=list)
    triggers: set[str] = field(default_factory=set)


def command_targets(action: Any) -> tuple[str, ...] | None:
    """The targets of a node returning ``Command[Literal[...]]``, from its annotations."""
    func = getattr(action, "func", action)
    try:
        hints = typing.get_type_hints(func)
    except Exception:
        return None
    ret = hints.get("return")
    if ret is None:
        return None
    options = get_args(ret) if get_origin(ret) is Union else (ret,)
    for option in options:
        origin = get_origin(option)
        if getattr(origin, "__name__", None) != "Command":
            continue
        args = get_args(option)
        if args and get_origin(args[0]) is Literal:
            return tuple(str(a) for a in get_args(args[0]))
    return None


def _plan(builder: StateGraph) -> tuple[dict[str, _Node], dict[str, frozenset[str]]]:
    plan: dict[str, _Node] = {START: _Node()}
    for name in builder.nodes:
        plan[name] = _Node(triggers={f"branch:to:{name}"})
    for source, target in builder.edge_order:
        if target != END:
            plan[source].fixed.append(f"branch:to:{target}")
    joins: dict[str, frozenset[str]] = {}
    for starts, end in builder.waiting_edges:
        if end == END:
            continue
        channel = f"join:{'+'.join(starts)}:{end}"
        joins[channel] = frozenset(starts)
        plan[end].triggers.add(channel)
        for start in starts:
            plan[start].joins.append(channel)
    for name, spec in builder.nodes.items():
        dests = spec.destinations
        if dests is None:
            dests = command_targets(spec.action)
        if dests:
            labels: Mapping[str, str | None] = spec.destination_labels or {}
            plan[name].static.append(tuple((d, labels.get(d)) for d in dests))
    for source, branches in builder.branches.items():
        for branch in branches.values():
            if branch.path_map is not None:
                pairs = tuple((t, str(k)) for k, t in branch.path_map.items())
            elif branch.ends is not None:
                pairs = tuple((t, str(t)) for t in branch.ends)
            else:
                continue
            plan[source].static.append(pairs)
    return plan, joins


def _dry_run(builder: StateGraph) -> tuple[set[_Edge], list[str], dict[str, set[_Trigger]]]:
    """Run the graph's steps without state; the edges, START's followers, last sources."""
    plan, joins = _plan(builder)
    deferred = frozenset(n for n, s in builder.nodes.items() if s.defer)
    channels = _Channels(deferred, joins)
    edges: set[_Edge] = set()
    declared_seen: set[tuple[str, int]] = set()
    declared: dict[str, set[_Trigger]] = defaultdict(set)
    sources: dict[str, set[_Trigger]] = {}
    step_sources: dict[str, set[_Trigger]] = {}
    tasks: dict[str, set[str]] = {START: {"__start__"}}
    # START itself runs first: its writes are the entry edges.
    first = True
    start_tasks: list[str] = []
    for _ in range(-1, _STEP_LIMIT):
        if not tasks:
            break
        conditionals: dict[tuple[str, str], str | None] = {}
        writes: dict[str, list[tuple[str, str]]] = {}
        for name in tasks:
            node = plan[name]
            out = [(c, "") for c in node.fixed] + [(c, name) for c in node.joins]
            for index, pairs in enumerate(node.static):
                if (name, index) in declared_seen:
                    continue
                declared_seen.add((name, index))
                for target, label in pairs:
                    if target == END:
                        edges.add(_Edge(name, END, True, label))
                        continue
                    conditionals[(name, f"branch:to:{target}")] = label
                    declared[name].add(_Trigger(f"branch:to:{target}", True, label))
                    out.append((f"branch:to:{target}", ""))
            writes[name] = out
        step_sources = {}
        for name, out in writes.items():
            found = {
                _Trigger(c, (name, c) in conditionals, conditionals.get((name, c))) for c, _ in out
            }
            step_sources[name] = found | declared.get(name, set())
        sources.update(step_sources)
        by_trigger: dict[str, set[_Trigger]] = defaultdict(set)
        for source, triggers in sources.items():
            for trigger, cond, label in triggers:
                by_trigger[trigger].add(_Trigger(source, cond, label))
        for name in tasks:
            for channel in tasks[name]:
                channels.consume(channel)
        channels.apply(w for out in writes.values() for w in out)
        tasks = {}
        for name, node in plan.items():
            fired = node.triggers & channels.ready
            if fired and name != START:
                tasks[name] = fired
        if first:
            start_tasks, first = list(tasks), False
        for name, fired in tasks.items():
            added = False
            for trigger in sorted(fired):
                for source, cond, label in sorted(by_trigger[trigger], key=_order):
                    edges.add(_Edge(source, name, cond, label))
                    if (trigger, cond, label) in step_sources.get(source, set()):
                        added = True
                    else:
                        sources[source].discard(_Trigger(trigger, cond, label))
            if not added:
                for source in step_sources:
                    edges.add(_Edge(source, name, True, None))
    return edges, start_tasks, step_sources


def node_kind(action: Any) -> tuple[str, ...]:
    """The class path LangGraph's JSON gives for what runs in a node."""
    from flowcore.compat.langgraph._pregel import CompiledStateGraph
    from flowcore.compat.langgraph._pregel_run import _Configured
    from flowcore.compat.langgraph._tool_node import ToolNode

    if isinstance(action, CompiledStateGraph | _Configured):
        return ("langgraph", "graph", "state", "CompiledStateGraph")
    if isinstance(action, ToolNode):
        # The public class it stands in for, as for a compiled graph above.
        return ("langgraph", "prebuilt", "tool_node", "ToolNode")
    wrapped = getattr(action, "__wrapped_runnable__", None)
    core = sys.modules.get("langchain_core.runnables")
    if wrapped is not None and core is not None and isinstance(wrapped, core.Runnable):
        cls = type(wrapped)
        lc_id = getattr(wrapped, "lc_id", None)
        if callable(lc_id) and isinstance(wrapped, core.RunnableSerializable):
            return tuple(lc_id())
        return (*cls.__module__.split("."), cls.__name__)
    return _CALLABLE


def _metadata(builder: StateGraph, name: str, graph: Any) -> dict[str, Any] | None:
    spec = builder.nodes[name]
    found = dict(spec.metadata or {})
    if spec.defer:
        found["defer"] = True
    before = _names(getattr(graph, "interrupt_before_nodes", ()), builder)
    after = _names(getattr(graph, "interrupt_after_nodes", ()), builder)
    if name in before and name in after:
        found["__interrupt"] = "before,after"
    elif name in before:
        found["__interrupt"] = "before"
    elif name in after:
        found["__interrupt"] = "after"
    tools = getattr(
        getattr(spec.action, "__wrapped_runnable__", spec.action), "tools_by_name", None
    )
    if isinstance(tools, Mapping) and tools:
        found["__tools"] = list(tools)
    return found or None


def _names(chosen: Any, builder: StateGraph) -> Sequence[str]:
    if chosen == "*" or chosen == ("*",):
        return list(builder.nodes)
    return list(chosen or ())


def draw_builder(
    builder: StateGraph, graph: Any = None, subgraphs: Mapping[str, DrawableGraph] | None = None
) -> DrawableGraph:
    """The drawable graph of ``builder`` (compiled as ``graph``), with ``subgraphs`` inlined."""
    edges, start_tasks, last_sources = _dry_run(builder)
    drawn = DrawableGraph()
    drawn.add_node(START, kind=_CALLABLE)
    for name, spec in builder.nodes.items():
        drawn.add_node(name, kind=node_kind(spec.action), metadata=_metadata(builder, name, graph))
    del start_tasks  # START is always a node here, so its edges come from the dry run.

    def add(source: str, target: str, data: str | None = None, cond: bool = False) -> None:
        if any(e.source == source and e.target == target for e in drawn.edges):
            return
        if target == END and END not in drawn.nodes:
            drawn.add_node(END)
        drawn.add_edge(source, target, data, cond)

    for source, target, cond, label in sorted(edges, key=_order):
        add(source, target, label if label != target else None, cond)
    ends = {t for _, t, _, _ in edges if t != END} - {s for s, _, _, _ in edges}
    if ends:
        for source in sorted(ends):
            add(source, END)
    elif len(last_sources) == 1 and not any(t == END for _, t, _, _ in edges):
        for source in sorted(last_sources):
            add(source, END, cond=True)
    for name, sub in (subgraphs or {}).items():
        _inline(drawn, name, sub)
    return drawn


def _inline(drawn: DrawableGraph, name: str, sub: DrawableGraph) -> None:
    if len(sub.nodes) <= 1 or name not in drawn.nodes:
        return
    if sub.first_node() is None or sub.last_node() is None:
        return
    sub.trim_first_node()
    sub.trim_last_node()
    drawn.nodes.pop(name)
    first, last = drawn.extend(sub, prefix=name)
    for index, edge in enumerate(drawn.edges):
        if edge.source == name and last is not None:
            edge = edge._replace(source=last.id)
        if edge.target == name and first is not None:
            edge = edge._replace(target=first.id)
        drawn.edges[index] = edge
