"""``stream_events(version="v3")``: a v3 run of a compat graph, and v2 stream parts.

Both are projections of the run's one record stream (``_records``): v2 parts
(``{"type", "ns", "data"}``, ``interrupts`` on ``values``) are LangGraph's
stream-mode chunks with their mode and namespace spelled out; a v3 run reads
v2 parts of exactly the modes its transformers need (every namespace) and
pushes each, as a :class:`ProtocolEvent`, through a :class:`StreamMux` of the
built-in transformers, the graph's compile-time ``transformers`` and the
call's own.

Example:
    >>> # run = app.stream_events({"n": 1}, version="v3")
    >>> # [snapshot for snapshot in run.values], run.output
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from flowcore.compat.langgraph._messages_stream import STREAM_MESSAGES_V2
from flowcore.compat.langgraph._stream_v3_messages import MessagesTransformer
from flowcore.compat.langgraph._stream_v3_mux import StreamMux
from flowcore.compat.langgraph._stream_v3_run import AsyncGraphRunStream, GraphRunStream
from flowcore.compat.langgraph._stream_v3_transformers import (
    LifecycleTransformer,
    SubgraphTransformer,
    ValuesTransformer,
)
from flowcore.compat.langgraph._stream_v3_types import StreamTransformer, TransformerFactory
from flowcore.compat.langgraph._warnings import LangGraphDeprecatedSinceV11, warn_deprecated

__all__ = [
    "GraphOutput",
    "ainvoke_v2",
    "as_part",
    "astream_events_v3",
    "normalize_transformer_factories",
    "part_of_chunk",
    "stream_events_v3",
]

_INTERRUPT = "__interrupt__"
OutputT = TypeVar("OutputT")


@dataclass(frozen=True)
class GraphOutput(Generic[OutputT]):
    """What ``invoke(..., version="v2")`` returns: the output and the pending interrupts.

    Example:
        >>> GraphOutput({"n": 1}).interrupts
        ()
    """

    value: OutputT
    interrupts: tuple[Any, ...] = field(default=())

    def __getitem__(self, key: str) -> Any:
        """Deprecated: ``result[key]`` is ``value[key]`` (``"__interrupt__"``: ``interrupts``)."""
        _warn_dict_access("result[key]")
        if key == _INTERRUPT:
            return self.interrupts
        if isinstance(self.value, dict):
            return self.value[key]
        try:
            return getattr(self.value, key)
        except AttributeError:
            raise KeyError(key) from None

    def __contains__(self, key: object) -> bool:
        """Deprecated: ``key in result`` asks ``value`` (``"__interrupt__"``: any interrupts)."""
        _warn_dict_access("key in result")
        if key == _INTERRUPT:
            return bool(self.interrupts)
        if isinstance(self.value, dict):
            return key in self.value
        return isinstance(key, str) and hasattr(self.value, key)


def _warn_dict_access(spelling: str) -> None:
    """Warn that a GraphOutput is read as the dict it replaced (pointed at the reader)."""
    warn_deprecated(
        LangGraphDeprecatedSinceV11,
        f"Accessing GraphOutput via `{spelling}` is deprecated. Read `result.value` "
        "for the output and `result.interrupts` for the pending interrupts.",
        stacklevel=3,
    )


def _modes(stream_mode: str | Sequence[str] | None, default: str) -> list[str]:
    if stream_mode is None:
        return [default]
    return [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)


def as_part(ns: tuple[str, ...], mode: str, data: Any) -> dict[str, Any]:
    """One v2 stream part; a ``values`` part's interrupts move out of its data."""
    if mode == "values":
        interrupts: Any = ()
        if isinstance(data, dict) and _INTERRUPT in data:
            data = dict(data)
            interrupts = tuple(data.pop(_INTERRUPT) or ())
        return {"type": mode, "ns": ns, "data": data, "interrupts": interrupts}
    return {"type": mode, "ns": ns, "data": data}


def part_of_chunk(chunk: Any, subgraphs: bool, graph: Any = None) -> dict[str, Any]:
    """The v2 part of a multi-mode chunk (``(ns, mode, data)``, or ``(mode, data)`` at the root).

    At the root, a dataclass or pydantic state is given as its own class
    (``values``: the output schema; ``checkpoints`` / ``debug`` checkpoints:
    the state schema), as LangGraph's v2 parts do.
    """
    if subgraphs:
        ns, mode, data = chunk
        ns = tuple(ns)
    else:
        (mode, data), ns = chunk, ()
    part = as_part(ns, mode, data)
    if graph is not None and not ns:
        _coerce_part(graph, part)
    return part


def _typed(info: Any, values: Any) -> Any:
    if info is None or info.kind not in ("pydantic", "dataclass") or not isinstance(values, dict):
        return values
    try:
        return info.coerce(values)
    except Exception:  # partial state (before every key is set): left a dict
        return values


def _coerce_part(graph: Any, part: dict[str, Any]) -> None:
    infos = getattr(graph, "infos", None)
    builder = getattr(graph, "builder", None)
    if not infos or builder is None:
        return
    mode = part["type"]
    if mode == "values":
        part["data"] = _typed(infos.get(getattr(builder, "output_schema", None)), part["data"])
        return
    data = part["data"]
    if mode == "debug" and isinstance(data, dict) and data.get("type") == "checkpoint":
        part["data"] = {**data, "payload": _typed_checkpoint(graph, data.get("payload"))}
    elif mode == "checkpoints":
        part["data"] = _typed_checkpoint(graph, data)


