"""LangGraph's low-level API: ``Pregel`` graphs built from channels and ``NodeBuilder`` nodes.

A ``Pregel`` graph is what a ``StateGraph`` compiles to in LangGraph, written
by hand: named channels, and nodes that subscribe to some of them, call a
function on what they read and write its result to others. Here it is a
:class:`~flowcore.compat.langgraph._pregel.CompiledStateGraph` whose shape
comes from those channels and nodes instead of a builder, so it runs on the
same planner (:mod:`._planner`) and run loop (:mod:`._loop`), with the same
checkpoints, streams, retries and interrupts.

Example:
    >>> from flowcore.compat.langgraph._channel_api import LastValue
    >>> node = NodeBuilder().subscribe_only("a").do(lambda x: x + 1).write_to("b")
    >>> app = Pregel(
    ...     nodes={"inc": node},
    ...     channels={"a": LastValue(int), "b": LastValue(int)},
    ...     input_channels="a",
    ...     output_channels="b",
    ... )
    >>> app.invoke(1)
    2
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Self

from flowcore.compat.langgraph._async_check import has_native_async
from flowcore.compat.langgraph._channel_api import BaseChannel, Topic, is_one_step
from flowcore.compat.langgraph._channels import MISSING, Channel
from flowcore.compat.langgraph._node import TASKS
from flowcore.compat.langgraph._node_builder import PASSTHROUGH, NodeBuilder, PregelNode
from flowcore.compat.langgraph._pregel import CompiledStateGraph
from flowcore.compat.langgraph._pregel_helpers import DEFAULT_RECURSION_LIMIT, _Topic
from flowcore.compat.langgraph._types import RetryPolicy, Send
from flowcore.compat.langgraph._warnings import LangGraphDeprecatedSinceV10, warn_deprecated

__all__ = ["Pregel"]

_RESERVED = frozenset({"__start__", "__end__", TASKS, "__interrupt__", "__resume__", "__error__"})


class _Each:
    """A graph run once per item of a list (what ``Pregel.map()`` returns)."""

    def __init__(self, graph: CompiledStateGraph) -> None:
        self.graph = graph

    async def __call__(self, values: Sequence[Any], config: Any) -> list[Any]:
        config = {k: v for k, v in dict(config or {}).items() if k != "configurable"}
        return [await self.graph.ainvoke(value, config) for value in values]


class _Scalar(str):
    """An output channel named on its own (``output_channels="out"``): read as its value."""

    __slots__ = ()


def _keys(spec: str | Sequence[str]) -> list[str]:
    return [_Scalar(spec)] if isinstance(spec, str) else [str(c) for c in spec]


def _names(spec: str | Sequence[str]) -> list[str]:
    return [spec] if isinstance(spec, str) else list(spec)


class Pregel(CompiledStateGraph):
    """A graph of channels and nodes, run on flowcore's LangGraph runtime.

    Example:
        >>> # app = Pregel(nodes={"one": node}, channels={"a": LastValue(int), ...},
        >>> #              input_channels="a", output_channels="b")
        >>> # app.invoke(1)
    """

    stream_mode = "values"

    def __init__(
        self,
        *,
        nodes: Mapping[str, PregelNode | NodeBuilder],
        channels: Mapping[str, Channel] | None = None,
        input_channels: str | Sequence[str],
        output_channels: str | Sequence[str],
        stream_channels: str | Sequence[str] | None = None,
        stream_mode: str = "values",
        interrupt_before_nodes: Sequence[str] | str = (),
        interrupt_after_nodes: Sequence[str] | str = (),
        checkpointer: Any = None,
        store: Any = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        context_schema: Any = None,
        name: str = "LangGraph",
        debug: bool = False,
        auto_validate: bool = True,
        **legacy: Any,
    ) -> None:
        if legacy.get("config_type") is not None:
            warn_deprecated(
                LangGraphDeprecatedSinceV10,
                "`config_type` is deprecated and will be removed. "
                "Please use `context_schema` instead.",
            )
            context_schema = context_schema if context_schema is not None else legacy["config_type"]
        self.checkpointer = checkpointer
        # As a subgraph with checkpointer=True it keeps its own history (see _arun_subgraph).
        self.own_history = checkpointer is True
        # Set by CompiledStateGraph.__init__, which a Pregel graph does not run: no node
        # cache, and its output is its channels (never a root-state graph's one value).
        self.cache = None
        self.root_output = False
        # Results become writes through each node's write_to entries, never key by key.
        self.dict_results = False
        self.store = store
        self.name = name
        self.debug = debug
        self.stream_mode = stream_mode
        self.context_schema = context_schema
        self.default_recursion_limit = DEFAULT_RECURSION_LIMIT
        self.channel_specs: dict[str, Channel] = dict(channels or {})
        self.input_channels = input_channels
        self.output_channels = output_channels
        self.stream_channels = stream_channels
        defaults = (
            []
            if retry_policy is None
            else [retry_policy]
            if isinstance(retry_policy, RetryPolicy)
            else list(retry_policy)
        )
        built: dict[str, PregelNode] = {}
        for node_name, node in nodes.items():
            spec = node.build() if isinstance(node, NodeBuilder) else node
            if not isinstance(spec, PregelNode):
                raise TypeError(
                    f"Invalid node type {type(node).__name__} for node '{node_name}', "
                    "expected PregelNode or NodeBuilder"
                )
            spec.name = node_name
            if not spec.retry_policy and defaults:
                spec.retry_policy = list(defaults)
            built[node_name] = spec
        self.nodes: dict[str, Any] = built
        self.interrupt_before_nodes = (
            tuple(built) if interrupt_before_nodes == "*" else tuple(interrupt_before_nodes)
        )
        self.interrupt_after_nodes = (
            tuple(built) if interrupt_after_nodes == "*" else tuple(interrupt_after_nodes)
        )
        if auto_validate:
            self.validate()
        self.node_order = list(built)
        self.state_keys = list(self.channel_specs)
        self.state_key_set = frozenset(self.state_keys)
        self.input_keys = _names(input_channels)
        self.input_key_set = frozenset(self.input_keys)
        self.output_keys = _keys(output_channels)
        # Without stream_channels, "values" chunks and snapshots show every channel.
        self.stream_keys = (
            list(self.state_keys) if stream_channels is None else _keys(stream_channels)
        )
        self.triggers = {n: list(spec.triggers) for n, spec in built.items()}
        self.static_writes = {n: [] for n in built}
        self.branches = {}
        woken: dict[str, list[str]] = {}
        for node_name, chans in self.triggers.items():
            for chan in chans:
                woken.setdefault(chan, []).append(node_name)
        self._trigger_to_nodes = woken
        self.trigger_channels = frozenset(woken)
        self._node_rank = {n: i for i, n in enumerate(self.node_order)}
        one_step = {n for n, c in self.channel_specs.items() if is_one_step(c)}
        one_step.add(TASKS)
        self.ephemeral_channels = frozenset(one_step)
        self.finishable_channels = ()
        self._param_names = {}
        self._direct = {}
        self._input_infos = {}
        self._route_writes = {}
        self._version = None

    @property
    def checkpointer(self) -> Any:
        """The saver of runs that name a thread (None: none, or the parent graph's)."""
        return self._checkpointer

    @checkpointer.setter
    def checkpointer(self, value: Any) -> None:
        # LangGraph's True/False (inherit / never) both mean: no saver of its own here.
        self._checkpointer = None if value is True or value is False else value

    # -------------------------------------------------------------- checks
    def validate(self) -> Self:
        """Check that every channel a node or the graph names exists; raise ``ValueError``.

        Example:
            >>> # Pregel(..., auto_validate=False).validate()
        """
        known = self.channel_specs
        listing = repr(sorted(known))[:100]
        subscribed: set[str] = set()
        for node_name, node in self.nodes.items():
            if node_name in _RESERVED:
                raise ValueError(f"Node name '{node_name}' is reserved; rename the node")
            subscribed.update(node.triggers)
            for chan in _names(node.channels):
                if chan not in known:
                    raise ValueError(
                        f"Node {node_name} reads channel '{chan}' not in known channels: "
                        f"'{listing}'"
                    )
        for chan in known:
            if chan in _RESERVED:
                raise ValueError(f"Channel name '{chan}' is reserved; rename the channel")
        for chan in subscribed:
            if chan not in known:
                raise ValueError(f"Subscribed channel '{chan}' not in known channels: '{listing}'")
        inputs = _names(self.input_channels)
        for chan in inputs:
            if chan not in known:
                raise ValueError(f"Input channel '{chan}' not in known channels: '{listing}'")
        if not any(chan in subscribed for chan in inputs):
            raise ValueError(
                f"Input channel(s) {self.input_channels} are not subscribed to by any node; "
                "subscribe a node to one of them"
            )
        outputs = set(_names(self.output_channels))
        if self.stream_channels is not None:
            outputs.update(_names(self.stream_channels))
        for chan in outputs:
            if chan not in known:
                raise ValueError(f"Output channel '{chan}' not in known channels: '{listing}'")
        for node_name in (*self.interrupt_before_nodes, *self.interrupt_after_nodes):
            if node_name not in self.nodes:
                raise ValueError(f"Node {node_name} not in nodes")
        for node_name, node in self.nodes.items():
            if node.timeout is not None and not has_native_async(node.bound):
                raise ValueError(
                    f"Node {node_name!r} has a timeout, but timeouts are only supported for "
                    "async nodes: sync code cannot be stopped once it runs. Make every "
                    "step of it async, or remove its timeout."
                )
        return self

    # -------------------------------------------------------------- shape
    @property
    def version(self) -> str:
        """A digest of the graph's nodes and channels (see ``CompiledStateGraph.version``)."""
        if self._version is None:
            shape = repr(
                (
                    sorted((n, _names(s.channels), s.triggers) for n, s in self.nodes.items()),
                    sorted((n, type(c).__name__) for n, c in self.channel_specs.items()),
                )
            )
            self._version = hashlib.sha256(shape.encode()).hexdigest()[:12]
        return self._version

    @version.setter
    def version(self, value: str) -> None:
        self._version = str(value)

    def _context_schema(self) -> Any:
        return self.context_schema

    # ----------------------------------------------------------- channels
    @property
    def channels(self) -> dict[str, Channel]:
        """The channels the graph was built with, by name."""
        return dict(self.channel_specs)

    def new_channels(self) -> dict[str, Channel]:
        channels: dict[str, Channel] = {}
        for name, spec in self.channel_specs.items():
            # A channel class of LangGraph's API starts empty from_checkpoint(MISSING);
            # any other flowcore channel is copied.
            made = getattr(spec, "from_checkpoint", None)
            channel: Channel = made(MISSING) if made is not None else spec.copy()
            channel.key = name
            channels[name] = channel
        channels[TASKS] = _Topic(TASKS)
        return channels

    def snapshot_channels(self, channels: Mapping[str, Channel]) -> dict[str, Any]:
        stored: dict[str, Any] = {}
        for name, channel in channels.items():
            value = channel.snapshot()
            if value is not MISSING and value is not None:
                stored[name] = value
        return stored

    # ---------------------------------------------------------- reading
    def read_input(
        self,
        node: str,
        channels: Mapping[str, Channel],
        steps: tuple[int, int] | None = None,
        reads: dict[int, Any] | None = None,
    ) -> Any:
        spec = self.nodes[node]
        if isinstance(spec.channels, str):
            channel = channels[spec.channels]
            return channel.value if channel.is_available() else None
        return {
            chan: channels[chan].value
            for chan in spec.channels
            if chan in channels and channels[chan].is_available()
        }

    def read_output(
        self, channels: Mapping[str, Channel], keys: Sequence[str] | None = None
    ) -> Any:
        keys = self.output_keys if keys is None else keys
        if len(keys) == 1 and isinstance(keys[0], _Scalar):
            channel = channels.get(keys[0])
            if channel is None or not channel.is_available():
                return None
            return _value(channel)
        return {
            k: _value(channels[k]) for k in keys if k in channels and channels[k].is_available()
        }

    def local_read(
        self,
        node: str,
        channels: Mapping[str, Channel],
        writes: Sequence[tuple[str, Any]],
        schema: Any = None,
    ) -> Any:
        return self.read_input(node, channels)

    # ------------------------------------------------------------ writing
    def input_writes(self, value: Any) -> list[tuple[str, Any]]:
        """The writes a run's input makes: to the input channel, or per input key."""
        if isinstance(self.input_channels, str):
            return [(self.input_channels, value)]
        if not isinstance(value, dict):
            raise TypeError(
                f"Expected a dict input with keys among {list(self.input_channels)}, "
                f"got {type(value).__name__}"
            )
        return [(k, v) for k, v in value.items() if k in self.input_key_set]

    def result_writes(self, node: str, result: Any) -> list[tuple[str, Any]]:
        """The writes node ``node`` makes with its result, as its ``write_to`` said."""
        writes: list[tuple[str, Any]] = []
        for entry in self.nodes[node].writers:
            value = result if entry.value is PASSTHROUGH else entry.value
            if entry.mapper is not None:
                value = entry.mapper(value)
            if entry.skip_none and value is None:
                continue
            if isinstance(value, Send):
                writes.append((TASKS, value))
                continue
            writes.append((entry.channel, value))
        return writes

    def task_update(self, update: Any, keys: Sequence[str]) -> Any:
        """A node's ``updates`` chunk: the value itself for a single output channel."""
        if len(keys) == 1 and isinstance(keys[0], _Scalar):
            if isinstance(update, dict):
                return update.get(keys[0])
            if isinstance(update, list):  # several writes: each value, in order
                return [item.get(keys[0]) for item in update]
        return update

    def map(self) -> Any:
        """A node step that runs this graph on each item of a list, giving the list of outputs.

        Example:
            >>> # NodeBuilder().subscribe_only("items").do(inner.map()).write_to("results")
        """
        return _Each(self)

    # ------------------------------------------------------------ schemas
    def _schema(self, title: str, spec: str | Sequence[str]) -> Any:
        from pydantic import RootModel, create_model

        if isinstance(spec, str):
            typ = _value_type(self.channel_specs[spec])
            return type(title, (RootModel[typ],), {})  # type: ignore[valid-type]
        fields: dict[str, Any] = {
            chan: (_value_type(self.channel_specs[chan]), None) for chan in spec
        }
        return create_model(title, **fields)

    @property
    def input_schema(self) -> Any:
        """A pydantic model of the input (``model_json_schema()`` as LangGraph's)."""
        return self._schema("LangGraphInput", self.input_channels)

    @property
    def output_schema(self) -> Any:
        """A pydantic model of the output."""
        return self._schema("LangGraphOutput", self.output_channels)

    def get_input_jsonschema(self, config: Any = None) -> dict[str, Any]:
        """The JSON schema of :attr:`input_schema`."""
        found: dict[str, Any] = self.input_schema.model_json_schema()
        return found

    def get_output_jsonschema(self, config: Any = None) -> dict[str, Any]:
        """The JSON schema of :attr:`output_schema`."""
        found: dict[str, Any] = self.output_schema.model_json_schema()
        return found

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        """The JSON schema of ``context_schema`` (None without one)."""
        if self.context_schema is None:
            return None
        from pydantic import TypeAdapter

        schema: dict[str, Any] = TypeAdapter(self.context_schema).json_schema()
        return schema

    def get_graph(
        self, config: Mapping[str, Any] | None = None, *, xray: bool | int = False
    ) -> Any:
        raise NotImplementedError("drawing a low-level Pregel graph is not supported yet")

    def __repr__(self) -> str:
        return (
            f"<Pregel {self.name!r} nodes={list(self.nodes)} channels={list(self.channel_specs)}>"
        )


def _value_type(channel: Channel) -> Any:
    return channel.ValueType if isinstance(channel, BaseChannel) else Any


def _value(channel: Channel) -> Any:
    return channel.get() if isinstance(channel, BaseChannel | Topic) else channel.value
