"""The handles a v3 run returns: ``GraphRunStream`` (sync) and ``AsyncGraphRunStream``.

A handle drives the graph lazily: reading any of its projections (``values``,
``messages``, ``lifecycle``, ``subgraphs``, ``run.extensions[...]``, or the
handle itself for the raw events) pulls the next v2 stream part from the
graph, wraps it as a :class:`ProtocolEvent` and pushes it through the mux.
``output`` / ``interrupted`` / ``interrupts`` run the graph to its end.
``SubgraphRunStream`` is the same view on one subgraph's scope, fed by its
parent's transformer and driven by its parent's pump.

Example:
    >>> # run = app.stream_events(inputs, version="v3")
    >>> # for snapshot in run.values: ...
    >>> # run.output
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from types import MappingProxyType, TracebackType
from typing import Any, NoReturn

from flowcore.compat.langgraph._stream_v3_channel import StreamChannel
from flowcore.compat.langgraph._stream_v3_mux import StreamMux
from flowcore.compat.langgraph._stream_v3_types import ProtocolEvent, convert_to_protocol_event

__all__ = [
    "AsyncGraphRunStream",
    "AsyncSubgraphRunStream",
    "GraphRunStream",
    "SubgraphRunStream",
]


def _no_projection(run: object, name: str) -> NoReturn:
    mux = run.__dict__.get("_mux")
    names = ", ".join(sorted(mux.native_keys)) if mux is not None else ""
    raise AttributeError(
        f"{type(run).__name__!r} object has no attribute {name!r} "
        f"(registered projections: {names or 'none'})"
    )


class _RunView:
    """What both handles share: the mux, its projections, and the root's values seen."""

    _mux: StreamMux

    def _setup(self, mux: StreamMux) -> None:
        self._mux = mux
        self.extensions: Mapping[str, Any] = MappingProxyType(mux.extensions)
        self._exhausted = False
        self._latest: Any = None
        self._interrupted = False
        self._interrupts: list[Any] = []
        self._scope_list = list(mux.scope)
        for key in mux.native_keys:
            setattr(self, key, mux.extensions[key])

    def __getattr__(self, name: str) -> Any:
        _no_projection(self, name)

    def _observe_event(self, event: ProtocolEvent) -> None:
        if event["method"] != "values" or event["params"]["namespace"] != self._scope_list:
            return
        self._latest = event["params"]["data"]
        interrupts = event["params"].get("interrupts", ())
        if interrupts:
            self._interrupted = True
            self._interrupts.extend(interrupts)

    def _raise_failure(self) -> None:
        error = self._mux._events._error
        if error is not None:
            raise error


