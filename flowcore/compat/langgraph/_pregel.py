"""``CompiledStateGraph``: invoke, stream, inspect and edit runs of a LangGraph-style graph."""

from __future__ import annotations

import copy
import functools
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flowcore.compat.langgraph._batch import BatchCalls
from flowcore.compat.langgraph._cache import NodeCache
from flowcore.compat.langgraph._channels import (
    MISSING,
    BinaryOperatorAggregate,
    Channel,
    EphemeralValue,
    LastValue,
    LastValueAfterFinish,
    NamedBarrierValue,
    read_available,
)
from flowcore.compat.langgraph._delta import DeltaValue
from flowcore.compat.langgraph._draw import DrawableGraph
from flowcore.compat.langgraph._graph import BranchSpec, NodeSpec, StateGraph
from flowcore.compat.langgraph._input_channel import InputValue
from flowcore.compat.langgraph._json_schemas import JsonSchemaCalls
from flowcore.compat.langgraph._loop import (
    INTERRUPT,
    Task,
)
from flowcore.compat.langgraph._node import (
    TASKS,
    branch_channel,
    describe_callable,
    target_writes,
    update_writes,
)
from flowcore.compat.langgraph._planner import shown_path
from flowcore.compat.langgraph._pregel_helpers import (
    _AS_VALUE,
    _FINISHABLE,
    _INJECTED,
    _ONE_STEP,
    _PLAIN,
    _SNAPSHOTS,
    _UNKNOWN,
    _VALUE_KEPT,
    DEFAULT_RECURSION_LIMIT,
    _interrupt_plain,
    _role,
    _send_from,
    _send_plain,
    _snapshot_kind,
    _Topic,
)
from flowcore.compat.langgraph._pregel_run import Running
from flowcore.compat.langgraph._pregel_state import StateReading
from flowcore.compat.langgraph._pregel_update import StateUpdating
from flowcore.compat.langgraph._run_metadata import shown_configurable
from flowcore.compat.langgraph._runnable import as_runnable
from flowcore.compat.langgraph._state import SchemaInfo
from flowcore.compat.langgraph._types import (
    END,
    OVERWRITE,
    ROOT,
    START,
    Interrupt,
    Overwrite,
    Send,
)

__all__ = ["DEFAULT_RECURSION_LIMIT", "CompiledStateGraph"]


# Channel classes whose snapshot() of an empty channel is MISSING: the run's input
# (empty after the first step) and its Sends (empty between fan-outs).
_EMPTY_UNSTORED: frozenset[type] = frozenset({InputValue, _Topic})


