"""``StreamChannel``: a one-reader queue a v3 run's projections are made of.

A channel buffers what is pushed to it once someone reads it, and with a
``name`` also forwards every push into the run's main event log (as method
``name`` for a native transformer's channel, ``custom:name`` otherwise). The
mux binds it to one lane (sync ``for`` or ``async for``) and gives it the
run's pump: when the buffer is empty, reading drives the graph one part
further.

Example:
    >>> ch = StreamChannel()
    >>> ch._bind(is_async=False)
    >>> it = iter(ch)
    >>> ch.push(1); ch.close()
    >>> list(it)
    [1]
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Generic, TypeVar

__all__ = ["StreamChannel"]

T = TypeVar("T")


class StreamChannel(Generic[T]):
    """A drainable single-subscriber queue, optionally forwarded to the run's event log.

    ``tee(n)`` / ``atee(n)`` give several readers. ``close`` / ``fail`` end it
    (the mux does so when the run ends).
    """

    def __init__(self, name: str | None = None, *, maxlen: int | None = None) -> None:
        if maxlen is not None and maxlen <= 0:
            raise ValueError("StreamChannel maxlen must be a positive int or None")
        self.name = name
        self._maxlen = maxlen
        self._items: deque[tuple[int, T]] = deque()
        self._closed = False
        self._error: BaseException | None = None
        self._is_async: bool | None = None
        self._subscribed = False
        self._request_more: Callable[[], bool] | None = None
        self._arequest_more: Callable[[], Awaitable[bool]] | None = None
        self._wire_fn: Callable[[T], None] | None = None
        self._mux: Any = None

    def _bind_mux(self, mux: Any) -> None:
        self._mux = mux

    def _bind(self, *, is_async: bool) -> None:
        if self._is_async is not None:
            raise RuntimeError("StreamChannel is already bound")
        self._is_async = is_async

    def _wire(self, fn: Callable[[T], None]) -> None:
        self._wire_fn = fn

    def push(self, item: T) -> None:
        """Add ``item`` (kept only once subscribed) and forward it when wired."""
        if self._subscribed:
            if self._closed:
                raise RuntimeError("Cannot push to a closed StreamChannel")
            stamp = self._mux._next_push_seq() if self._mux is not None else 0
            self._items.append((stamp, item))
        if self._wire_fn is not None:
            self._wire_fn(item)

    def close(self) -> None:
        """No more items will come."""
        self._closed = True

    def fail(self, err: BaseException) -> None:
        """End the channel with ``err``: its reader raises it after the buffered items."""
        self._error = err
        self._closed = True

    def _subscribe(self, *, is_async: bool, fan_out: str) -> None:
        if self._is_async is None:
            raise TypeError(
                "StreamChannel has not been bound yet. "
                "Register the transformer with a StreamMux first."
            )
        if self._is_async != is_async:
            raise TypeError(
                "This StreamChannel is bound to async mode — use 'async for' instead."
                if self._is_async
                else "This StreamChannel is bound to sync mode — use 'for' instead."
            )
        if self._subscribed:
            raise RuntimeError(
                f"StreamChannel already has a subscriber; use .{fan_out}(n) for fan-out."
            )
        self._subscribed = True

    def __iter__(self) -> Iterator[T]:
        self._subscribe(is_async=False, fan_out="tee")
        return self._drain()

    def _drain(self) -> Iterator[T]:
        while True:
            if self._items:
                yield self._items.popleft()[1]
            elif self._closed:
                if self._error is not None:
                    raise self._error
                return
            elif self._request_more is None or (
                not self._request_more() and not self._items and not self._closed
            ):
                return

    def __aiter__(self) -> AsyncIterator[T]:
        self._subscribe(is_async=True, fan_out="atee")
        return self._adrain()

    async def _adrain(self) -> AsyncIterator[T]:
        while True:
            if self._items:
                yield self._items.popleft()[1]
            elif self._closed:
                if self._error is not None:
                    raise self._error
                return
            elif self._arequest_more is None or (
                not await self._arequest_more() and not self._items and not self._closed
            ):
                return

    def tee(self, n: int = 2) -> tuple[Iterator[T], ...]:
        """``n`` sync readers that each see every item."""
        if n < 1:
            raise ValueError("tee() requires n >= 1")
        source = iter(self)
        buffers: list[deque[T]] = [deque() for _ in range(n)]
        ended = [False]

        def branch(buf: deque[T]) -> Iterator[T]:
            while True:
                if buf:
                    yield buf.popleft()
                    continue
                if ended[0]:
                    return
                try:
                    item = next(source)
                except StopIteration:
                    ended[0] = True
                    return
                for other in buffers:
                    other.append(item)

        return tuple(branch(b) for b in buffers)

    def atee(self, n: int = 2) -> tuple[AsyncIterator[T], ...]:
        """``n`` async readers that each see every item."""
        if n < 1:
            raise ValueError("atee() requires n >= 1")
        source = self.__aiter__()
        buffers: list[deque[T]] = [deque() for _ in range(n)]
        ended = [False]
        error: list[BaseException | None] = [None]
        lock = asyncio.Lock()

        async def branch(buf: deque[T]) -> AsyncIterator[T]:
            while True:
                if buf:
                    yield buf.popleft()
                    continue
                if ended[0]:
                    if error[0] is not None:
                        raise error[0]
                    return
                async with lock:
                    if buf or ended[0]:
                        continue
                    try:
                        item = await source.__anext__()
                    except StopAsyncIteration:
                        ended[0] = True
                        continue
                    except Exception as exc:
                        error[0] = exc
                        ended[0] = True
                        continue
                    for other in buffers:
                        other.append(item)

        return tuple(branch(b) for b in buffers)