class GraphRunStream(_RunView):
    """A sync v3 run: iterate it for raw events, or read its projections."""

    def __init__(
        self, graph_iter: Iterator[Any] | None, mux: StreamMux, *, wire_pump: bool = True
    ) -> None:
        self._graph_iter = graph_iter
        self._setup(mux)
        if wire_pump:
            mux.bind_pump(self._pump_next)

    def _pump_next(self) -> bool:
        if self._exhausted or self._graph_iter is None:
            return False
        try:
            part = next(self._graph_iter)
        except StopIteration:
            self._exhausted = True
            self._mux.close()
            return False
        except Exception as exc:
            self._exhausted = True
            self._mux.fail(exc)
            return False
        event = convert_to_protocol_event(part)
        self._observe_event(event)
        try:
            self._mux.push(event)
        except Exception as exc:
            self.abort_with(exc)
            return False
        return True

    def abort_with(self, exc: BaseException) -> None:
        """Stop the graph and fail every projection with ``exc``."""
        self._exhausted = True
        source, self._graph_iter = self._graph_iter, None
        _close_quietly(source)
        self._mux.fail(exc)

    def abort(self) -> None:
        """Stop the graph early; projections end as if the run had finished."""
        if self._exhausted:
            return
        self._exhausted = True
        source, self._graph_iter = self._graph_iter, None
        _close_quietly(source)
        with contextlib.suppress(Exception):
            self._mux.close()

    def __enter__(self) -> GraphRunStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.abort()

    def _finish(self) -> None:
        while self._pump_next():
            pass
        self._raise_failure()

    @property
    def output(self) -> Any:
        """The graph's last values (runs it to its end)."""
        self._finish()
        return self._latest

    @property
    def interrupted(self) -> bool:
        """Whether the run paused on an interrupt (runs it to its end)."""
        self._finish()
        return self._interrupted

    @property
    def interrupts(self) -> list[Any]:
        """The interrupts the run paused on (runs it to its end)."""
        self._finish()
        return self._interrupts

    def __iter__(self) -> Iterator[ProtocolEvent]:
        return iter(self._mux._events)

    def interleave(self, *names: str) -> Iterator[tuple[str, Any]]:
        """Read several projection channels at once, as ``(name, item)`` in push order."""
        channels: dict[str, StreamChannel[Any]] = {}
        try:
            for name in names:
                channel = self.extensions[name]
                if not isinstance(channel, StreamChannel):
                    raise TypeError(
                        "interleave() requires StreamChannel projections, "
                        f"got {type(channel).__name__} for {name!r}"
                    )
                if channel._is_async is None:
                    raise TypeError(f"StreamChannel {name!r} has not been bound yet.")
                if channel._is_async:
                    raise TypeError(
                        f"StreamChannel {name!r} is bound to async mode — "
                        "sync interleave() cannot consume async channels."
                    )
                if channel._subscribed:
                    raise RuntimeError(
                        f"StreamChannel {name!r} already has a subscriber; use .tee(n) for fan-out."
                    )
                channel._subscribed = True
                channels[name] = channel
            yield from _interleave(channels, self._mux)
        finally:
            for channel in channels.values():
                channel._subscribed = False


def _interleave(
    channels: dict[str, StreamChannel[Any]], mux: StreamMux
) -> Iterator[tuple[str, Any]]:
    done: set[str] = set()
    while len(done) < len(channels):
        best: tuple[int, str] | None = None
        for name, channel in channels.items():
            if name in done:
                continue
            if channel._items:
                stamp = channel._items[0][0]
                if best is None or stamp < best[0]:
                    best = (stamp, name)
            elif channel._closed:
                if channel._error is not None:
                    raise channel._error
                done.add(name)
        if best is not None:
            yield best[1], channels[best[1]]._items.popleft()[1]
            continue
        if mux._pump_fn is not None and mux._pump_fn():
            continue
        stalled = True
        for name, channel in channels.items():
            if name not in done and not channel._items and channel._closed:
                if channel._error is not None:
                    raise channel._error
                done.add(name)
                stalled = False
        if stalled:
            return


