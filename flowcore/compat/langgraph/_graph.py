"""``StateGraph``: LangGraph's graph builder, checked and compiled for flowcore's compat runtime."""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Literal,
    Self,
    get_args,
    get_origin,
    get_type_hints,
)

# typing_extensions' is_typeddict also knows its own TypedDict (typing's does not on 3.11).
from typing_extensions import TypeVar, is_typeddict

from flowcore.compat.langgraph._async_check import has_native_async
from flowcore.compat.langgraph._config_param import warn_misstyped_config
from flowcore.compat.langgraph._error_handlers import (
    DEFAULT_HANDLER_NODE,
    ErrorHandler,
    finish_handlers,
    handler_node_name,
)
from flowcore.compat.langgraph._runnable import runnable_action
from flowcore.compat.langgraph._state import SchemaInfo
from flowcore.compat.langgraph._subgraph_detect import find_subgraph
from flowcore.compat.langgraph._trace_policy import TracePolicy
from flowcore.compat.langgraph._types import END, START, RetryPolicy, TimeoutPolicy
from flowcore.compat.langgraph._warnings import LangGraphDeprecatedSinceV05 as V05
from flowcore.compat.langgraph._warnings import LangGraphDeprecatedSinceV10 as V10
from flowcore.compat.langgraph._warnings import LangGraphDeprecationWarning, warn_deprecated

if TYPE_CHECKING:
    # Only for the annotation: _pregel imports this module.
    from flowcore.compat.langgraph._pregel import CompiledStateGraph

__all__ = ["BranchSpec", "NodeRunnable", "NodeSpec", "StateGraph"]

_RESERVED_CHARS = (":", "|")

_log = logging.getLogger("flowcore.compat.langgraph")


def _warn_compiled(method: str) -> None:
    # LangGraph logs and goes on: compile() took a copy of the nodes and edges, so a
    # graph compiled before keeps its shape and a later compile() sees the change.
    _log.warning(
        "%s() on a StateGraph that was already compiled: graphs compiled before keep "
        "their old shape; call compile() again to include the change",
        method,
    )


@dataclass(slots=True)
class NodeSpec:
    """One node as declared: its function (or compiled subgraph) and options."""

    name: str
    action: Any
    input_schema: Any
    defer: bool = False
    retry: RetryPolicy | Sequence[RetryPolicy] | None = None
    metadata: dict[str, Any] | None = None
    destinations: tuple[str, ...] | None = None
    cache_policy: Any = None
    timeout: TimeoutPolicy | None = None
    # Runs in the node's place when it fails (see _error_handlers).
    error_handler: ErrorHandler | None = None
    trace_policy: TracePolicy | None = None
    # Edge labels of a ``destinations`` dict (node name -> label), for get_graph().
    destination_labels: dict[str, str] | None = None

    @property
    def runnable(self) -> NodeRunnable:
        """What runs the node, as LangGraph's builder shows it: ``.func`` is what was added.

        Example:
            >>> NodeSpec("a", len, None).runnable.func is len
            True
        """
        return NodeRunnable(self.action, self.name)

    def copy(self, update: dict[str, Any]) -> NodeSpec:
        """A copy of this node with the fields ``update`` names replaced (``{}``: as is)."""
        return dataclasses.replace(self, **update)

    @property
    def subgraphs(self) -> list[Any]:
        """The compiled graph this node runs, if any, as a list (see ``_subgraph_detect``).

        Example:
            >>> NodeSpec("a", len, None).subgraphs
            []
        """
        found = find_subgraph(self.action)
        return [] if found is None else [found]


@dataclass(frozen=True, slots=True)
class NodeRunnable:
    """The callable of a declared node (``builder.nodes[name].runnable``)."""

    func: Any
    name: str


@dataclass(slots=True)
class BranchSpec:
    """A conditional edge: ``path`` picks the next node(s), through ``path_map`` if given."""

    source: str
    path: Callable[..., Any]
    path_map: dict[Hashable, str] | None
    name: str
    ends: tuple[str, ...] | None = field(default=None)
    input_schema: Any = field(default=None)
    """The router's own state schema (its first parameter's type), read in place of the node's."""


def _literal_targets(func: Callable[..., Any]) -> tuple[str, ...] | None:
    try:
        hints = get_type_hints(func)
    except Exception:
        return None
    ret = hints.get("return")
    if ret is None:
        return None
    if get_origin(ret) is Literal:
        return tuple(str(a) for a in get_args(ret))
    return None


