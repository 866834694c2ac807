"""``Graph``: the mutable builder users declare nodes and edges on."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

from flowcore._shown import shown
from flowcore.errors import ReferenceSyntaxError
from flowcore.graph.policy import RetryPolicy
from flowcore.refs import ValueTemplate

if TYPE_CHECKING:
    from flowcore.checkpoint.protocol import Checkpointer
    from flowcore.graph.compiled import CompiledGraph

__all__ = ["Graph"]


class _PendingNode:
    __slots__ = (
        "destinations",
        "func",
        "inputs",
        "name",
        "output_view",
        "retry",
        "template",
        "template_error",
        "timeout",
    )

    def __init__(
        self,
        name: str,
        func: Callable[..., Any],
        inputs: Mapping[str, Any] | None,
        retry: RetryPolicy | None,
        timeout: float | None,
        output_view: Callable[[Mapping[str, Any]], Any] | None = None,
        destinations: tuple[str, ...] | None = None,
    ) -> None:
        self.name = name
        self.destinations = destinations
        self.output_view = output_view
        self.func = func
        self.inputs = inputs
        self.retry = retry
        self.timeout = timeout
        self.template: ValueTemplate | None = None
        self.template_error: str | None = None
        if inputs is not None:
            try:
                self.template = ValueTemplate.compile(dict(inputs))
            except ReferenceSyntaxError as exc:
                self.template_error = str(exc)


class _PendingRouter:
    __slots__ = ("func", "path_map", "source")

    def __init__(
        self,
        source: str,
        func: Callable[..., Any],
        path_map: Mapping[Hashable, str] | Sequence[str] | None,
    ) -> None:
        self.source = source
        self.func = func
        self.path_map = path_map


class Graph:
    """Declare a graph: a state schema, nodes, edges and conditional edges.

    Nodes are sync or async callables taking ``(state)`` or ``(state, ctx)``
    and returning a partial update (a dict) or None. Mistakes are collected
    and reported together by :meth:`compile`.

    Example:
        >>> from typing import TypedDict
        >>> from flowcore import Graph, START, END
        >>> class State(TypedDict):
        ...     n: int
        >>> g = Graph(State)
        >>> g = g.add_node("inc", lambda s: {"n": s["n"] + 1})
        >>> g = g.add_edge(START, "inc").add_edge("inc", END)
        >>> g.compile().run_sync({"n": 1}).state
        {'n': 2}
    """

    def __init__(self, state_schema: type[Any], *, name: str | None = None) -> None:
        self.state_schema = state_schema
        self.name = name
        self._nodes: dict[str, _PendingNode] = {}
        self._edges: list[tuple[tuple[str, ...], str]] = []
        self._routers: list[_PendingRouter] = []
        self._problems: list[str] = []

    # ------------------------------------------------------------------ nodes
    def add_node(
        self,
        name: str | Callable[..., Any],
        func: Callable[..., Any] | None = None,
        *,
        inputs: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        output_view: Callable[[Mapping[str, Any]], Any] | None = None,
        destinations: Sequence[str] | None = None,
    ) -> Self:
        """Add a node by ``(name, func)``, or by ``func`` alone (named after it).

        ``inputs`` maps names to values that may hold ``<<ns.path>>``
        references; the node reads them resolved from ``ctx.inputs``.
        ``retry`` and ``timeout`` (seconds per attempt) guard the node.
        ``output_view`` picks what ``<<name.path>>`` references to this node
        read out of its update (default: the update itself); block nodes use
        it to expose their outputs rather than the state keys they write.
        ``destinations`` declares the nodes (or END) the node may reach with
        ``Command(goto=...)``: they are drawn by ``to_mermaid``, a goto
        elsewhere is a :class:`~flowcore.errors.RoutingError`, and a declared
        target runs in the superstep after the node, with its static
        successors (an undeclared one starts the next pass, after them).

        Example:
            >>> from typing import TypedDict
            >>> class S(TypedDict):
            ...     x: int
            >>> g = Graph(S).add_node("double", lambda s: {"x": s["x"] * 2})
        """
        if func is None:
            if not callable(name):
                self._problems.append(
                    f"add_node({shown(name)}): no function given; call add_node(name, func)"
                )
                return self
            func = name
            name = getattr(func, "__name__", "")
        if not isinstance(name, str):
            self._problems.append(f"add_node: node name {shown(name)} must be a string")
            return self
        if name in self._nodes:
            self._problems.append(
                f"duplicate node name {shown(name)}: each node needs a unique name"
            )
            return self
        if inputs is not None and not isinstance(inputs, Mapping):
            self._problems.append(
                f"node {shown(name)}: inputs must be a mapping of input names to values, "
                f"got {type(inputs).__name__}"
            )
            inputs = None
        if retry is not None and not isinstance(retry, RetryPolicy):
            self._problems.append(
                f"node {shown(name)}: retry must be a RetryPolicy (or None), got "
                f"{type(retry).__name__}"
            )
            retry = None
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
        ):
            self._problems.append(
                f"node {shown(name)}: timeout must be > 0 seconds (a number, or None), got "
                f"{shown(timeout)}"
            )
        if output_view is not None and not callable(output_view):
            self._problems.append(
                f"node {shown(name)}: output_view must be a function of the node's update"
            )
            output_view = None
        declared: tuple[str, ...] | None = None
        if destinations is not None:
            if isinstance(destinations, str):
                declared = (destinations,)
            elif isinstance(destinations, Sequence) and all(
                isinstance(d, str) for d in destinations
            ):
                declared = tuple(dict.fromkeys(destinations))
            else:
                self._problems.append(
                    f"node {shown(name)}: destinations must be a list of node names (strings), "
                    f"got {shown(destinations)}"
                )
        self._nodes[name] = _PendingNode(name, func, inputs, retry, timeout, output_view, declared)
        return self

    # ------------------------------------------------------------------ edges
    def add_edge(self, source: str | Sequence[str], target: str) -> Self:
        """Run ``target`` after ``source``; a list of sources is a join that waits for all.

        Example:
            >>> from typing import TypedDict
            >>> class S(TypedDict):
            ...     x: int
            >>> g = Graph(S).add_edge(["a", "b"], "c")  # c waits for a and b
        """
        if isinstance(source, str):
            sources: tuple[str, ...] = (source,)
        elif isinstance(source, Sequence) and all(isinstance(s, str) for s in source):
            sources = tuple(source)
        else:
            self._problems.append(
                f"add_edge({shown(source)}, {shown(target)}): the source must be a node name or a "
                "list "
                "of node names (strings)"
            )
            return self
        if not isinstance(target, str):
            self._problems.append(
                f"add_edge({shown(source)}, {shown(target)}): the target must be a node name (a "
                "string)"
            )
            return self
        if not sources:
            self._problems.append(
                f"add_edge(..., {shown(target)}): a join needs at least one source"
            )
            return self
        self._edges.append((sources, target))
        return self

    def add_conditional_edges(
        self,
        source: str,
        router: Callable[..., Any],
        path_map: Mapping[Hashable, str] | Sequence[str] | None = None,
    ) -> Self:
        """After ``source`` runs, ``router(state)`` picks where to go next.

        The router returns a node name, a list of names (run in parallel), or
        END; with ``path_map`` it returns keys of that map instead. The
        possible targets must be declared: by ``path_map`` or by a
        ``Literal[...]`` return annotation on the router.

        Example:
            >>> from typing import TypedDict
            >>> class S(TypedDict):
            ...     ok: bool
            >>> g = Graph(S).add_conditional_edges(
            ...     "check", lambda s: s["ok"], {True: "done", False: "retry"}
            ... )
        """
        if not isinstance(source, str):
            self._problems.append(
                f"add_conditional_edges({shown(source)}, ...): the source must be a node name "
                "(a string) or START"
            )
            return self
        self._routers.append(_PendingRouter(source, router, path_map))
        return self

    def set_entry_point(self, node: str) -> Self:
        """Shorthand for ``add_edge(START, node)``.

        Example:
            >>> from typing import TypedDict
            >>> class S(TypedDict):
            ...     x: int
            >>> g = Graph(S).set_entry_point("first")
        """
        from flowcore.graph.constants import START

        return self.add_edge(START, node)

    def set_finish_point(self, node: str) -> Self:
        """Shorthand for ``add_edge(node, END)``.

        Example:
            >>> from typing import TypedDict
            >>> class S(TypedDict):
            ...     x: int
            >>> g = Graph(S).set_finish_point("last")
        """
        from flowcore.graph.constants import END

        return self.add_edge(node, END)

    # ---------------------------------------------------------------- compile
    def compile(
        self,
        *,
        name: str | None = None,
        version: str | None = None,
        checkpointer: Checkpointer | None = None,
        interrupt_before: Sequence[str] = (),
        interrupt_after: Sequence[str] = (),
    ) -> CompiledGraph:
        """Validate everything and freeze the graph into a reusable :class:`CompiledGraph`.

        Raises :class:`~flowcore.errors.GraphDefinitionError` listing every
        problem found, not just the first. With a ``checkpointer``, runs given
        a ``thread_id`` are saved after every superstep and can be resumed;
        ``interrupt_before`` / ``interrupt_after`` name nodes to pause at.

        Example:
            >>> from typing import TypedDict
            >>> from flowcore import START
            >>> class S(TypedDict):
            ...     x: int
            >>> compiled = Graph(S).add_node("a", lambda s: None).add_edge(START, "a").compile()
            >>> compiled.name
            'graph'
        """
        from flowcore.graph.compiler import compile_graph

        problems = list(self._problems)
        graph_name = name or self.name or "graph"
        if not isinstance(graph_name, str):
            problems.append(f"graph name {shown(graph_name)} must be a string")
            graph_name = "graph"
        if version is not None and not isinstance(version, str):
            problems.append(f"version {shown(version)} must be a string (or None)")
            version = None
        return compile_graph(
            self.state_schema,
            name=graph_name,
            version=version,
            nodes=list(self._nodes.values()),
            edges=list(self._edges),
            routers=list(self._routers),
            problems=problems,
            checkpointer=checkpointer,
            interrupt_before=_node_names("interrupt_before", interrupt_before, problems),
            interrupt_after=_node_names("interrupt_after", interrupt_after, problems),
        )


def _node_names(option: str, names: object, problems: list[str]) -> tuple[str, ...]:
    """``names`` as a tuple of node names; a lone string is one name, not its letters."""
    if isinstance(names, str):
        return (names,)
    if isinstance(names, Sequence | frozenset | set) and all(isinstance(n, str) for n in names):
        return tuple(names)
    problems.append(f"{option} must be a list of node names (strings), got {shown(names)}")
    return ()
