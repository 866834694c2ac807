"""LangGraph's ``NodeBuilder``: the nodes of a low-level ``Pregel`` graph, built step by step.

A node subscribes to channels (it runs when one of them is written, and reads
their values), calls one or more functions in turn on what it read, and writes
the result to channels (``write_to``). :class:`NodeBuilder` records those
choices and :meth:`NodeBuilder.build` gives the :class:`PregelNode` the graph
(:mod:`._lowlevel`) runs.

Example:
    >>> node = NodeBuilder().subscribe_only("a").do(lambda x: x + 1).write_to("b").build()
    >>> node.triggers, node.writers[0].channel
    (['a'], 'b')
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NamedTuple, Self

from flowcore.compat.langgraph._node import call_with_config, describe_callable
from flowcore.compat.langgraph._pregel import CompiledStateGraph
from flowcore.compat.langgraph._types import RetryPolicy, TimeoutPolicy

__all__ = ["PASSTHROUGH", "ChannelWriteEntry", "NodeBuilder", "PregelNode"]


class _Passthrough:
    __slots__ = ()

    def __repr__(self) -> str:
        return "PASSTHROUGH"


PASSTHROUGH: Any = _Passthrough()
"""A ``ChannelWriteEntry`` value meaning: write what the node returned."""


class ChannelWriteEntry(NamedTuple):
    """One write a node makes after it runs: to ``channel``, its result or a fixed value.

    ``mapper`` turns the value into what is written; ``skip_none`` writes nothing
    for None.

    Example:
        >>> ChannelWriteEntry("out", mapper=lambda x: x * 2).channel
        'out'
    """

    channel: str
    value: Any = PASSTHROUGH
    skip_none: bool = False
    mapper: Callable[[Any], Any] | None = None


class _Sequence:
    """``do()`` steps run one after the other, each getting the last one's result.

    Also the wrapper of a single step that is neither a function nor a compiled
    graph (a mock, a LangChain runnable, a callable object), so that the run
    loop never mistakes what such an object happens to answer for a subgraph.
    """

    def __init__(self, steps: Sequence[Any]) -> None:
        self.steps = list(steps)

    async def __call__(self, value: Any, config: Any) -> Any:
        for step in self.steps:
            value = await _call_step(step, value, config)
        return value


async def _call_step(step: Any, value: Any, config: Any) -> Any:
    if callable(step) and not isinstance(step, CompiledStateGraph):
        return await call_with_config(step, value, config, {}, describe_callable(step))
    if isinstance(step, CompiledStateGraph):
        # A graph inside a sequence runs on its own, not on its caller's thread.
        config = {k: v for k, v in dict(config or {}).items() if k != "configurable"}
    return await step.ainvoke(value, config)


def _identity(value: Any) -> Any:
    return value


def _as_action(steps: Sequence[Any]) -> Any:
    if not steps:
        return _identity
    step = steps[0]
    plain = (
        inspect.isfunction(step)
        or inspect.ismethod(step)
        or inspect.isbuiltin(step)
        or isinstance(step, (functools.partial, CompiledStateGraph))
    )
    if len(steps) == 1 and plain:
        return step
    return _Sequence(steps)


@dataclass(slots=True)
class PregelNode:
    """A built node: what it reads, what wakes it, what it runs and where its result goes.

    ``channels`` is one channel name (the node gets that channel's value) or a
    list (it gets a dict of those that hold a value).

    Example:
        >>> PregelNode(channels="a", triggers=["a"]).channels
        'a'
    """

    channels: str | list[str]
    triggers: list[str]
    bound: Any = _identity
    writers: list[ChannelWriteEntry] = field(default_factory=list)
    retry_policy: list[RetryPolicy] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    # NodeSpec's fields, so the run loop treats this node as it treats a StateGraph node.
    name: str = ""
    input_schema: Any = None
    defer: bool = False
    destinations: tuple[str, ...] | None = None
    timeout: TimeoutPolicy | None = None

    def __post_init__(self) -> None:
        # A bare number or timedelta becomes a policy; a bad one fails here, where it was given.
        self.timeout = TimeoutPolicy.coerce(self.timeout)

    @property
    def action(self) -> Any:
        """The function the run loop calls."""
        return self.bound

    @property
    def retry(self) -> Sequence[RetryPolicy] | None:
        """The retry policies, as the run loop reads them (None: no retry)."""
        return self.retry_policy or None


class NodeBuilder:
    """Builds a :class:`PregelNode` step by step, as LangGraph's ``NodeBuilder`` does.

    Example:
        >>> NodeBuilder().subscribe_only("a").write_to("b").build().triggers
        ['a']
    """

    def __init__(self) -> None:
        self._channels: str | list[str] = []
        self._triggers: list[str] = []
        self._steps: list[Any] = []
        self._writes: list[ChannelWriteEntry] = []
        self._retry: list[RetryPolicy] = []
        self._timeout: TimeoutPolicy | None = None
        self._tags: list[str] = []
        self._metadata: dict[str, Any] = {}

    def subscribe_only(self, channel: str) -> Self:
        """Run when ``channel`` is written, with its value as the input."""
        if self._channels:
            raise ValueError(
                "Cannot subscribe to single channels when other channels are already "
                "subscribed to; use subscribe_to() for several channels"
            )
        self._channels = channel
        self._triggers.append(channel)
        return self

    def subscribe_to(self, *channels: str, read: bool = True) -> Self:
        """Run when any of ``channels`` is written; with ``read``, get them as a dict."""
        if isinstance(self._channels, str):
            raise ValueError(
                "Cannot subscribe to channels when subscribed to a single channel; "
                "use subscribe_to() for every channel instead of subscribe_only()"
            )
        if read:
            self._channels.extend(channels)
        self._triggers.extend(channels)
        return self

    def read_from(self, *channels: str) -> Self:
        """Also get ``channels`` in the input dict, without being woken by them."""
        if isinstance(self._channels, str):
            raise ValueError(
                "Cannot read additional channels when subscribed to a single channel; "
                "use subscribe_to() instead of subscribe_only()"
            )
        self._channels.extend(channels)
        return self

    def do(self, node: Any) -> Self:
        """Call ``node`` on the input (several ``do()`` calls run in turn)."""
        self._steps.append(node)
        return self

    def write_to(self, *channels: str | ChannelWriteEntry, **kwargs: Any) -> Self:
        """Write the result to ``channels``; ``name=value`` writes a fixed value, or
        ``name=callable`` what the callable makes of the result."""
        self._writes.extend(ChannelWriteEntry(c) if isinstance(c, str) else c for c in channels)
        self._writes.extend(
            ChannelWriteEntry(k, mapper=v) if callable(v) else ChannelWriteEntry(k, value=v)
            for k, v in kwargs.items()
        )
        return self

    def meta(self, *tags: str, **metadata: Any) -> Self:
        """Tags and metadata for the node's runs."""
        self._tags.extend(tags)
        self._metadata.update(metadata)
        return self

    def add_retry_policies(self, *policies: RetryPolicy) -> Self:
        """Retry the node as these policies say when it fails."""
        self._retry.extend(policies)
        return self

    def set_timeout(self, timeout: float | timedelta | TimeoutPolicy | None) -> Self:
        """Cap each attempt of the node (seconds, a ``timedelta`` or a ``TimeoutPolicy``).

        Example:
            >>> NodeBuilder().set_timeout(5).build().timeout.run_timeout
            5.0
        """
        self._timeout = TimeoutPolicy.coerce(timeout)
        return self

    def build(self) -> PregelNode:
        """The node."""
        channels = self._channels if isinstance(self._channels, str) else list(self._channels)
        return PregelNode(
            channels=channels,
            triggers=list(self._triggers),
            bound=_as_action(self._steps),
            writers=list(self._writes),
            retry_policy=list(self._retry),
            timeout=self._timeout,
            tags=list(self._tags),
            metadata=dict(self._metadata),
        )