def _node_name(action: Any) -> str:
    name = getattr(action, "name", None) or getattr(action, "__name__", None)
    if name is None and callable(action) and not isinstance(action, type):
        # A callable object is named after its class, as LangGraph names it.
        name = type(action).__name__
    if not isinstance(name, str) or not name or name == "<lambda>":
        raise ValueError(
            "add_node(callable) needs a named function; pass the name: add_node('name', fn)"
        )
    return name


def _first_param_schema(action: Any, default: Any) -> Any:
    """A node's own input schema: the type hint of its first parameter, if it is a schema."""
    func = action
    if not (inspect.isfunction(func) or inspect.ismethod(func)):
        func = getattr(action, "__call__", None)  # noqa: B004 - callables objects
        if func is None:
            return default
    try:
        params = list(inspect.signature(func).parameters.values())
        hints = get_type_hints(func)
    except (TypeError, ValueError, NameError):
        return default
    if not params:
        return default
    hint = hints.get(params[0].name)
    if hint is None:
        return default
    if isinstance(hint, type) and (
        is_typeddict(hint) or dataclasses.is_dataclass(hint) or hasattr(hint, "model_fields")
    ):
        return hint
    return default


StateT = TypeVar("StateT", default=Any)
ContextT = TypeVar("ContextT", default=None)
InputT = TypeVar("InputT", default=StateT)
OutputT = TypeVar("OutputT", default=StateT)


def _legacy_arg(
    given: dict[str, Any],
    old: str,
    new: str,
    since: Callable[[str], LangGraphDeprecationWarning],
) -> Any:
    """Pop the deprecated keyword ``old`` from ``given``, warning that ``new`` replaces it."""
    value = given.pop(old, None)
    if value is not None:
        warn_deprecated(
            since,
            f"`{old}` is deprecated and will be removed. Please use `{new}` instead.",
            stacklevel=3,
        )
    return value


