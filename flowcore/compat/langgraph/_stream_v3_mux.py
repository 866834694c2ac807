"""``StreamMux``: passes a v3 run's events through its transformers into one log.

The mux owns the run's main event log (a :class:`StreamChannel` of
:class:`ProtocolEvent`), the registered transformers and the channels their
projections hold. ``push`` / ``apush`` hand an event to every transformer in
order, then append it to the log (numbered with ``seq`` at the root) unless
one of them dropped it; ``close`` / ``fail`` (and async forms) end the run's
projections. A subgraph's handle gets a child mux (:meth:`_make_child`) built
from the same factories for the subgraph's namespace.

Example:
    >>> mux = StreamMux()
    >>> params = {"namespace": [], "timestamp": 0, "data": 1}
    >>> mux.push({"type": "event", "method": "custom", "params": params})
    >>> mux._seq
    1
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from flowcore.compat.langgraph._stream_v3_channel import StreamChannel
from flowcore.compat.langgraph._stream_v3_types import (
    ProtocolEvent,
    StreamTransformer,
    TransformerFactory,
    transformer_requires_async,
)

__all__ = ["StreamMux"]


class StreamMux:
    """The transformer pipeline and main event log of one (sub)graph scope of a v3 run."""

    def __init__(
        self,
        transformers: Sequence[StreamTransformer] | None = None,
        *,
        is_async: bool = False,
        factories: Sequence[TransformerFactory] | None = None,
        scope: tuple[str, ...] = (),
        _assign_seq: bool = True,
    ) -> None:
        self.is_async = is_async
        self.scope: tuple[str, ...] = tuple(scope)
        self._assign_seq = _assign_seq
        self._events: StreamChannel[ProtocolEvent] = StreamChannel()
        self._events._bind(is_async=is_async)
        self._events._bind_mux(self)
        self._transformers: list[StreamTransformer] = []
        self._channels: list[StreamChannel[Any]] = []
        self._seq = 0
        self._push_seq = 0
        self.extensions: dict[str, Any] = {}
        self.native_keys: set[str] = set()
        self._owners: dict[str, StreamTransformer] = {}
        self._factories: list[TransformerFactory] | None = (
            list(factories) if factories is not None else None
        )
        self._pump_fn: Callable[[], bool] | None = None
        self._apump_fn: Callable[[], Awaitable[bool]] | None = None
        built = [factory(self.scope) for factory in self._factories or ()]
        for group in (built, list(transformers or ())):
            early = [t for t in group if getattr(t, "before_builtins", False)]
            for transformer in early + [t for t in group if t not in early]:
                self._register(transformer)

    def transformer_by_key(self, key: str) -> StreamTransformer | None:
        """The transformer whose projection has ``key``."""
        return self._owners.get(key)

    def _next_push_seq(self) -> int:
        self._push_seq += 1
        return self._push_seq

    def bind_pump(self, fn: Callable[[], bool]) -> None:
        """Give every channel the sync pump that drives the graph one part further."""
        self._pump_fn = fn
        for channel in (self._events, *self._channels):
            channel._request_more = fn
        for transformer in self._transformers:
            hook = getattr(transformer, "_bind_pump", None)
            if hook is not None:
                hook(fn)

    def bind_apump(self, fn: Callable[[], Awaitable[bool]]) -> None:
        """Give every channel the async pump."""
        self._apump_fn = fn
        for channel in (self._events, *self._channels):
            channel._arequest_more = fn
        for transformer in self._transformers:
            hook = getattr(transformer, "_bind_apump", None)
            if hook is not None:
                hook(fn)

    def _make_child(self, scope: tuple[str, ...]) -> StreamMux:
        if self._factories is None:
            raise RuntimeError(
                "StreamMux._make_child needs a mux built with factories=: "
                "ready-made transformers cannot be rebuilt for another scope."
            )
        child = StreamMux(
            factories=self._factories, is_async=self.is_async, scope=scope, _assign_seq=False
        )
        if self._pump_fn is not None:
            child.bind_pump(self._pump_fn)
        if self._apump_fn is not None:
            child.bind_apump(self._apump_fn)
        return child

    def _register(self, transformer: StreamTransformer) -> None:
        if transformer_requires_async(transformer) and not self.is_async:
            raise RuntimeError(
                f"{type(transformer).__name__} requires an async run — it overrides "
                "aprocess/afinalize/afail or sets requires_async=True. "
                "Use astream(), not stream()."
            )
        projection = transformer.init()
        if not isinstance(projection, dict):
            raise TypeError(
                f"StreamTransformer.init() must return a dict, got {type(projection).__name__}"
            )
        clashes = sorted(set(projection) & set(self.extensions))
        if clashes:
            owned = ", ".join(f"{k!r} (owned by {type(self._owners[k]).__name__})" for k in clashes)
            raise ValueError(
                f"Transformer {type(transformer).__name__} returned projection keys that "
                f"conflict with already-registered keys: {owned}"
            )
        native = bool(getattr(transformer, "_native", False))
        self._transformers.append(transformer)
        for value in projection.values():
            if isinstance(value, StreamChannel):
                self._adopt(value, native=native)
        self.extensions.update(projection)
        for key in projection:
            self._owners[key] = transformer
        if native:
            self.native_keys.update(projection)
        transformer._on_register(self)

    def _adopt(self, channel: StreamChannel[Any], *, native: bool) -> None:
        channel._bind(is_async=self.is_async)
        channel._bind_mux(self)
        self._channels.append(channel)
        if channel.name is not None:
            method = channel.name if native else f"custom:{channel.name}"
            channel._wire(self._forwarder(method))

    def _forwarder(self, method: str) -> Callable[[Any], None]:
        def forward(item: Any) -> None:
            self._forward(method, item)

        return forward

    def _append(self, event: ProtocolEvent) -> None:
        if self._assign_seq:
            self._seq += 1
            event["seq"] = self._seq
        self._events.push(event)

    def _forward(self, method: str, item: Any) -> None:
        self._append(
            {
                "type": "event",
                "method": method,
                "params": {"namespace": [], "timestamp": int(time.time() * 1000), "data": item},
            }
        )

    def push(self, event: ProtocolEvent) -> None:
        """Show ``event`` to every transformer, then log it unless one dropped it."""
        keep = True
        for transformer in self._transformers:
            if not transformer.process(event):
                keep = False
        if keep:
            self._append(event)

    async def apush(self, event: ProtocolEvent) -> None:
        """The async lane of :meth:`push`."""
        keep = True
        for transformer in self._transformers:
            if not await transformer.aprocess(event):
                keep = False
        if keep:
            self._append(event)

    def _close_channels(self) -> None:
        for channel in self._channels:
            if not channel._closed:
                channel.close()
        self._events.close()

    def _fail_channels(self, err: BaseException) -> None:
        for channel in self._channels:
            if not channel._closed:
                channel.fail(err)
        if not self._events._closed:
            self._events.fail(err)

    def close(self) -> None:
        """The run ended: finalize every transformer and close the channels."""
        first: BaseException | None = None
        for transformer in self._transformers:
            try:
                transformer.finalize()
            except BaseException as exc:
                first = first or exc
        self._close_channels()
        if first is not None:
            raise first

    def fail(self, err: BaseException) -> None:
        """The run failed with ``err``: tell the transformers and fail the channels."""
        for transformer in self._transformers:
            with contextlib.suppress(BaseException):
                transformer.fail(err)
        self._fail_channels(err)

    def _pending(self) -> list[asyncio.Task[Any]]:
        return [
            task
            for transformer in self._transformers
            for task in getattr(transformer, "_stream_scheduled_tasks", ())
            if not task.done()
        ]

    async def aclose(self) -> None:
        """The async lane of :meth:`close`: waits for scheduled work first."""
        pending = self._pending()
        if pending:
            results = await asyncio.gather(*pending, return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException) and not isinstance(
                    result, asyncio.CancelledError
                ):
                    raise result
        first: BaseException | None = None
        for transformer in self._transformers:
            try:
                await transformer.afinalize()
            except BaseException as exc:
                first = first or exc
        self._close_channels()
        if first is not None:
            raise first

    async def afail(self, err: BaseException) -> None:
        """The async lane of :meth:`fail`: cancels scheduled work first."""
        pending = self._pending()
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        for transformer in self._transformers:
            with contextlib.suppress(BaseException):
                await transformer.afail(err)
        self._fail_channels(err)
