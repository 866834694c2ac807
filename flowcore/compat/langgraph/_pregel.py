"""``CompiledStateGraph``: invoke, stream, inspect and edit runs of a LangGraph-style graph."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import queue
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from flowcore.compat.langgraph._batch import BatchCalls
from flowcore.compat.langgraph._cache import NodeCache
from flowcore.compat.langgraph._caller_stream import caller_sink
from flowcore.compat.langgraph._channel_api import is_one_step
from flowcore.compat.langgraph._channels import (
    MISSING,
    BinaryOperatorAggregate,
    Channel,
    EphemeralValue,
    LastValue,
    LastValueAfterFinish,
    NamedBarrierValue,
    clear,
)
from flowcore.compat.langgraph._context import TaskScope, running_scope
from flowcore.compat.langgraph._copy_fork import COPY, copy_checkpoint_update
from flowcore.compat.langgraph._delta import DeltaValue
from flowcore.compat.langgraph._draw import DrawableGraph
from flowcore.compat.langgraph._error_handlers import ERROR_SOURCE
from flowcore.compat.langgraph._errors import GraphInterrupt, InvalidUpdateError
from flowcore.compat.langgraph._events import CompatRunStream
from flowcore.compat.langgraph._events_v2 import (
    astream_events_v1,
    astream_events_v2,
    merge_bound_config,
)
from flowcore.compat.langgraph._graph import BranchSpec, NodeSpec, StateGraph
from flowcore.compat.langgraph._input_channel import InputValue
from flowcore.compat.langgraph._json_schemas import JsonSchemaCalls
from flowcore.compat.langgraph._loop import (
    ERROR,
    INTERRUPT,
    NO_WRITES,
    NULL_TASK_ID,
    RESUME,
    Run,
    Task,
    empty_checkpoint,
)
from flowcore.compat.langgraph._messages_stream import messages_stream_handler
from flowcore.compat.langgraph._node import (
    TASKS,
    branch_channel,
    call_with_config,
    called_from_sync,
    control_writes,
    describe_callable,
    target_writes,
    update_writes,
)
from flowcore.compat.langgraph._planner import shown_path
from flowcore.compat.langgraph._records import (
    CheckpointMade,
    Sink,
    TaskEnd,
    kinds_for_modes,
)
from flowcore.compat.langgraph._runnable import as_runnable
from flowcore.compat.langgraph._runtime import RunControl, coerce_context
from flowcore.compat.langgraph._state import SchemaInfo
from flowcore.compat.langgraph._stream_v3 import (
    ainvoke_v2,
    astream_events_v3,
    part_of_chunk,
    stream_events_v3,
)
from flowcore.compat.langgraph._subgraph_detect import find_subgraph, iter_subgraphs
from flowcore.compat.langgraph._subgraph_travel import (
    CHECKPOINT_MAP,
    address_root,
    child_map,
    stable_ns,
    subgraph_at,
    with_checkpoint_map,
)
from flowcore.compat.langgraph._task_result import task_result
from flowcore.compat.langgraph._tool_stream import tools_stream_handler, with_handler
from flowcore.compat.langgraph._types import (
    END,
    OVERWRITE,
    ROOT,
    START,
    Command,
    Interrupt,
    Overwrite,
    PregelTask,
    Send,
    StateSnapshot,
    StateUpdate,
    TimeoutPolicy,
)
from flowcore.compat.langgraph._update_steps import close_superstep, moved_past
from flowcore.secrets import Redactor

__all__ = ["DEFAULT_RECURSION_LIMIT", "CompiledStateGraph"]

DEFAULT_RECURSION_LIMIT = 10007
"""LangGraph 1.2's default number of supersteps (it counts the start step)."""


class _Topic(Channel):
    """The ``Send``s written in one superstep, run as tasks in the next."""

    __slots__ = ()

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return clear(self)
        self.value = list(values)
        return True

    def snapshot(self) -> Any:
        if self.value is MISSING:
            return MISSING
        return [_send_plain(s) for s in self.value]

    def restore(self, stored: Any) -> None:
        self.value = [_send_from(s) for s in stored] if stored else MISSING


def _interrupt_plain(interrupt: Interrupt) -> dict[str, Any]:
    """An interrupt as a saver stores it (its schema only when it has one)."""
    plain = {"value": interrupt.value, "id": interrupt.id}
    if interrupt.response_schema is not None:
        plain["response_schema"] = interrupt.response_schema
    return plain


def _send_plain(send: Send) -> dict[str, Any]:
    """A Send as plain data (its timeout only when it has one: older saves have none)."""
    plain: dict[str, Any] = {"node": send.node, "arg": _plain(send.arg)}
    limits = getattr(send, "timeout", None)
    if limits is not None:
        plain["timeout"] = [limits.run_timeout, limits.idle_timeout, limits.refresh_on]
    return plain


def _send_from(plain: dict[str, Any]) -> Send:
    """The inverse of :func:`_send_plain`."""
    limits = plain.get("timeout")
    timeout = None if limits is None else TimeoutPolicy(*limits)
    return Send(plain["node"], _unplain(plain["arg"]), timeout=timeout)


_UNKNOWN: Any = object()

# How a checkpoint stores a channel, per channel class. LastValue, BinaryOperatorAggregate
# and EphemeralValue keep their value whenever they have one, None included
# (_VALUE_KEPT); with Channel.snapshot, that is their value as it is (_AS_VALUE). Other
# channels are stored when their snapshot is neither MISSING nor None (_SNAPSHOT).
_AS_VALUE, _VALUE_KEPT, _SNAPSHOT = "value", "kept", "snapshot"
_SNAPSHOTS: dict[type, str] = {}


def _snapshot_kind(kind: type) -> str:
    if not issubclass(kind, LastValue | BinaryOperatorAggregate | EphemeralValue):
        return _SNAPSHOT
    return _AS_VALUE if kind.snapshot is Channel.snapshot else _VALUE_KEPT


_OWN_RUN_OPTIONS = ("interrupt_before", "interrupt_after", "output_keys", "checkpoint_during")
_INJECTED = frozenset({"config", "writer", "runtime", "store"})
"""The keyword arguments a node may ask for (see call_with_config)."""

# The as_node of an update that acts as a run's input (LangGraph's name for it).
INPUT_NODE = "__input__"
_ONE_STEP = (True, False)
_FINISHABLE = (False, True)
_PLAIN = (False, False)


_INPUT = "__input__"
"""The ``as_node`` of an update that stands for a run's input."""