class StateGraph(Generic[StateT, ContextT, InputT, OutputT]):
    """A graph whose nodes read and update one shared state; mirrors LangGraph's ``StateGraph``.

    Example:
        >>> from typing import TypedDict
        >>> class S(TypedDict):
        ...     n: int
        >>> g = StateGraph(S)
        >>> _ = g.add_node("inc", lambda s: {"n": s["n"] + 1})
        >>> _ = g.add_edge(START, "inc").add_edge("inc", END)
        >>> g.compile().invoke({"n": 1})
        {'n': 2}
    """

    def __init__(
        self,
        state_schema: Any = None,
        context_schema: Any = None,
        *,
        input_schema: Any = None,
        output_schema: Any = None,
        **legacy: Any,
    ) -> None:
        if state_schema is None:
            raise ValueError("StateGraph needs a state_schema (a TypedDict, dataclass or model)")
        config_schema = _legacy_arg(legacy, "config_schema", "context_schema", V10)
        if context_schema is None:
            context_schema = config_schema
        legacy_input = _legacy_arg(legacy, "input", "input_schema", V05)
        legacy_output = _legacy_arg(legacy, "output", "output_schema", V05)
        input_schema = input_schema if input_schema is not None else legacy_input
        output_schema = output_schema if output_schema is not None else legacy_output
        if legacy:
            raise TypeError(f"StateGraph() got unexpected arguments: {sorted(legacy)}")
        self.state_schema = state_schema
        self.context_schema = context_schema
        self.input_schema = input_schema if input_schema is not None else state_schema
        self.output_schema = output_schema if output_schema is not None else state_schema
        self.schemas: dict[Any, SchemaInfo] = {}
        for schema in (state_schema, self.input_schema, self.output_schema):
            self._add_schema(schema)
        self.nodes: dict[str, NodeSpec] = {}
        self.edges: set[tuple[str, str]] = set()
        self.edge_order: list[tuple[str, str]] = []
        self.waiting_edges: list[tuple[tuple[str, ...], str]] = []
        self.branches: dict[str, dict[str, BranchSpec]] = {}
        self.compiled = False
        # Graphs often reuse one function for many nodes, and reading its type hints costs
        # far more than the rest of add_node. Keyed by id, with the action kept alive so the
        # id cannot be reused, because callable objects need not be hashable.
        self._param_schemas: dict[int, tuple[Any, Any]] = {}
        # set_node_defaults(): applied at compile() to the nodes that set none of their own.
        self._node_defaults: dict[str, Any] = {}

    @property
    def channels(self) -> dict[str, Any]:
        """The state channels declared so far, by key (``langgraph.channels`` classes)."""
        from flowcore.compat.langgraph._channel_view import builder_channels

        return builder_channels(self)

    @property
    def managed(self) -> dict[str, Any]:
        """The state keys whose values the run computes (``RemainingSteps``, ``IsLastStep``).

        Example:
            >>> StateGraph(dict).managed
            {}
        """
        found: dict[str, Any] = {}
        for info in self.schemas.values():
            found.update(info.managed)
        return found

    def _add_schema(self, schema: Any) -> None:
        if schema not in self.schemas:
            self.schemas[schema] = SchemaInfo(schema)

    # --------------------------------------------------------------- nodes
    def add_node(
        self,
        node: Any,
        action: Any = None,
        *,
        defer: bool = False,
        metadata: dict[str, Any] | None = None,
        input_schema: Any = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        cache_policy: Any = None,
        destinations: dict[str, str] | tuple[str, ...] | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
        error_handler: Any = None,
        trace_policy: TracePolicy | None = None,
        **legacy: Any,
    ) -> Self:
        """Add a node: ``add_node("name", fn)`` or ``add_node(fn)`` (named after ``fn``).

        ``timeout`` (seconds, a ``timedelta`` or a :class:`TimeoutPolicy`) caps
        each attempt of the node, which must then be async. ``error_handler``
        runs in the node's place when it fails (see ``_error_handlers``).
        ``trace_policy``
        changes what tracers record of the node's input and output (see
        :class:`TracePolicy`).

        Example:
            >>> # graph.add_node("summarize", summarize, retry_policy=RetryPolicy())
        """
        if legacy:
            if "retry" in legacy:
                retry_policy = _legacy_arg(legacy, "retry", "retry_policy", V05)
            if "input" in legacy:
                input_schema = _legacy_arg(legacy, "input", "input_schema", V05)
            if legacy:
                raise TypeError(f"add_node() got unexpected arguments: {sorted(legacy)}")
        if not isinstance(node, str):
            action, node = node, _node_name(node)
        warn_misstyped_config(action)
        # A LangChain runnable (a tool, a chain) runs through its own ainvoke.
        action = runnable_action(action) or action
        # Checked now, so a bad value names the add_node call that gave it.
        timeout_policy = TimeoutPolicy.coerce(timeout)
        if action is None:
            raise RuntimeError(f"add_node({node!r}) needs an action: a function or a graph")
        if self.compiled:
            _warn_compiled("add_node")
        if node in self.nodes:
            raise ValueError(f"Node `{node}` already present.")
        if node in (START, END):
            raise ValueError(f"Node `{node}` is reserved.")
        if ":" in node or "|" in node:
            for char in _RESERVED_CHARS:
                if char in node:
                    raise ValueError(
                        f"'{char}' is a reserved character and is not allowed in node names."
                    )
        schema = input_schema
        if schema is None:
            cached = self._param_schemas.get(id(action))
            if cached is None:
                cached = (action, _first_param_schema(action, self.state_schema))
                self._param_schemas[id(action)] = cached
            schema = cached[1]
        if schema not in self.schemas:
            self.schemas[schema] = SchemaInfo(schema)
        # A dict of destinations maps node names to edge labels: only the names matter here.
        dests = tuple(destinations) if destinations is not None else None
        handler = None
        if error_handler is not None:
            handler_name = handler_node_name(node)
            if handler_name in self.nodes:
                raise ValueError(
                    f"Auto-generated error handler node `{handler_name}` already exists."
                )
            handler = ErrorHandler(handler_name, error_handler)
        self.nodes[node] = NodeSpec(
            node,
            action,
            schema,
            defer,
            retry_policy,
            metadata,
            dests,
            cache_policy,
            timeout_policy,
            handler,
            trace_policy,
            dict(destinations) if isinstance(destinations, dict) else None,
        )
        return self

    def set_node_defaults(
        self,
        *,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        cache_policy: Any = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
        error_handler: Any = None,
    ) -> Self:
        """Policies for every node that sets none of its own (applied at ``compile()``).

        ``error_handler`` handles the failures of every node without a handler
        of its own; handlers never handle each other. Retry and timeout
        defaults apply to handlers too.

        May be called before or after ``add_node``; a later call replaces the
        defaults it names. Returns the builder, for chaining.

        Example:
            >>> # StateGraph(State).set_node_defaults(timeout=30).add_node("a", a)
        """
        if self.compiled:
            raise RuntimeError("set_node_defaults() on a graph that has already been compiled.")
        if retry_policy is not None:
            self._node_defaults["retry"] = retry_policy
        if cache_policy is not None:
            self._node_defaults["cache_policy"] = cache_policy
        timeout_policy = TimeoutPolicy.coerce(timeout)
        if timeout_policy is not None:
            self._node_defaults["timeout"] = timeout_policy
        if error_handler is not None:
            self._node_defaults["error_handler"] = ErrorHandler(DEFAULT_HANDLER_NODE, error_handler)
        return self

    def _apply_node_defaults(self) -> None:
        for spec in self.nodes.values():
            for key, value in self._node_defaults.items():
                if getattr(spec, key) is None:
                    setattr(spec, key, value)
        finish_handlers(self.nodes, self._node_defaults)

    def _check_timeouts(self) -> None:
        for spec in self.nodes.values():
            if spec.timeout is None:
                continue
            if not has_native_async(spec.action):
                raise ValueError(
                    f"Node {spec.name!r} has a timeout, but timeouts are only supported for "
                    "async nodes: a sync function cannot be stopped once it runs. Make it "
                    "`async def`, or remove its timeout."
                )

    def add_edge(self, start_key: str | Sequence[str], end_key: str) -> Self:
        """``start -> end``; a list of starts is a join that waits for all of them.

        Example:
            >>> # graph.add_edge(["search", "lookup"], "answer")
        """
        if self.compiled:
            _warn_compiled("add_edge")
        if isinstance(start_key, str):
            if start_key == END:
                raise ValueError("END cannot be a start node")
            if end_key == START:
                raise ValueError("START cannot be an end node")
            if (start_key, end_key) not in self.edges:
                self.edges.add((start_key, end_key))
                self.edge_order.append((start_key, end_key))
            return self
        starts = tuple(start_key)
        for start in starts:
            if start == END:
                raise ValueError("END cannot be a start node")
            if start not in self.nodes and start != START:
                raise ValueError(f"Need to add_node `{start}` first")
        if end_key == START:
            raise ValueError("START cannot be an end node")
        if end_key != END and end_key not in self.nodes:
            raise ValueError(f"Need to add_node `{end_key}` first")
        if len(starts) == 1:
            return self.add_edge(starts[0], end_key)
        self.waiting_edges.append((starts, end_key))
        return self

    def add_conditional_edges(
        self,
        source: str,
        path: Callable[..., Any],
        path_map: dict[Hashable, str] | list[str] | None = None,
    ) -> Self:
        """After ``source`` runs, ``path(state)`` picks the next node(s) (names, Sends or END).

        Example:
            >>> # graph.add_conditional_edges("check", route, {"ok": "write", "bad": END})
        """
        if self.compiled:
            _warn_compiled("add_conditional_edges")
        mapping: dict[Hashable, str] | None
        if isinstance(path_map, dict):
            mapping = dict(path_map)
        elif isinstance(path_map, list):
            mapping = {name: name for name in path_map}
        else:
            mapping = None
        name = getattr(path, "__name__", None) or "condition"
        if name == "<lambda>":
            name = "condition"
        branches = self.branches.setdefault(source, {})
        if name in branches:
            raise ValueError(f"Branch with name `{name}` already exists for node `{source}`")
        ends = tuple(mapping.values()) if mapping is not None else _literal_targets(path)
        schema = _first_param_schema(path, None)
        if schema is not None:
            # Its keys become channels, as a node's input schema's do.
            self._add_schema(schema)
        branches[name] = BranchSpec(source, path, mapping, name, ends, schema)
        return self

    def add_sequence(self, nodes: Sequence[Any]) -> Self:
        """Add nodes and chain them with edges, in order.

        Example:
            >>> # graph.add_sequence([fetch, parse, ("store", save)])
        """
        if not nodes:
            raise ValueError("Sequence requires at least one node.")
        previous: str | None = None
        for item in nodes:
            if isinstance(item, tuple) and len(item) == 2:
                name, action = item
                self.add_node(name, action)
            else:
                name = _node_name(item)
                self.add_node(item)
            if previous is not None:
                self.add_edge(previous, name)
            previous = name
        return self

    def set_entry_point(self, key: str) -> Self:
        """Same as ``add_edge(START, key)``."""
        return self.add_edge(START, key)

    def set_conditional_entry_point(
        self, path: Callable[..., Any], path_map: dict[Hashable, str] | list[str] | None = None
    ) -> Self:
        """Same as ``add_conditional_edges(START, path, path_map)``."""
        return self.add_conditional_edges(START, path, path_map)

    def set_finish_point(self, key: str) -> Self:
        """Same as ``add_edge(key, END)``."""
        return self.add_edge(key, END)

    # -------------------------------------------------------------- compile
    def validate(self, interrupt: Sequence[str] | None = None) -> None:
        """Raise ``ValueError`` naming the first thing that makes the graph unrunnable."""
        nodes = self.nodes
        sources = {s for s, _ in self.edges}
        for starts, _ in self.waiting_edges:
            sources.update(starts)
        sources.update(self.branches)
        # Set differences find the unknown names at C speed; the loops below only run to
        # name the first one in the order the checks have always reported.
        unknown = sources.difference(nodes)
        unknown.discard(START)
        if unknown:
            for source in sources:
                if source in unknown:
                    raise ValueError(f"Found edge starting at unknown node '{source}'")
        if START not in sources:
            raise ValueError(
                "Graph must have an entrypoint: add at least one edge from START to another node"
            )
        targets = {t for _, t in self.edges}
        targets.update(t for _, t in self.waiting_edges)
        for source, branches in self.branches.items():
            for branch in branches.values():
                if branch.ends is not None:
                    for end in branch.ends:
                        if end != END and end not in nodes:
                            raise ValueError(
                                f"At '{source}' node, '{branch.name}' branch found unknown "
                                f"target '{end}'"
                            )
                        targets.add(end)
                else:
                    targets.add(END)
                    targets.update(nodes)
        for node in nodes.values():
            if node.destinations:
                targets.update(node.destinations)
        unknown = targets.difference(nodes)
        unknown.discard(END)
        if unknown:
            for target in targets:
                if target in unknown:
                    raise ValueError(f"Found edge ending at unknown node `{target}`")
        # LangGraph lists error handlers as nodes, so they may be named here; a handler
        # runs within its failed node's task, so no step starts at one.
        handlers = {spec.error_handler.name for spec in self.nodes.values() if spec.error_handler}
        for name in interrupt or ():
            if name not in self.nodes and name != "*" and name not in handlers:
                raise ValueError(f"Interrupt node `{name}` not found")

    def compile(
        self,
        checkpointer: Any = None,
        *,
        cache: Any = None,
        store: Any = None,
        interrupt_before: Sequence[str] | Literal["*"] | None = None,
        interrupt_after: Sequence[str] | Literal["*"] | None = None,
        debug: bool = False,
        name: str | None = None,
        transformers: Sequence[Any] | None = None,
    ) -> CompiledStateGraph:
        """Check the graph and return a runnable ``CompiledStateGraph``.

        ``transformers``: v3 stream transformer classes (or scope factories) every
        ``stream_events(version="v3")`` run of the graph adds to the built-in ones.

        ``checkpointer`` saves every superstep of runs that name a thread in
        ``config["configurable"]["thread_id"]``; ``interrupt_before`` /
        ``interrupt_after`` pause around the named nodes (``"*"``: all).

        Example:
            >>> # app = graph.compile(checkpointer=InMemorySaver())
        """
        from flowcore.compat.langgraph._pregel import CompiledStateGraph
        from flowcore.compat.langgraph._savers import ensure_saver

        ensure_saver(checkpointer)
        before = list(self.nodes) if interrupt_before == "*" else list(interrupt_before or ())
        after = list(self.nodes) if interrupt_after == "*" else list(interrupt_after or ())
        self._apply_node_defaults()
        self._check_timeouts()
        self.validate([*before, *after])
        self.compiled = True
        compiled = CompiledStateGraph(
            self,
            checkpointer=checkpointer,
            store=store,
            cache=cache,
            interrupt_before=tuple(before),
            interrupt_after=tuple(after),
            name=name or "LangGraph",
            debug=debug,
        )
        if transformers:
            compiled.stream_transformers = tuple(transformers)
        return compiled