def _typed_checkpoint(graph: Any, data: Any) -> Any:
    if not isinstance(data, dict) or "__start__" in (data.get("next") or ()):
        return data
    return {**data, "values": _typed(getattr(graph, "state_info", None), data.get("values"))}


async def ainvoke_v2(
    graph: Any,
    input: Any,
    config: Mapping[str, Any] | None,
    stream_mode: str,
    kwargs: dict[str, Any],
) -> Any:
    """``ainvoke(..., version="v2")``: a :class:`GraphOutput`, or the v2 parts of other modes."""
    if stream_mode != "values":
        parts = graph.astream(input, config, stream_mode=stream_mode, version="v2", **kwargs)
        return [part async for part in parts]
    result = await graph.ainvoke(input, config, **kwargs)
    interrupts: tuple[Any, ...] = ()
    if isinstance(result, dict) and _INTERRUPT in result:
        result = dict(result)
        interrupts = tuple(result.pop(_INTERRUPT) or ())
    infos = getattr(graph, "infos", None) or {}
    schema = getattr(getattr(graph, "builder", None), "output_schema", None)
    return GraphOutput(value=_typed(infos.get(schema), result), interrupts=interrupts)


def normalize_transformer_factories(
    specs: Iterable[Callable[[tuple[str, ...]], Any]] | None,
) -> list[TransformerFactory]:
    """Check the ``transformers=`` given: each must be a class or a factory of a scope."""
    factories: list[TransformerFactory] = []
    for spec in specs or ():
        if isinstance(spec, StreamTransformer):
            raise TypeError(
                "stream_events(version='v3') transformers must be scope-aware callables, "
                f"got pre-built instance {type(spec).__name__}. Pass the transformer class "
                "or a factory like `lambda scope: MyTransformer(scope, ...)`."
            )
        if not callable(spec):
            raise TypeError(
                "stream_events(version='v3') transformers must be scope-aware callables, "
                f"got {type(spec).__name__}."
            )
        factories.append(spec)
    return factories


_OWNED = ("stream_mode", "subgraphs")


def _mux_for(
    graph: Any,
    config: Mapping[str, Any] | None,
    transformers: Sequence[Callable[[tuple[str, ...]], Any]] | None,
    kwargs: Mapping[str, Any],
    *,
    is_async: bool,
) -> StreamMux:
    owned = [k for k in _OWNED if k in kwargs]
    if owned:
        raise TypeError(
            "stream_events(version='v3') / astream_events(version='v3') do not accept "
            f"{', '.join(owned)}; v3 owns these (stream_mode is built from the transformer "
            "mux, subgraphs is forced True so nested namespaces flow through scoped muxes)."
        )
    builtins: list[TransformerFactory] = [
        ValuesTransformer,
        MessagesTransformer,
        LifecycleTransformer,
        SubgraphTransformer,
    ]
    return StreamMux(
        factories=[
            *builtins,
            *normalize_transformer_factories(getattr(graph, "stream_transformers", ())),
            *normalize_transformer_factories(transformers),
        ],
        scope=_parent_ns(config),
        is_async=is_async,
    )


def _parent_ns(config: Mapping[str, Any] | None) -> tuple[str, ...]:
    ns = ((config or {}).get("configurable") or {}).get("checkpoint_ns") or ""
    return tuple(part for part in str(ns).split("|") if part)


def _protocol_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """``config`` asking chat models for LangChain's protocol events (see ``_messages_stream``)."""
    base = dict(config or {})
    base["configurable"] = {**(base.get("configurable") or {}), STREAM_MESSAGES_V2: True}
    return base


def _required_modes(mux: StreamMux) -> list[str]:
    modes: list[str] = []
    for transformer in mux._transformers:
        for mode in getattr(transformer, "required_stream_modes", ()):
            if mode not in modes:
                modes.append(mode)
    return modes


def stream_events_v3(
    graph: Any,
    input: Any,
    config: Mapping[str, Any] | None = None,
    *,
    interrupt_before: Any = None,
    interrupt_after: Any = None,
    control: Any = None,
    transformers: Sequence[Callable[[tuple[str, ...]], Any]] | None = None,
    **kwargs: Any,
) -> GraphRunStream:
    """A sync v3 run of ``graph``: nothing runs until the handle is read."""
    mux = _mux_for(graph, config, transformers, kwargs, is_async=False)
    parts = graph.stream(
        input,
        _protocol_config(config),
        stream_mode=_required_modes(mux),
        subgraphs=True,
        version="v2",
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        control=control,
        **kwargs,
    )
    return GraphRunStream(iter(parts), mux)


async def astream_events_v3(
    graph: Any,
    input: Any,
    config: Mapping[str, Any] | None = None,
    *,
    interrupt_before: Any = None,
    interrupt_after: Any = None,
    control: Any = None,
    transformers: Sequence[Callable[[tuple[str, ...]], Any]] | None = None,
    **kwargs: Any,
) -> AsyncGraphRunStream:
    """An async v3 run of ``graph``: nothing runs until the handle is read."""
    mux = _mux_for(graph, config, transformers, kwargs, is_async=True)
    parts = graph.astream(
        input,
        _protocol_config(config),
        stream_mode=_required_modes(mux),
        subgraphs=True,
        version="v2",
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        control=control,
        **kwargs,
    )
    return AsyncGraphRunStream(parts.__aiter__(), mux)