class AsyncGraphRunStream(_RunView):
    """An async v3 run: ``async for`` it for raw events, or read its projections."""

    def __init__(
        self, graph_aiter: AsyncIterator[Any] | None, mux: StreamMux, *, wire_pump: bool = True
    ) -> None:
        self._graph_aiter = graph_aiter
        self._setup(mux)
        self._pump_cond = asyncio.Condition()
        self._pumping = False
        self._anext_task: asyncio.Future[Any] | None = None
        self._aborting = False
        if wire_pump:
            mux.bind_apump(self._apump_next)

    async def _apump_next(self) -> bool:
        async with self._pump_cond:
            if self._exhausted or self._graph_aiter is None:
                return False
            if self._pumping:
                # Someone else is pulling the next part: wait for it instead.
                await self._pump_cond.wait()
                return not self._exhausted
            self._pumping = True
        try:
            return await self._pull()
        finally:
            async with self._pump_cond:
                self._pumping = False
                self._pump_cond.notify_all()

    async def _pull(self) -> bool:
        assert self._graph_aiter is not None
        try:
            self._anext_task = asyncio.ensure_future(self._graph_aiter.__anext__())
            try:
                part = await self._anext_task
            except asyncio.CancelledError:
                if self._aborting:
                    self._exhausted = True
                    return False
                self._anext_task.cancel()
                raise
            finally:
                self._anext_task = None
            event = convert_to_protocol_event(part)
            self._observe_event(event)
            await self._mux.apush(event)
            return True
        except StopAsyncIteration:
            self._exhausted = True
            await self._mux.aclose()
            return False
        except Exception as exc:
            self._exhausted = True
            await self._mux.afail(exc)
            return False

    async def abort(self) -> None:
        """Stop the graph early; projections end as if the run had finished."""
        async with self._pump_cond:
            if self._exhausted:
                return
            self._exhausted = True
            self._aborting = True
            source, self._graph_aiter = self._graph_aiter, None
            pending = self._anext_task
            self._pump_cond.notify_all()
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pending
        closer = getattr(source, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
        with contextlib.suppress(Exception):
            await self._mux.aclose()

    async def __aenter__(self) -> AsyncGraphRunStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.abort()

    async def _afinish(self) -> None:
        while await self._apump_next():
            pass
        self._raise_failure()

    async def output(self) -> Any:
        """The graph's last values (runs it to its end)."""
        await self._afinish()
        return self._latest

    async def interrupted(self) -> bool:
        """Whether the run paused on an interrupt (runs it to its end)."""
        await self._afinish()
        return self._interrupted

    async def interrupts(self) -> list[Any]:
        """The interrupts the run paused on (runs it to its end)."""
        await self._afinish()
        return self._interrupts

    def __aiter__(self) -> AsyncIterator[ProtocolEvent]:
        return self._mux._events.__aiter__()


def _close_quietly(source: Any) -> None:
    closer = getattr(source, "close", None)
    if closer is not None:
        with contextlib.suppress(Exception):
            closer()


class _SubgraphFields:
    path: tuple[str, ...]
    graph_name: str | None
    trigger_call_id: str | None
    status: str
    error: str | None
    _seen_terminal: bool

    def _set_fields(
        self, path: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None
    ) -> None:
        self.path = path
        self.graph_name = graph_name
        self.trigger_call_id = trigger_call_id
        self.status = "started"
        self.error = None
        self._seen_terminal = False


class SubgraphRunStream(GraphRunStream, _SubgraphFields):
    """One subgraph's view of a sync v3 run (from ``run.subgraphs``)."""

    def __init__(
        self,
        mux: StreamMux,
        *,
        path: tuple[str, ...],
        graph_name: str | None = None,
        trigger_call_id: str | None = None,
    ) -> None:
        self._parent_pump_fn: Callable[[], bool] | None = mux._pump_fn
        super().__init__(graph_iter=None, mux=mux, wire_pump=False)
        self._set_fields(path, graph_name, trigger_call_id)

    def _pump_next(self) -> bool:
        if (
            self._exhausted
            or self._seen_terminal
            or self._mux._events._closed
            or self._parent_pump_fn is None
        ):
            return False
        return self._parent_pump_fn()


class AsyncSubgraphRunStream(AsyncGraphRunStream, _SubgraphFields):
    """One subgraph's view of an async v3 run (from ``run.subgraphs``)."""

    def __init__(
        self,
        mux: StreamMux,
        *,
        path: tuple[str, ...],
        graph_name: str | None = None,
        trigger_call_id: str | None = None,
    ) -> None:
        self._parent_apump_fn: Callable[[], Awaitable[bool]] | None = mux._apump_fn
        super().__init__(graph_aiter=None, mux=mux, wire_pump=False)
        self._set_fields(path, graph_name, trigger_call_id)

    async def _apump_next(self) -> bool:
        if (
            self._exhausted
            or self._seen_terminal
            or self._mux._events._closed
            or self._parent_apump_fn is None
        ):
            return False
        return await self._parent_apump_fn()
