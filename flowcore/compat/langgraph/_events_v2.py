"""LangChain's run events (``astream_events`` versions "v1" and "v2") for compat graphs.

The events are LangChain's own: its event-stream callback handler is added
to the run's callbacks and the graph is streamed with :meth:`astream`, so
what it hears is what the run's callbacks report (see :mod:`._tracing`): the
graph's chain run (``on_chain_start``, one ``on_chain_stream`` per chunk the
stream yields, ``on_chain_end``), each node task's run (start, its output
as one stream chunk, end), and whatever LangChain code inside a node
reports (chat models, tools, nested graphs). Everything comes from the one
run the loop executes; nothing is run twice. Needs ``langchain_core``.

Example:
    >>> # async for event in astream_events_v2(app, {"n": 1}):
    >>> #     print(event["event"], event["name"])
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any, Protocol

from flowcore.compat.langgraph._langchain import require_langchain_module

__all__ = ["astream_events_v1", "astream_events_v2", "astream_log", "merge_bound_config"]


class _Streamable(Protocol):
    """A graph as these functions use it."""

    name: str

    def astream(
        self, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """Stream the run's chunks."""
        ...


class _AsRunnable:
    """The little of LangChain's ``Runnable`` its event implementations use."""

    def __init__(self, graph: _Streamable) -> None:
        self.graph = graph

    def get_name(self) -> str:
        return str(getattr(self.graph, "name", None) or "LangGraph")

    def astream(
        self, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        return self.graph.astream(input, config, **kwargs)


def _event_module() -> Any:
    return require_langchain_module("tracers.event_stream", "astream_events")


async def astream_events_v2(
    graph: _Streamable, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
) -> AsyncIterator[dict[str, Any]]:
    """Run ``graph`` and yield LangChain's "v2" events of the run, as they happen.

    ``kwargs`` are LangChain's filters (``include_names``, ``include_types``,
    ``include_tags`` and their ``exclude_`` forms) and :meth:`astream` options
    (``stream_mode``, ``durability``, ``context``...).

    Example:
        >>> # [e["event"] async for e in astream_events_v2(app, {"n": 1})][0]
        >>> # 'on_chain_start'
    """
    module = _event_module()
    stream = module._astream_events_implementation_v2(
        _AsRunnable(graph), input, dict(config) if config is not None else None, **kwargs
    )
    async with aclosing(stream):
        async for event in stream:
            yield dict(event)


async def astream_events_v1(
    graph: _Streamable, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
) -> AsyncIterator[dict[str, Any]]:
    """The same run's events in LangChain's older "v1" schema (built from its run log).

    Example:
        >>> # [e["event"] async for e in astream_events_v1(app, {"n": 1})][-1]
        >>> # 'on_chain_end'
    """
    module = _event_module()
    stream = module._astream_events_implementation_v1(
        _AsRunnable(graph), input, dict(config) if config is not None else None, **kwargs
    )
    async with aclosing(stream):
        async for event in stream:
            yield dict(event)


async def astream_log(
    graph: _Streamable, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
) -> AsyncIterator[Any]:
    """Run ``graph`` and yield LangChain's run-log patches (``RunLogPatch``) as they happen.

    This is LangChain's own ``Runnable.astream_log`` (its filters, ``diff``,
    ``with_streamed_output_list``, and its deprecation warning) over the
    graph's :meth:`astream`; other ``kwargs`` go to :meth:`astream`.

    Example:
        >>> # paths = [op["path"] async for p in astream_log(app, {"n": 1}) for op in p.ops]
    """
    base = require_langchain_module("runnables.base", "astream_log")
    stream = base.Runnable.astream_log(
        _AsRunnable(graph), input, dict(config) if config is not None else None, **kwargs
    )
    async with aclosing(stream):
        async for patch in stream:
            yield patch


def merge_bound_config(bound: Mapping[str, Any], given: Mapping[str, Any] | None) -> dict[str, Any]:
    """A ``with_config`` graph's bound config under a call's config, callbacks kept from both.

    Example:
        >>> merge_bound_config({"callbacks": ["a"]}, {"callbacks": ["b"]})["callbacks"]
        ['a', 'b']
    """
    merged = {**dict(bound), **dict(given or {})}
    mine, theirs = bound.get("callbacks"), (given or {}).get("callbacks")
    if isinstance(mine, list) and isinstance(theirs, list):
        merged["callbacks"] = [*mine, *theirs]
    elif mine is not None and theirs is None:
        merged["callbacks"] = mine
    return merged