def _role(channel: Channel) -> tuple[bool, bool]:
    """Whether a channel is cleared when a superstep leaves it unwritten, and whether it opens
    when the run would otherwise end."""
    one_step = isinstance(channel, EphemeralValue | _Topic) or is_one_step(channel)
    finishable = isinstance(channel, LastValueAfterFinish) or (
        isinstance(channel, NamedBarrierValue) and channel.deferred
    )
    return (one_step, finishable)


class CompiledStateGraph(BatchCalls, JsonSchemaCalls):
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
        self.dict_results = ROOT not in self.state_key_set
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
        values = {
            k: channels[k].get() for k in info.keys if k in channels and channels[k].is_available()
        }
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
        info = self._schema_of(node)
        if reads is None:
            return self._read(info, channels, steps)
        read = reads.get(id(info))
        if read is None or read[0] is not info:
            read = reads[id(info)] = (info, self._values(info, channels, steps))
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
        return {
            k: channels[k].get()
            for k in (self.output_keys if keys is None else keys)
            if k in channels and channels[k].is_available()
        }

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
        else:
            info = self._schema_of(node) if node != START else self.state_info
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
                written[chan] = channels[chan].preview(pending)
        state: dict[str, Any] = {}
        for key in info.keys:
            channel = written.get(key)
            if channel is None:
                channel = channels.get(key)
            if channel is not None and channel.is_available():
                state[key] = channel.get()
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
                and not hasattr(spec.action, "_arun_subgraph")
            ):
                names, is_async = self.call_shape(spec.action)
                if is_async and not names & _INJECTED:
                    known = spec.action
            self._direct[name] = known
        return known

    def is_subgraph_node(self, name: str) -> bool:
        """Whether node ``name`` runs a compiled graph."""
        spec = self.nodes.get(name)
        return spec is not None and hasattr(spec.action, "_arun_subgraph")

    def task_config(
        self, config: Mapping[str, Any], task: Task, step: int, ns: str
    ) -> dict[str, Any]:
        """The config a node receives (LangGraph's metadata keys included)."""
        configurable = dict(config.get("configurable") or {})
        metadata = {
            **dict(config.get("metadata") or {}),
            "langgraph_step": step,
            "langgraph_node": task.name,
            "langgraph_triggers": task.triggers,
            "langgraph_path": shown_path(task.path),
            "langgraph_checkpoint_ns": f"{ns}|{task.name}:{task.id}".lstrip("|"),
        }
        return {**dict(config), "configurable": configurable, "metadata": metadata}

    # ------------------------------------------------------------------ running
    def _run(
        self,
        run_input: Any,
        config: Mapping[str, Any] | None,
        sink: Sink,
        *,
        durability: str | None,
        interrupt_before: Sequence[str] | str | None,
        interrupt_after: Sequence[str] | str | None,
        context: Any = None,
        control: RunControl | None = None,
    ) -> Run:
        config = dict(config or {})
        if (config.get("configurable") or {}).get("checkpoint_ns"):
            # A subgraph's config: the root replays from where the map says it stood.
            config["configurable"] = address_root(config["configurable"])
        before = self.interrupt_before_nodes if interrupt_before is None else interrupt_before
        after = self.interrupt_after_nodes if interrupt_after is None else interrupt_after
        if before == "*":
            before = list(self.nodes)
        if after == "*":
            after = list(self.nodes)
        run = Run(
            self,
            run_input,
            config,
            sink=sink,
            durability=durability or "async",
            interrupt_before=list(before),
            interrupt_after=list(after),
        )
        run.context = coerce_context(self._context_schema(), context)
        run.control = control
        return run

    async def astream(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        stream_mode: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        durability: str | None = None,
        debug: bool | None = None,
        output_keys: Sequence[str] | None = None,
        context: Any = None,
        control: RunControl | None = None,
        version: str = "v1",
        _caller: Any = MISSING,
        **_: Any,
    ) -> AsyncIterator[Any]:
        """Run and yield stream chunks as they happen (``stream_mode`` as in LangGraph).

        ``version="v2"`` yields typed-dict stream parts (``type``, ``ns``, ``data``).

        Example:
            >>> # async for chunk in app.astream({"n": 1}, stream_mode="updates"): ...
        """
        modes = (
            [self.stream_mode]
            if stream_mode is None
            else ([stream_mode] if isinstance(stream_mode, str) else list(stream_mode))
        )
        single = isinstance(stream_mode, str) or stream_mode is None
        out: asyncio.Queue[Any] = asyncio.Queue()
        done = object()
        formatter = _ChunkFormatter(modes, single=single and version != "v2", subgraphs=subgraphs)

        # Found where the stream was started (stream() iterates on a thread of its own).
        also = caller_sink(config) if _caller is MISSING else _caller

        def sink(ns: tuple[str, ...], kind: str, payload: Any) -> None:
            for item in formatter.format(ns, kind, payload):
                out.put_nowait(item)
            if also is not None:
                also(ns, kind, payload)

        if "tools" in modes:
            config = with_handler(
                config, tools_stream_handler(_on_loop(sink, "tools"), subgraphs=subgraphs)
            )
        if "messages" in modes:
            chunks = _on_loop(sink, "messages_chunk")
            handler = messages_stream_handler(chunks, formatter.seen_messages, subgraphs=subgraphs)
            config = with_handler(config, handler)

        run = self._run(
            input,
            config,
            sink,
            durability=durability,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            context=context,
            control=control,
        )
        run.wants = formatter.kinds()
        if output_keys is not None:
            run.output_keys = list(output_keys)

        async def drive() -> None:
            try:
                await run.execute()
            except GraphInterrupt:
                if run.status in ("interrupt_before", "interrupt_after"):
                    sink((), "updates", {INTERRUPT: ()})
            finally:
                out.put_nowait(done)

        worker = asyncio.ensure_future(drive())
        try:
            while True:
                item = await out.get()
                if item is done:
                    break
                yield item if version != "v2" else part_of_chunk(item, subgraphs, self)
            await worker
        finally:
            if not worker.done():
                worker.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await worker

    def astream_events(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        version: str = "v2",
        **kwargs: Any,
    ) -> Any:
        """LangChain's run events of a run (``version`` "v2" or "v1"; see ``_events_v2``);
        ``version="v3"``: an awaitable of an ``AsyncGraphRunStream`` (see ``_stream_v3``).

        Example:
            >>> # async for event in app.astream_events({"n": 1}, version="v2"): ...
        """
        if version == "v3":
            return astream_events_v3(self, input, config, **kwargs)
        if version == "v1":
            return astream_events_v1(self, input, config, **kwargs)
        return astream_events_v2(self, input, config, **kwargs)

    def __or__(self, other: Any) -> Any:
        """``graph | other``: a LangChain chain whose first step is this graph."""
        return as_runnable(self) | other

    def __ror__(self, other: Any) -> Any:
        """``other | graph``: a LangChain chain whose last step is this graph."""
        return other | as_runnable(self)

    def run_stream(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        run_id: str | None = None,
        thread_id: str | None = None,
        recursion_limit: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        redactor: Redactor | None = None,
        durability: str | None = None,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
    ) -> CompatRunStream:
        """Run and iterate flowcore's own events (:mod:`flowcore.events`), as a native run does.

        The counterpart of native ``CompiledGraph.stream``: ``run_start``, per task
        ``node_start`` then ``node_end`` / ``node_error`` / ``interrupt`` /
        ``node_cancelled``, ``usage`` for chat messages with token counts,
        ``custom`` for stream-writer chunks, ``checkpoint`` for each checkpoint
        made on a thread, and exactly one ``done``; then
        ``await events.result()`` gives the :class:`~flowcore.result.RunResult`.
        ``input`` is what :meth:`ainvoke` takes, or flowcore's ``Resume``
        (as ``Command(resume=...)``). ``thread_id``, ``recursion_limit`` and
        ``metadata`` are merged into ``config``. ``redactor`` keeps the secrets
        it knows out of the events and the result (not out of the checkpoints:
        those are the saver's, as in LangGraph). A failed run does not raise:
        it ends ``failed``. LangGraph's stream modes (:meth:`astream`) are not
        affected and cost nothing extra when nobody streams these events.

        Example:
            >>> # async with app.run_stream({"n": 1}, thread_id="t1") as events:
            >>> #     async for event in events: print(event.type)
            >>> #     result = await events.result()
        """
        merged: dict[str, Any] = dict(config or {})
        if thread_id is not None:
            merged["configurable"] = {
                **dict(merged.get("configurable") or {}),
                "thread_id": thread_id,
            }
        if recursion_limit is not None:
            merged["recursion_limit"] = recursion_limit
        if metadata:
            merged["metadata"] = {**dict(merged.get("metadata") or {}), **dict(metadata)}
        return CompatRunStream(
            self,
            input,
            merged,
            run_id=run_id,
            redactor=redactor,
            run_options={
                "durability": durability,
                "interrupt_before": interrupt_before,
                "interrupt_after": interrupt_after,
            },
        )

    def stream_events(
        self, input: Any, config: Mapping[str, Any] | None = None, *, version: str = "v2", **kw: Any
    ) -> Any:
        """``version="v3"``: a :class:`~flowcore.compat.langgraph._stream_v3_run.GraphRunStream`.

        Example:
            >>> # run = app.stream_events({"n": 1}, version="v3"); run.output
        """
        if version != "v3":
            raise NotImplementedError(f"stream_events(version={version!r}) is not available")
        return stream_events_v3(self, input, config, **kw)

    def stream(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """The sync form of :meth:`astream`.

        Example:
            >>> # for chunk in app.stream({"n": 1}, stream_mode="values"): print(chunk)
        """
        also = caller_sink(config)
        return _sync_iter(lambda: self.astream(input, config, _caller=also, **kwargs))

    async def ainvoke(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        stream_mode: str = "values",
        **kwargs: Any,
    ) -> Any:
        """Run to the end (or a pause) and return the output state.

        A paused run's output carries ``__interrupt__``: the pending questions.

        Called inside a running node of another graph (on that graph's thread),
        the run is a child of that node, as a subgraph node's is: it saves under
        the node's namespace and a pause in it pauses the node.

        Example:
            >>> # result = await app.ainvoke({"messages": [("user", "hi")]})
        """
        if kwargs.pop("version", "v1") == "v2":
            return await ainvoke_v2(self, input, config, stream_mode, kwargs)
        calling = self._calling_task(config, stream_mode, kwargs)
        if calling is not None:
            return await self._arun_subgraph(input, *calling, control=kwargs.get("control"))
        if stream_mode != "values":
            return [c async for c in self.astream(input, config, stream_mode=stream_mode, **kwargs)]
        latest: Any = None
        interrupts: list[Interrupt] = []

        # No queue and no chunk formatting: invoke only needs the last values and the pauses.
        def sink(ns: tuple[str, ...], kind: str, payload: Any) -> None:
            nonlocal latest
            if ns:
                return
            if kind == "values":
                latest = payload
            elif kind == "updates" and isinstance(payload, dict) and payload.get(INTERRUPT):
                interrupts.extend(payload[INTERRUPT])

        run = self._run(
            input,
            config,
            sink,
            durability=kwargs.get("durability"),
            interrupt_before=kwargs.get("interrupt_before"),
            interrupt_after=kwargs.get("interrupt_after"),
            context=kwargs.get("context"),
            control=kwargs.get("control"),
        )
        run.output_keys = list(kwargs.get("output_keys") or self.output_keys)
        # Pauses are always reported (as "updates" records); node updates are not needed here.
        run.wants = {"values"}
        with contextlib.suppress(GraphInterrupt):
            await run.execute()
        if interrupts:
            return (
                {**latest, INTERRUPT: interrupts}
                if isinstance(latest, dict)
                else {INTERRUPT: interrupts}
            )
        return latest

    def invoke(self, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        """The sync form of :meth:`ainvoke`.

        Example:
            >>> # result = app.invoke({"n": 1}, {"recursion_limit": 50})
        """
        calling = self._calling_task(config, kwargs.get("stream_mode", "values"), kwargs)
        if calling is not None:
            scope, parent = calling
            if parent.loop is not None and threading.get_ident() != parent.loop_thread:
                # A sync node runs in a worker thread while its run's loop waits for it:
                # the child run goes on that loop, beside its parent's saver and batches.
                child = self._arun_subgraph(input, scope, parent, control=kwargs.get("control"))
                return asyncio.run_coroutine_threadsafe(child, parent.loop).result()
        return _sync_call(lambda: self.ainvoke(input, config, **kwargs))

    def _calling_task(
        self, config: Mapping[str, Any] | None, stream_mode: Any, kwargs: Mapping[str, Any]
    ) -> tuple[TaskScope, Run] | None:
        """The running node (and its run) this call is made from, when it is a child run of it.

        A call with its own thread, its own stream mode or run options is a run of
        its own, as is any call made outside a node.
        """
        scope = running_scope()
        host = None if scope is None else scope.host
        if scope is None or stream_mode != "values" or not isinstance(host, Run):
            return None
        if any(kwargs.get(k) is not None for k in _OWN_RUN_OPTIONS):
            return None
        given = (config or {}).get("configurable") or {}
        thread = given.get("thread_id")
        if thread is not None and thread != host.thread_id:
            return None
        return scope, host

    def _history_ns(self, ns: str) -> str:
        """Where this graph keeps its checkpoints when it runs under namespace ``ns``.

        A ``checkpointer=True`` subgraph keeps one history per thread, so each entry
        of its node goes on from where the last one left it: its namespace drops the
        task ids. Any other subgraph's history is that one task's.
        """
        if not self.own_history:
            return ns
        return "|".join(part.split(":")[0] for part in ns.split("|"))

    async def _arun_subgraph(
        self, value: Any, scope: TaskScope, parent: Run, *, control: RunControl | None = None
    ) -> Any:
        """Run this graph as a child of ``parent``'s task ``scope`` (``control``: the call's)."""
        ns = f"{parent.ns}|{scope.node}:{scope.task_id}".lstrip("|")
        if scope.graphs_run:
            # A task's later graphs each keep a history of their own.
            ns = f"{ns}|{scope.graphs_run}"
        scope.graphs_run += 1
        ns = self._history_ns(ns)
        config = {
            **parent.config,
            "configurable": {**parent.configurable, "checkpoint_ns": ns},
        }
        config["configurable"].pop("checkpoint_id", None)
        config["configurable"][CHECKPOINT_MAP] = found = child_map(
            parent.configurable, parent.ns, parent.checkpoint.get("id")
        )
        if ns in found and ns not in parent.entered:
            # Addressed by a subgraph snapshot's config: replay from that very checkpoint.
            config["configurable"]["checkpoint_id"] = found[ns]
            parent.entered.add(ns)
        run = Run(
            self,
            value,
            config,
            sink=parent.sink,
            durability=parent.durability,
            interrupt_before=self.interrupt_before_nodes,
            interrupt_after=self.interrupt_after_nodes,
            parent_scope=scope,
            checkpoint_ns=ns,
        )
        if self.checkpointer is None and parent.saver is not None:
            run.saver = parent.saver
            run.thread_id = parent.thread_id
        run.force_resume = parent.resuming or bool(scope.resume)
        run.resume_by_id = parent.resume_by_id
        run.context, run.control = parent.context, control or parent.control
        run.replay_of, run.entered = parent.replay_of, parent.entered
        addressed = "checkpoint_id" in config["configurable"]
        if (
            self.own_history
            and parent.replay_of is not None
            and ns not in parent.entered
            and not addressed
        ):
            # Its one history runs on past the replayed checkpoint: the replay's first
            # entry goes on from where it stood then (or from nothing, if it had not run).
            parent.entered.add(ns)
            run.as_of = parent.replay_of
            # It takes its input anew (its state then is the base), not a resume.
            run.force_resume = False
        run.wants = parent.wants
        await run.execute()
        return run.graph.read_output(run.channels)

    # ------------------------------------------------------------ inspection
    def get_subgraphs(
        self, *, namespace: str | None = None, recurse: bool = False
    ) -> Iterator[tuple[str, Any]]:
        """``(namespace, subgraph)`` for each node that runs a graph (see ``_subgraph_detect``).

        Example:
            >>> # dict(app.get_subgraphs(recurse=True))
        """
        return iter_subgraphs(self, namespace, recurse)

    async def aget_subgraphs(
        self, *, namespace: str | None = None, recurse: bool = False
    ) -> AsyncIterator[tuple[str, Any]]:
        """The async form of :meth:`get_subgraphs`."""
        for item in iter_subgraphs(self, namespace, recurse):
            yield item

    def _saver(self) -> Any:
        if self.checkpointer is None and self.own_history:
            # checkpointer=True borrows its parent's saver: read on its own, it has none.
            raise RuntimeError("checkpointer=True cannot be used for root graphs.")
        if self.checkpointer is None:
            raise ValueError("No checkpointer set")
        return self.checkpointer

    async def aget_state(
        self, config: Mapping[str, Any], *, subgraphs: bool = False
    ) -> StateSnapshot:
        """The thread's state at its latest checkpoint (or the one ``checkpoint_id`` names).

        Example:
            >>> # snapshot = await app.aget_state({"configurable": {"thread_id": "t1"}})
        """
        saver = self._saver()
        sub = subgraph_at(self, (config.get("configurable") or {}).get("checkpoint_ns") or "")
        if sub is not None:
            snapshot: StateSnapshot = await sub._state_with(
                sub.checkpointer or saver, config, subgraphs=subgraphs
            )
            return snapshot
        return await self._state_with(saver, config, subgraphs=subgraphs)

    async def _state_with(
        self, saver: Any, config: Mapping[str, Any], *, subgraphs: bool
    ) -> StateSnapshot:
        conf = dict(config.get("configurable") or {})
        conf["checkpoint_ns"] = self._history_ns(conf.get("checkpoint_ns") or "")
        saved = await saver.aget_tuple({"configurable": conf})
        snapshot = self._snapshot(config, saved, live="checkpoint_id" not in conf)
        if saved is None:
            return snapshot
        return await self._with_task_states(snapshot, saver, conf, subgraphs=subgraphs)

    async def _with_task_states(
        self, snapshot: StateSnapshot, saver: Any, conf: Mapping[str, Any], *, subgraphs: bool
    ) -> StateSnapshot:
        """``snapshot`` with each subgraph task's state: the config of the subgraph's
        history (``subgraphs``: the subgraph's own snapshot there)."""
        tasks = []
        for task in snapshot.tasks:
            spec = self.nodes.get(task.name)
            # A subgraph node, or a node whose code runs a graph (a child run of it); a
            # checkpointer=False subgraph keeps no history.
            child = None if spec is None else find_subgraph(spec.action)
            if child is None or getattr(child, "opted_out", False):
                tasks.append(task)
                continue
            ns = f"{conf.get('checkpoint_ns') or ''}|{task.name}:{task.id}".lstrip("|")
            child_config = {
                "configurable": {"thread_id": conf.get("thread_id"), "checkpoint_ns": ns}
            }
            state: Any = child_config
            if subgraphs:
                child_saver = child.checkpointer or saver
                state = await child._state_with(child_saver, child_config, subgraphs=True)
            tasks.append(task._replace(state=state))
        return snapshot._replace(tasks=tuple(tasks))

    def get_state(self, config: Mapping[str, Any], *, subgraphs: bool = False) -> StateSnapshot:
        """The sync form of :meth:`aget_state`."""
        return _sync_call(lambda: self.aget_state(config, subgraphs=subgraphs))

    def _snapshot(self, config: Mapping[str, Any], saved: Any, *, live: bool) -> StateSnapshot:
        if saved is None:
            return StateSnapshot({}, (), dict(config), None, None, None, (), ())
        run = Run(
            self,
            None,
            {**dict(config), "configurable": dict(saved.config["configurable"])},
            sink=_nobody,
            durability="sync",
            interrupt_before=(),
            interrupt_after=(),
            # Task ids depend on the namespace: the snapshot's are the run's.
            checkpoint_ns=saved.config["configurable"].get("checkpoint_ns") or "",
        )
        run.wants = set()
        run.channels = self.new_channels()
        run.checkpoint = dict(saved.checkpoint)
        run.checkpoint = {
            **run.checkpoint,
            "versions_seen": {k: dict(v) for k, v in saved.checkpoint["versions_seen"].items()},
            "channel_versions": dict(saved.checkpoint["channel_versions"]),
        }
        self.restore_channels(run.channels, run.checkpoint)
        run._recount()
        run.step = int((saved.metadata or {}).get("step", -1)) + 1
        pending = [(str(t), c, self.decode_write(c, v)) for t, c, v in saved.pending_writes or ()]
        null = [(c, v) for t, c, v in pending if t == NULL_TASK_ID]
        if null:
            run.apply_writes([], extra=null)
        tasks = run.prepare(for_execution=False)
        status: dict[str, dict[str, Any]] = {}
        for task_id, chan, value in pending:
            entry = status.setdefault(task_id, {"writes": [], "error": None, "interrupts": []})
            if chan == ERROR:
                entry["error"] = value
            elif chan == INTERRUPT:
                entry["interrupts"] = [i for i in value if isinstance(i, Interrupt)]
            elif chan not in (RESUME, ERROR_SOURCE):
                entry["writes"].append((chan, value))
        finished = []
        out_tasks: list[PregelTask] = []
        for task in tasks:
            entry = status.get(task.id, {"writes": [], "error": None, "interrupts": []})
            writes = [(c, v) for c, v in entry["writes"] if c != NO_WRITES]
            is_done = bool(entry["writes"])
            if is_done:
                task.writes = writes
                finished.append(task)
            result = None
            if is_done and self.root_output:
                # A root-state graph's task result is the value it wrote, not a dict.
                result = next((v for c, v in writes if c == ROOT), None)
            elif is_done:
                result = task_result(writes, self.stream_keys)
            error = entry["error"]
            out_tasks.append(
                PregelTask(
                    task.id,
                    task.name,
                    shown_path(task.path),
                    error,
                    () if (live and is_done) else tuple(entry["interrupts"]),
                    None,
                    result,
                )
            )
        if live and finished:
            run.apply_writes(finished)
        values = self.read_output(run.channels, self.stream_keys)
        next_names = tuple(t.name for t in tasks if not (live and t in finished))
        return StateSnapshot(
            values,
            next_names,
            with_checkpoint_map(saved.config, saved.metadata),
            saved.metadata,
            saved.checkpoint.get("ts"),
            with_checkpoint_map(saved.parent_config, saved.metadata),
            tuple(out_tasks),
            tuple(i for t in out_tasks for i in t.interrupts),
        )

    async def aget_state_history(
        self,
        config: Mapping[str, Any],
        *,
        filter: dict[str, Any] | None = None,
        before: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        """Every checkpoint of the thread as a snapshot, newest first.

        Example:
            >>> # async for snap in app.aget_state_history(config): print(snap.next)
        """
        saver = self._saver()
        conf = {**dict(config.get("configurable") or {})}
        conf.setdefault("checkpoint_ns", "")
        sub = subgraph_at(self, conf["checkpoint_ns"])
        if sub is not None:
            # A subgraph's config: the subgraph's history, read on this graph's saver.
            async for snapshot in sub._history_with(
                sub.checkpointer or saver, config, conf, filter, before, limit
            ):
                yield snapshot
            return
        async for snapshot in self._history_with(saver, config, conf, filter, before, limit):
            yield snapshot

    async def _history_with(
        self,
        saver: Any,
        config: Mapping[str, Any],
        conf: dict[str, Any],
        filter: dict[str, Any] | None,
        before: Mapping[str, Any] | None,
        limit: int | None,
    ) -> AsyncIterator[StateSnapshot]:
        conf = {**conf, "checkpoint_ns": self._history_ns(conf.get("checkpoint_ns") or "")}
        async for saved in saver.alist(
            {"configurable": conf}, filter=filter, before=before, limit=limit
        ):
            snapshot = self._snapshot(config, saved, live=False)
            yield await self._with_task_states(snapshot, saver, conf, subgraphs=False)

    def get_state_history(
        self, config: Mapping[str, Any], **kwargs: Any
    ) -> Iterator[StateSnapshot]:
        """The sync form of :meth:`aget_state_history`."""
        return _sync_iter(lambda: self.aget_state_history(config, **kwargs))

    async def aupdate_state(
        self,
        config: Mapping[str, Any],
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        """Write ``values`` to the thread as if node ``as_node`` had returned them.

        The update goes through the reducers and follows ``as_node``'s edges,
        so ``next`` becomes what runs after that node. Returns the config of
        the new checkpoint.

        Example:
            >>> # app.update_state(config, {"approved": True}, as_node="review")
        """
        return await self.abulk_update_state(config, [[StateUpdate(values, as_node, task_id)]])

    async def abulk_update_state(
        self, config: Mapping[str, Any], supersteps: Sequence[Sequence[StateUpdate]]
    ) -> dict[str, Any]:
        """Apply several supersteps of updates, each as one new checkpoint.

        The updates of one superstep are applied together, as the writes of
        parallel nodes are (so reducers see all of them at once); each needs
        its ``as_node`` when there are several. Returns the config of the last
        checkpoint made.

        Raises:
            ValueError: no supersteps, or a superstep with no updates.
            InvalidUpdateError: an update names no node, or a node that does not exist.

        Example:
            >>> # app.bulk_update_state(config, [[StateUpdate({"n": 1}, "a"),
            >>> #                                 StateUpdate({"n": 2}, "b")]])
        """
        return await self._bulk_update_with(None, config, supersteps)

    async def _bulk_update_with(
        self,
        saver: Any,
        config: Mapping[str, Any],
        supersteps: Sequence[Sequence[StateUpdate]],
        *,
        route: bool = True,
    ) -> dict[str, Any]:
        """:meth:`abulk_update_state` on ``saver`` (``None``: this graph's own)."""
        if not supersteps:
            raise ValueError("No supersteps provided")
        if any(not updates for updates in supersteps):
            raise ValueError("No updates provided")
        saver = saver or self._saver()
        ns = (config.get("configurable") or {}).get("checkpoint_ns") or ""
        sub = subgraph_at(self, ns) if route else None
        if route and ns and sub is None:
            # This graph's nodes and channels would write the wrong state there.
            raise ValueError(f"Subgraph {stable_ns(ns)} not found")
        if sub is not None:
            # A subgraph's config: the update is the subgraph's, on this graph's saver.
            made: dict[str, Any] = await sub._bulk_update_with(
                sub.checkpointer or saver, config, supersteps, route=False
            )
            return made
        made = {}
        for updates in supersteps:
            # Each superstep starts from the checkpoint the one before made.
            conf = {**dict(config.get("configurable") or {}), **made.get("configurable", {})}
            made = await self._update_superstep(
                {**dict(config), "configurable": conf}, [StateUpdate(*u) for u in updates], saver
            )
        return made

    def bulk_update_state(
        self, config: Mapping[str, Any], supersteps: Sequence[Sequence[StateUpdate]]
    ) -> dict[str, Any]:
        """The sync form of :meth:`abulk_update_state`.

        Example:
            >>> # app.bulk_update_state(config, [[StateUpdate({"n": 1}, as_node="a")]])
        """
        return _sync_call(lambda: self.abulk_update_state(config, supersteps))

    async def _update_superstep(
        self, config: Mapping[str, Any], updates: list[StateUpdate], saver: Any
    ) -> dict[str, Any]:
        conf = dict(config.get("configurable") or {})
        # A checkpointer=True subgraph's one history, whichever task's config names it.
        conf["checkpoint_ns"] = self._history_ns(conf.get("checkpoint_ns") or "")
        saved = await saver.aget_tuple({"configurable": conf})
        run = Run(
            self,
            None,
            {**dict(config), "configurable": conf},
            sink=_nobody,
            durability="sync",
            interrupt_before=(),
            interrupt_after=(),
            # Task ids depend on the namespace: the updates stand in for the real tasks.
            checkpoint_ns=conf["checkpoint_ns"],
        )
        run.wants = set()
        run.channels = self.new_channels()
        if saved is not None:
            run.checkpoint = {
                **saved.checkpoint,
                "channel_values": dict(saved.checkpoint["channel_values"]),
                "channel_versions": dict(saved.checkpoint["channel_versions"]),
                "versions_seen": {k: dict(v) for k, v in saved.checkpoint["versions_seen"].items()},
            }
            self.restore_channels(run.channels, run.checkpoint)
            run._recount()
            run.saved_config = saved.config
            run.saved_versions = dict(saved.checkpoint["channel_versions"])
            step = int((saved.metadata or {}).get("step", -1))
        else:
            run.checkpoint = empty_checkpoint()
            step = -1
        if any(u.as_node == COPY for u in updates):
            return await copy_checkpoint_update(self, run, saved, config, saver, updates)
        if any(u.as_node == INPUT_NODE for u in updates):
            # As a run's input: the START channel gets it, as invoke() would write it.
            if len(updates) > 1:
                raise InvalidUpdateError("Cannot apply multiple updates when updating as input")
            if updates[0].values is None:
                raise InvalidUpdateError(f"Received no input writes for {START}")
            run.apply_writes([], extra=[(START, updates[0].values)])
            return await self._save_update(
                run, conf, saver, "input", step + 1 if saved is not None else -1
            )
        if updates[0].values is None and updates[0].as_node == END:
            if len(updates) > 1:
                raise InvalidUpdateError("Cannot apply multiple updates when clearing state")
            if saved is not None:
                close_superstep(run, saved, step)
            return await self._save_update(run, conf, saver, "update", step + 1)
        if len(updates) == 1 and updates[0].as_node is None:
            updates = [updates[0]._replace(as_node=self._guess_writer(run.checkpoint))]
        # An update stands in for a task the checkpoint had scheduled for its node: its
        # writes are stored as that task's, so the history shows them as its result.
        scheduled: dict[str, list[Task]] = {}
        if saved is not None:
            run.step = step + 1  # task ids depend on the step they run in
            for planned in run.prepare(for_execution=False):
                scheduled.setdefault(planned.name, []).append(planned)
        # The writes stand as the tasks' results on the checkpoint they build on, unless
        # the thread has moved past it: its other children would read them too.
        keeps_writes = saved is not None and not (
            conf.get("checkpoint_id") and await moved_past(saver, conf, saved.checkpoint["id"])
        )
        tasks: list[Task] = []
        for index, (values, as_node, task_id) in enumerate(updates):
            if as_node is None:
                raise InvalidUpdateError("as_node is required when applying multiple updates")
            if as_node not in self.nodes and as_node not in (START, END):
                raise InvalidUpdateError(f"Node {as_node} does not exist")
            planned_for = scheduled.get(as_node) or []
            stands_in = planned_for.pop(0) if planned_for and task_id is None else None
            task = await self._update_task(
                run, values, as_node, stands_in.id if stands_in is not None else task_id, index
            )
            tasks.append(task)
            if keeps_writes and task.id != NULL_TASK_ID:
                encoded = [(c, self.encode_write(c, v)) for c, v in task.writes]
                path = stands_in.sort_key if stands_in is not None else ""
                await saver.aput_writes(saved.config, encoded, task.id, path)
        run.apply_writes(tasks)
        return await self._save_update(run, conf, saver, "update", step + 1)

    async def _save_update(
        self, run: Run, conf: Mapping[str, Any], saver: Any, source: str, step: int
    ) -> dict[str, Any]:
        run.step = step
        run.thread_id = conf.get("thread_id")
        run.saver = saver
        run.ns = conf.get("checkpoint_ns", "")
        await run._put_checkpoint(source)
        assert run.saved_config is not None
        made: dict[str, Any] = with_checkpoint_map(run.saved_config, run.metadata)
        return made

    async def _update_task(
        self, run: Run, values: Any, as_node: str, task_id: str | None, index: int = 0
    ) -> Task:
        """The task whose writes are ``values`` as node ``as_node`` returned them.

        ``index`` is the update's place among those applied together: their writes
        are folded in that order, whatever nodes they stand for.
        """
        if as_node == END:
            writes: list[tuple[str, Any]] = []
        else:
            writes = (
                update_writes(values, self.input_keys)
                if as_node == START
                else self.result_writes(as_node, values)
            )
            writes.extend(control_writes(values))
            writes.extend(self.static_writes[as_node])
            for branch in self.branches.get(as_node, ()):
                fresh = self.local_read(as_node, run.channels, writes, branch.input_schema)
                # Called as the run loop calls a router: it may be async or ask for config.
                picked = await call_with_config(
                    branch.path, fresh, run.config, {}, self.call_shape(branch.path), inline=True
                )
                writes.extend(target_writes(self.branch_targets(branch, picked)))
        return Task(
            task_id or NULL_TASK_ID,
            as_node,
            ("__pregel_update", index),
            None,
            (INTERRUPT,),
            writes,
        )

    def update_state(
        self,
        config: Mapping[str, Any],
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        """The sync form of :meth:`aupdate_state`."""
        return _sync_call(lambda: self.aupdate_state(config, values, as_node, task_id))

    def _guess_writer(self, checkpoint: Mapping[str, Any]) -> str:
        seen = checkpoint.get("versions_seen") or {}
        if len(self.nodes) == 1 and START not in seen:
            return next(iter(self.nodes))
        last = sorted(
            (_sortable(v), n)
            for n, s in seen.items()
            # START counts: after a run's input, it is the last writer (its edges then
            # lead to the nodes the input scheduled).
            if n in self.nodes or n == START
            for v in s.values()
        )
        if not last:
            return START
        if len(last) == 1 or last[-1][0] != last[-2][0]:
            writer: str = last[-1][1]
            return writer
        raise InvalidUpdateError("Ambiguous update, specify as_node")

    async def aclear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """Forget the cached results of ``nodes`` (default: every node).

        Example:
            >>> # await app.aclear_cache(["search"])
        """
        if self.cache is None:
            raise ValueError("No cache is set for this graph. Cannot clear cache.")
        await self.cache.clear([n for n in (nodes or self.nodes) if n in self.nodes])

    def clear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """The sync form of :meth:`aclear_cache`.

        Example:
            >>> # app.clear_cache()
        """
        _sync_call(lambda: self.aclear_cache(nodes))

    def get_graph(
        self, config: Mapping[str, Any] | None = None, *, xray: bool | int = False
    ) -> DrawableGraph:
        """The graph's shape, for drawing (``get_graph().draw_mermaid()``).

        Example:
            >>> # print(app.get_graph().draw_mermaid())
        """
        return DrawableGraph.from_builder(self.builder)

    def with_config(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> _Configured:
        """This graph with ``config`` merged into every call.

        Example:
            >>> # app.with_config(recursion_limit=50).invoke(state)
        """
        return _Configured(self, {**dict(config or {}), **kwargs})

    def __repr__(self) -> str:
        return f"<CompiledStateGraph {self.name!r} nodes={list(self.nodes)}>"


class _Configured:
    """A compiled graph with a default config (what ``with_config`` returns)."""

    def __init__(self, graph: CompiledStateGraph, config: dict[str, Any]) -> None:
        self.graph = graph
        self.config = config

    def _merge(self, config: Mapping[str, Any] | None) -> dict[str, Any]:
        merged = {**self.config, **dict(config or {})}
        merged["configurable"] = {
            **dict(self.config.get("configurable") or {}),
            **dict((config or {}).get("configurable") or {}),
        }
        return merged

    def invoke(self, input: Any, config: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return self.graph.invoke(input, self._merge(config), **kw)

    async def ainvoke(self, input: Any, config: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return await self.graph.ainvoke(input, self._merge(config), **kw)

    def stream(self, input: Any, config: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return self.graph.stream(input, self._merge(config), **kw)

    def astream(self, input: Any, config: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return self.graph.astream(input, self._merge(config), **kw)

    def astream_events(self, input: Any, config: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        merged = merge_bound_config(self.config, config)
        merged["configurable"] = self._merge(config)["configurable"]
        return self.graph.astream_events(input, merged, **kw)

    def stream_events(self, input: Any, config: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return self.graph.stream_events(input, self._merge(config), **kw)


def _plain(arg: Any) -> Any:
    """A Send's argument as savers store it: a Command (or Send) in it as plain data."""
    if isinstance(arg, Send):
        return {"__send__": {"node": arg.node, "arg": _plain(arg.arg)}}
    if isinstance(arg, Command):
        goto = arg.goto
        goto_list = [_plain(g) for g in goto] if isinstance(goto, list | tuple) else _plain(goto)
        return {
            "__command__": {
                "graph": arg.graph,
                "update": arg.update,
                "resume": arg.resume,
                "goto": goto_list,
                # Whether goto was a list, a tuple or one target, to rebuild the same one.
                "goto_seq": type(goto).__name__ if isinstance(goto, list | tuple) else None,
            }
        }
    return arg


def _unplain(arg: Any) -> Any:
    """The inverse of :func:`_plain`."""
    if isinstance(arg, dict) and len(arg) == 1:
        if "__send__" in arg:
            return Send(arg["__send__"]["node"], _unplain(arg["__send__"]["arg"]))
        if "__command__" in arg:
            fields = arg["__command__"]
            seq, goto = fields["goto_seq"], fields["goto"]
            if seq is None:
                goto = _unplain(goto)
            else:
                goto = [_unplain(g) for g in goto]
                goto = tuple(goto) if seq == "tuple" else goto
            return Command(
                graph=fields["graph"], update=fields["update"], resume=fields["resume"], goto=goto
            )
    return arg


def _on_loop(sink: Sink, kind: str) -> Callable[[tuple[str, ...], Any], None]:
    """``kind`` records into ``sink``, handed over to the running loop from worker threads."""
    loop = asyncio.get_running_loop()
    home = threading.get_ident()

    def emit(ns: tuple[str, ...], payload: Any) -> None:
        if threading.get_ident() == home:
            sink(ns, kind, payload)
        else:
            loop.call_soon_threadsafe(sink, ns, kind, payload)

    return emit


def _nobody(ns: tuple[str, ...], kind: str, payload: Any) -> None:
    """The sink of a run made to read or edit a thread: nobody reads its records."""


def _sortable(version: Any) -> tuple[int, Any]:
    return (0, version) if isinstance(version, int | float) else (1, str(version))


class _ChunkFormatter:
    """LangGraph's stream modes as a projection of a run's records (see ``_records``)."""

    def __init__(self, modes: list[str], *, single: bool, subgraphs: bool) -> None:
        self.modes = modes
        self.single = single
        self.subgraphs = subgraphs
        self.seen_messages: set[str] = set()

    def kinds(self) -> set[str]:
        """The record kinds the requested modes are made of (what the run must build)."""
        return kinds_for_modes(self.modes)

    def _wrap(self, ns: tuple[str, ...], mode: str, chunk: Any) -> Any:
        if self.single:
            return (ns, chunk) if self.subgraphs else chunk
        return (ns, mode, chunk) if self.subgraphs else (mode, chunk)

    def _debug(
        self, ns: tuple[str, ...], kind: str, step: int, payload: Any, plain_mode: str
    ) -> list[Any]:
        out: list[Any] = []
        if "debug" in self.modes:
            event = {"step": step, "timestamp": _now(), "type": kind, "payload": payload}
            out.append(self._wrap(ns, "debug", event))
        if plain_mode in self.modes:
            out.append(self._wrap(ns, plain_mode, payload))
        return out

    def format(self, ns: tuple[str, ...], kind: str, payload: Any) -> list[Any]:
        """The chunks one record of the run gives (none for most)."""
        if ns and not self.subgraphs:
            return []
        if kind in ("values", "updates") and kind in self.modes:
            return [self._wrap(ns, kind, payload)]
        if kind == "tools" and "tools" in self.modes:
            return [self._wrap(ns, "tools", payload)]
        if kind == "messages_chunk" and "messages" in self.modes:
            return [self._wrap(ns, "messages", payload)]
        if kind == "custom" and "custom" in self.modes:
            return [self._wrap(ns, "custom", payload.data)]
        if kind == "remote_messages" and "messages" in self.modes:
            # A RemoteGraph node's (message, metadata) pair, as its server streamed it.
            return [self._wrap(ns, "messages", payload)]
        if kind in ("messages_seen", "messages_from"):
            return self._messages(ns, kind, payload)
        if kind == "step_tasks":
            step, tasks = payload
            out: list[Any] = []
            for task in tasks:
                if task.name == START:
                    continue
                payload = {
                    "id": task.id,
                    "name": task.name,
                    "input": task.input,
                    "triggers": task.triggers,
                }
                out.extend(self._debug(ns, "task", step, payload, "tasks"))
            return out
        if kind == "task_end":
            return self._task_result(ns, payload)
        if kind == "checkpoint":
            return self._checkpoint(ns, payload)
        return []

    def _task_result(self, ns: tuple[str, ...], end: TaskEnd) -> list[Any]:
        # LangGraph reports no result for a task stopped from outside, nor for one
        # that handed a Command to its parent graph.
        if end.outcome in ("cancelled", "parent_command"):
            return []
        task = end.task
        keys = set(end.output_keys)
        payload = {
            "id": task.id,
            "name": task.name,
            # The exception itself, as LangGraph streams it (str() gives its message).
            "error": task.error if end.outcome == "error" else None,
            "result": task_result(task.writes, keys),
            "interrupts": [
                {
                    "value": i.value,
                    "id": i.id,
                    "response_schema": getattr(i, "response_schema", None),
                }
                for i in task.interrupts
            ],
        }
        return self._debug(ns, "task_result", end.step, payload, "tasks")

    def _checkpoint(self, ns: tuple[str, ...], made: CheckpointMade) -> list[Any]:
        payload = {
            "config": made.config,
            "parent_config": made.parent_config,
            "values": made.values,
            "metadata": made.metadata,
            "next": [t.name for t in made.upcoming],
            "tasks": [
                {"id": t.id, "name": t.name, "interrupts": (), "state": None} for t in made.upcoming
            ],
        }
        return self._debug(ns, "checkpoint", made.step, payload, "checkpoints")

    def _messages(self, ns: tuple[str, ...], kind: str, payload: Any) -> list[Any]:
        if kind == "messages_seen":
            self.seen_messages.update(m.id for m in _messages_in(payload) if m.id)
            return []
        task, result = payload
        meta = {"langgraph_node": task.name, "langgraph_triggers": task.triggers}
        fresh = []
        # Like LangGraph, a message is streamed once, where it first shows.
        for message in _messages_in(result):
            if message.id and message.id in self.seen_messages:
                continue
            if message.id:
                self.seen_messages.add(message.id)
            fresh.append(message)
        if "messages" not in self.modes:
            return []
        return [self._wrap(ns, "messages", (message, meta)) for message in fresh]


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _messages_in(result: Any) -> list[Any]:
    found: list[Any] = []
    values: list[Any] = []
    if isinstance(result, dict):
        values = list(result.values())
    for value in values:
        items = value if isinstance(value, list) else [value]
        for item in items:
            if hasattr(item, "type") and hasattr(item, "content") and not isinstance(item, dict):
                found.append(item)
    return found


def _in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


T = TypeVar("T")


def _sync_call(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code (in a helper thread inside a running loop)."""
    if not _in_running_loop():
        return asyncio.run(called_from_sync(make()))
    box: dict[str, Any] = {}

    def target() -> None:  # a fresh loop of its own, beside the caller's
        try:
            box["value"] = asyncio.run(called_from_sync(make()))
        except BaseException as exc:  # handed back to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name="flowcore-compat-sync")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def _sync_iter(make: Callable[[], AsyncIterator[Any]]) -> Iterator[Any]:
    """Iterate an async iterator from sync code, on an event loop in a helper thread."""
    items: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=1)
    stop = threading.Event()

    async def pump() -> None:
        agen = make()
        try:
            async for item in agen:
                while not stop.is_set():
                    try:
                        items.put(("item", item), timeout=0.05)
                        break
                    except queue.Full:
                        await asyncio.sleep(0)
                if stop.is_set():
                    break
        finally:
            await agen.aclose()  # type: ignore[attr-defined]

    def target() -> None:
        try:
            asyncio.run(called_from_sync(pump()))
        except BaseException as exc:
            items.put(("error", exc))
        else:
            items.put(("end", None))

    worker = threading.Thread(target=target, name="flowcore-compat-stream", daemon=True)
    worker.start()
    try:
        while True:
            kind, value = items.get()
            if kind == "item":
                yield value
            elif kind == "error":
                raise value
            else:
                return
    finally:
        stop.set()
        while worker.is_alive():
            with contextlib.suppress(queue.Empty):
                items.get(timeout=0.05)
        worker.join()