class CompiledStateGraph(BatchCalls, JsonSchemaCalls, StateReading, StateUpdating, Running):
    """A compiled ``StateGraph``: LangGraph's run API on flowcore's compat runtime.

    Example:
        >>> # app = graph.compile(checkpointer=InMemorySaver())
        >>> # app.invoke({"n": 1}, {"configurable": {"thread_id": "t1"}})
    """

    # What stream() streams when no stream_mode is given (a low-level Pregel: "values").
    stream_mode = "updates"
    # Seconds one superstep's tasks may run before the run fails with TimeoutError.
    step_timeout: float | None = None
    # compile(transformers=...): the v3 stream transformers every stream_events run adds.
    stream_transformers: tuple[Any, ...] = ()

    def __init__(
        self,
        builder: StateGraph[Any, Any, Any, Any],
        *,
        checkpointer: Any,
        store: Any,
        cache: Any = None,
        interrupt_before: tuple[str, ...],
        interrupt_after: tuple[str, ...],
        name: str,
        debug: bool,
    ) -> None:
        self.builder = builder
        self.checkpointer = checkpointer if checkpointer not in (False, True) else None
        # checkpointer=True: as a subgraph, one history per parent thread (see _history_ns).
        self.own_history = checkpointer is True
        # checkpointer=False: never a subgraph with checkpoints (see _subgraph_detect).
        self.opted_out = checkpointer is False
        self.store = store
        self.cache = NodeCache(cache) if cache is not None else None
        self.interrupt_before_nodes = interrupt_before
        self.interrupt_after_nodes = interrupt_after
        self.name = name
        self.debug = debug
        self.default_recursion_limit = DEFAULT_RECURSION_LIMIT
        self.nodes: dict[str, NodeSpec] = dict(builder.nodes)
        self.node_order: list[str] = [START, *builder.nodes]
        self.infos: dict[Any, SchemaInfo] = dict(builder.schemas)
        self.state_info = self.infos[builder.state_schema]
        self.input_keys = self.infos[builder.input_schema].keys
        self.output_keys = self.infos[builder.output_schema].keys
        self._channel_makers: dict[str, Callable[[], Channel]] = {}
        # Each channel's role (one-step, finishable), recorded with its maker so that
        # compiling never builds a channel only to look at its class.
        self._roles: dict[str, tuple[bool, bool]] = {}
        self.state_keys: list[str] = []
        for info in self.infos.values():
            for key in info.keys:
                self._add_state_key(info, key)
        # Streams and snapshots show every state key, private ones included;
        # invoke() returns the output schema's keys.
        self.stream_keys: list[str] = list(self.state_keys)
        self.state_key_set = frozenset(self.state_keys)
        # A node's dict result is its state writes, key by key (not a root-state graph's
        # one value): the run loop's fast path for the usual node result.
        self.dict_results = self.state_keys != [ROOT]
        self.root_output = self.output_keys == [ROOT]
        self.input_key_set = frozenset(self.input_keys)
        makers = self._channel_makers
        roles = self._roles
        makers[START] = functools.partial(InputValue, START)
        roles[START] = _ONE_STEP
        makers[TASKS] = functools.partial(_Topic, TASKS)
        roles[TASKS] = _ONE_STEP
        triggers: dict[str, list[str]] = {START: [START]}
        static_writes: dict[str, list[tuple[str, Any]]] = {START: []}
        self.triggers = triggers
        self.static_writes = static_writes
        for name_, spec in self.nodes.items():
            chan = branch_channel(name_)
            if spec.defer:
                makers[chan] = functools.partial(LastValueAfterFinish, chan)
                roles[chan] = _FINISHABLE
            else:
                makers[chan] = functools.partial(EphemeralValue, chan)
                roles[chan] = _ONE_STEP
            triggers[name_] = [chan]
            static_writes[name_] = []
        for source, target in builder.edge_order:
            if target != END:
                static_writes[source].append((branch_channel(target), None))
        for starts, end in builder.waiting_edges:
            if end == END:
                continue
            chan = f"join:{'+'.join(starts)}:{end}"
            deferred = self.nodes[end].defer
            makers[chan] = functools.partial(
                NamedBarrierValue, chan, set(starts), deferred=deferred
            )
            roles[chan] = _FINISHABLE if deferred else _PLAIN
            triggers[end].append(chan)
            for start in starts:
                static_writes[start].append((chan, start))
        self.branches: dict[str, list[BranchSpec]] = {
            source: list(specs.values()) for source, specs in builder.branches.items()
        }
        # The nodes each trigger channel wakes; their order does not matter, because
        # nodes_triggered_by() sorts what it collects.
        by_channel: dict[str, list[str]] = {}
        for name_, chans in triggers.items():
            for chan in chans:
                woken = by_channel.get(chan)
                if woken is None:
                    by_channel[chan] = [name_]
                else:
                    woken.append(name_)
        self._trigger_to_nodes = by_channel
        self.trigger_channels = frozenset(by_channel)
        self._node_rank = {name: i for i, name in enumerate(self.node_order)}
        self.ephemeral_channels = frozenset(n for n, role in roles.items() if role[0])
        self.finishable_channels = tuple(n for n, role in roles.items() if role[1])
        self._param_names: dict[Any, tuple[frozenset[str], bool]] = {}
        self._direct: dict[str, Any] = {}
        # Each node's input schema, worked out at its first read (see read_input).
        self._input_infos: dict[str, SchemaInfo] = {}
        # What each router answer writes, by (branch, name) (see route_writes).
        self._route_writes: dict[tuple[int, str], list[tuple[str, Any]]] = {}
        self._version: str | None = None

    @property
    def version(self) -> str:
        """The graph's version as flowcore's events and run history show it.

        By default a digest of the graph's shape (nodes, edges, routers, state
        keys), so it changes when the graph does and is the same in every
        process; assign a string to name versions yourself.

        Example:
            >>> # app.version = "2024-06-01"
        """
        if self._version is None:
            builder = self.builder
            shape = repr(
                (
                    list(self.nodes),
                    builder.edge_order,
                    builder.waiting_edges,
                    sorted((s, sorted(b)) for s, b in builder.branches.items()),
                    self.state_keys,
                )
            )
            self._version = hashlib.sha256(shape.encode()).hexdigest()[:12]
        return self._version

    @version.setter
    def version(self, value: str) -> None:
        self._version = str(value)

    def copy(self, update: Mapping[str, Any] | None = None) -> CompiledStateGraph:
        """A shallow copy of this graph, with the attributes ``update`` names replaced.

        Example:
            >>> # other = app.copy({"name": "other"})
        """
        made = copy.copy(self)
        # The per-graph lookups made lazily are rebuilt for the copy.
        made._param_names, made._direct = {}, {}
        for key, value in (update or {}).items():
            setattr(made, key, value)
        return made

    def _add_state_key(self, info: SchemaInfo, key: str) -> None:
        made = info.channel(key)
        if key not in self._channel_makers:
            self.state_keys.append(key)
            self._channel_makers[key] = functools.partial(info.channel, key)
            self._roles[key] = _role(made)
        elif isinstance(made, BinaryOperatorAggregate | DeltaValue):
            existing = self._channel_makers[key]()
            if isinstance(existing, LastValue):
                self._channel_makers[key] = functools.partial(info.channel, key)
                self._roles[key] = _role(made)

    # ------------------------------------------------------------- channels
    @property
    def channels(self) -> dict[str, Channel]:
        """The graph's channels by name, as ``langgraph.channels`` classes (a fresh, empty set)."""
        from flowcore.compat.langgraph._channel_view import public_channels

        return public_channels(self)

    def new_channels(self) -> dict[str, Channel]:
        """A fresh set of channels for one run."""
        return {name: make() for name, make in self._channel_makers.items()}

    def snapshot_channels(self, channels: Mapping[str, Channel]) -> dict[str, Any]:
        """What a checkpoint stores: the value of every channel that holds one."""
        stored: dict[str, Any] = {}
        for name, channel in channels.items():
            kind = type(channel)
            how = _SNAPSHOTS.get(kind)
            if how is None:
                how = _SNAPSHOTS[kind] = _snapshot_kind(kind)
            if how is _AS_VALUE:
                value = channel.value
                if value is not MISSING:
                    stored[name] = value
                continue
            if kind in _EMPTY_UNSTORED and channel.value is MISSING:
                continue  # what its snapshot() gives when empty: MISSING, not stored
            value = channel.snapshot()
            if (value is not MISSING and value is not None) or (
                how is _VALUE_KEPT and channel.value is not MISSING
            ):
                stored[name] = value
        return stored

    def restore_channels(
        self, channels: Mapping[str, Channel], checkpoint: Mapping[str, Any]
    ) -> None:
        """Load a checkpoint's values into fresh channels."""
        for name, value in (checkpoint.get("channel_values") or {}).items():
            if name in channels:
                channels[name].restore(value)

    def encode_write(self, channel: str, value: Any) -> Any:
        """A pending write as a saver stores it (interrupts and sends as plain data)."""
        if channel == INTERRUPT:
            return [_interrupt_plain(i) for i in value]
        if channel == TASKS and isinstance(value, Send):
            return {"__send__": _send_plain(value)}
        if isinstance(value, Overwrite):
            # Its dict form: the channel reads both, and savers store plain data.
            return {OVERWRITE: value.value}
        return value

    def decode_write(self, channel: str, value: Any) -> Any:
        """The inverse of :meth:`encode_write`."""
        if channel == INTERRUPT and isinstance(value, list):
            return [
                Interrupt(v["value"], v["id"], response_schema=v.get("response_schema"))
                if isinstance(v, dict) and "id" in v
                else v
                for v in value
            ]
        if channel == TASKS and isinstance(value, dict) and "__send__" in value:
            return _send_from(value["__send__"])
        return value

    def _context_schema(self) -> Any:
        return self.builder.context_schema

    def input_writes(self, value: Any) -> list[tuple[str, Any]]:
        """The writes a run's input makes (a StateGraph's: to ``START``, read by its START task)."""
        return [(START, value)]

    def result_writes(self, node: str, result: Any) -> list[tuple[str, Any]]:
        """The state writes node ``node``'s return value makes."""
        return update_writes(result, self.state_key_set)

    def task_update(self, update: Any, keys: Sequence[str]) -> Any:
        """A node's ``updates`` chunk as streamed (a StateGraph's: the dict of its writes;
        a low-level graph and an entrypoint override it)."""
        return update

    # ----------------------------------------------------------- reading state
    def _schema_of(self, node: str) -> SchemaInfo:
        spec = self.nodes.get(node)
        schema = spec.input_schema if spec is not None else self.builder.state_schema
        return self.infos.get(schema) or SchemaInfo(schema)

    def _values(
        self,
        info: SchemaInfo,
        channels: Mapping[str, Channel],
        steps: tuple[int, int] | None = None,
    ) -> dict[str, Any]:
        values = read_available(channels, info.keys)
        if steps is not None:
            for key, managed in info.managed.items():
                values[key] = managed.compute(*steps)
        return values

    def _read(
        self,
        info: SchemaInfo,
        channels: Mapping[str, Channel],
        steps: tuple[int, int] | None = None,
    ) -> Any:
        return info.coerce(self._values(info, channels, steps))

    def read_input(
        self,
        node: str,
        channels: Mapping[str, Channel],
        steps: tuple[int, int] | None = None,
        reads: dict[int, Any] | None = None,
    ) -> Any:
        """What node ``node`` receives: the state as its input schema (``steps``: step, stop).

        ``reads`` keeps what was read per schema, for several nodes reading the same
        unchanged channels; each node still gets its own dict (or object).
        """
        if node == START:
            return channels[START].get()
        info = self._input_infos.get(node)
        if info is None:
            info = self._input_infos[node] = self._schema_of(node)
        if reads is None:
            return self._read(info, channels, steps)
        read = reads.get(id(info))
        if read is None or read[0] is not info:
            read = reads[id(info)] = (info, self._values(info, channels, steps))
        if info.kind == "typeddict" and not info.root:
            # What coerce() gives: its keys are all the schema's (see _values).
            return dict(read[1])
        return info.coerce(dict(read[1]))

    def read_output(
        self, channels: Mapping[str, Channel], keys: Sequence[str] | None = None
    ) -> Any:
        """The given keys (default: the output schema's) that hold a value.

        A root-state graph's output is its one value itself (``None`` when unset).
        """
        if self.root_output:
            root = channels.get(ROOT)
            return root.get() if root is not None and root.is_available() else None
        return read_available(channels, self.output_keys if keys is None else keys)

    def local_read(
        self,
        node: str,
        channels: Mapping[str, Channel],
        writes: Sequence[tuple[str, Any]],
        schema: Any = None,
    ) -> Any:
        """The state a router sees: this superstep's start plus the node's own writes.

        Read as ``schema`` (the router's own) when given, else as the node's input.
        """
        if schema is not None:
            info = self.infos.get(schema) or SchemaInfo(schema)
        elif node == START:
            info = self.state_info
        else:
            known = self._input_infos.get(node)
            info = self._input_infos[node] = self._schema_of(node) if known is None else known
        grouped: dict[str, list[Any]] = {}
        for chan, value in writes:
            found = grouped.get(chan)
            if found is None:
                grouped[chan] = [value]
            else:
                found.append(value)
        # Only the channels the node wrote are copied (with its writes applied), in the
        # order it wrote them; the others are read as they are.
        written: dict[str, Channel] = {}
        keys = info.channel_keys
        for chan, pending in grouped.items():
            if chan in keys and chan in channels:
                source = channels[chan]
                if type(source) is LastValue and len(pending) == 1:
                    # What preview() gives (a copy holding the one value), made directly.
                    held = LastValue.__new__(LastValue)
                    held.key, held.value = chan, pending[0]
                    written[chan] = held
                else:
                    written[chan] = source.preview(pending)
        state: dict[str, Any] = {}
        for key in info.keys:
            channel = written.get(key) if written else None
            if channel is None:
                channel = channels.get(key)
                if channel is None:
                    continue
            if channel.plain_read:  # the value itself: no two calls per key
                value = channel.value
                if value is not MISSING:
                    state[key] = value
            elif channel.is_available():
                state[key] = channel.get()
        if info.kind == "typeddict" and not info.root:
            return state  # what coerce() gives: its keys are all the schema's
        return info.coerce(state)

    def branch_targets(self, branch: BranchSpec, picked: Any) -> list[Any]:
        """Where a router's answer leads: node names, ``Send``s or ``END``."""
        results = list(picked) if isinstance(picked, list | tuple) else [picked]
        targets: list[Any] = []
        for result in results:
            if isinstance(result, Send):
                targets.append(result)
                continue
            # An answer missing from the path map is a KeyError, as in LangGraph.
            target = branch.path_map[result] if branch.path_map is not None else result
            if target is None or target == START:
                raise ValueError("Branch did not return a valid destination")
            if target != END and target not in self.nodes:
                # LangGraph writes to a channel that does not exist, which does nothing.
                continue
            targets.append(target)
        return targets

    def route_writes(self, branch: BranchSpec, picked: Any) -> list[tuple[str, Any]]:
        """The writes a router's answer makes (see :meth:`branch_targets`).

        The writes of a one-name answer are worked out once per branch and name.
        """
        if type(picked) is not str:
            return target_writes(self.branch_targets(branch, picked))
        key = (id(branch), picked)
        known = self._route_writes.get(key)
        if known is None:
            known = self._route_writes[key] = target_writes(self.branch_targets(branch, picked))
        return known

    def nodes_triggered_by(self, channels: set[str]) -> list[str]:
        """The nodes one of whose triggers is in ``channels``, in declaration order."""
        found: set[str] = set()
        woken = self._trigger_to_nodes
        for chan in channels:
            nodes = woken.get(chan)
            if nodes is not None:
                found.update(nodes)
        if len(found) < 2:
            return list(found)
        return sorted(found, key=self._node_rank.__getitem__)

    def call_shape(self, func: Any) -> tuple[frozenset[str], bool]:
        """The parameter names of a node or router function, and whether it is async (cached)."""
        try:
            shape = self._param_names.get(func)
        except TypeError:  # an unhashable callable (a LangChain tool is a pydantic model)
            return describe_callable(func)
        if shape is None:
            shape = self._param_names[func] = describe_callable(func)
        return shape

    def direct_call(self, name: str) -> Any:
        """Node ``name``'s function when running it is just ``await fn(state)``, else None.

        That is a coroutine function that asks for neither ``config`` nor ``writer``, has
        no retry policy and is not a compiled graph (worked out once per node).
        """
        known = self._direct.get(name, _UNKNOWN)
        if known is _UNKNOWN:
            spec = self.nodes[name]
            known = None
            if (
                spec.retry is None
                and spec.timeout is None
                and not hasattr(type(spec.action), "_arun_subgraph")
            ):
                names, is_async = self.call_shape(spec.action)
                if is_async and not names & _INJECTED:
                    known = spec.action
            self._direct[name] = known
        return known

    def is_subgraph_node(self, name: str) -> bool:
        """Whether node ``name`` runs a compiled graph."""
        spec = self.nodes.get(name)
        return spec is not None and hasattr(type(spec.action), "_arun_subgraph")

    def task_config(
        self, config: Mapping[str, Any], task: Task, step: int, ns: str
    ) -> dict[str, Any]:
        """The config a node receives (LangGraph's metadata keys included)."""
        task_ns = f"{ns}|{task.name}:{task.id}".lstrip("|")
        # The task's own namespace, as LangGraph sets it: LangChain shows it in the
        # metadata of the runs the node starts (a chat model's, a tool's).
        outer = dict(config.get("configurable") or {})
        configurable = {**outer, "checkpoint_ns": task_ns}
        metadata = {
            # The ids of the run that started the node, not the node's own namespace.
            **shown_configurable(outer),
            **dict(config.get("metadata") or {}),
            "langgraph_step": step,
            "langgraph_node": task.name,
            "langgraph_triggers": task.triggers,
            "langgraph_path": shown_path(task.path),
            "langgraph_checkpoint_ns": task_ns,
        }
        return {**dict(config), "configurable": configurable, "metadata": metadata}

    def __or__(self, other: Any) -> Any:
        """``graph | other``: a LangChain chain whose first step is this graph."""
        return as_runnable(self) | other

    def __ror__(self, other: Any) -> Any:
        """``other | graph``: a LangChain chain whose last step is this graph."""
        return other | as_runnable(self)

    def get_graph(
        self, config: Mapping[str, Any] | None = None, *, xray: bool | int = False
    ) -> DrawableGraph:
        """The graph's shape, for drawing (``get_graph().draw_mermaid()``).

        Example:
            >>> # print(app.get_graph().draw_mermaid())
        """
        from flowcore.compat.langgraph._draw_shape import draw_builder

        subgraphs: dict[str, DrawableGraph] = {}
        if xray:
            deeper = xray if isinstance(xray, bool) or xray <= 0 else xray - 1
            for name, sub in self.get_subgraphs():
                subgraphs[name] = sub.get_graph(config, xray=deeper)
        return draw_builder(self.builder, self, subgraphs)

    async def aget_graph(
        self, config: Mapping[str, Any] | None = None, *, xray: bool | int = False
    ) -> DrawableGraph:
        """The async form of :meth:`get_graph`."""
        return self.get_graph(config, xray=xray)

    def __repr__(self) -> str:
        return f"<CompiledStateGraph {self.name!r} nodes={list(self.nodes)}>"
