"""``RunEventRelay``: pump one run's events to the end and fan them out.

A run's handle can be read once. An app usually has several readers: the
UI stream of the request, a usage ledger that bills every model call, a log.
The relay is the one reader of the handle; it pumps the run to the end
whatever its subscribers do, and gives each subscriber every event, in
order, through a bounded buffer of its own.

Buffer policy (why a slow UI never costs the ledger an event):

``best_effort`` (a UI, a live log)
    A buffer of ``max_buffer`` events (default 256). When it is full, the
    oldest buffered event is dropped to make room and counted in
    ``subscription.dropped``; ``error`` and ``done`` are never dropped, so
    the subscriber always learns how the run ended (and ``seq`` gaps show
    what it missed). The pump never waits for a best-effort subscriber: one
    that reads slowly, stops reading or never started cannot stall anything.
``reliable`` (a usage ledger, an audit log)
    A buffer of ``max_buffer`` events (default 1024); when it is full, the
    pump waits until the subscriber makes room. Nothing is ever dropped.
    The wait is back-pressure on the pump only: the run itself keeps going
    (a handle buffers its own events), and best-effort subscribers get
    events a little later, never fewer. Reliable subscribers are meant to
    be fast (a ledger write); one that goes away must ``close()`` its
    subscription (or use ``async with``), or the pump waits for it.

Subscribe before the pump starts, so no subscriber misses the first events.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator
from types import TracebackType
from typing import Final, Literal

from flowcore.port.errors import RelayStateError
from flowcore.port.events import AiEvent

__all__ = [
    "DEFAULT_BEST_EFFORT_BUFFER",
    "DEFAULT_RELIABLE_BUFFER",
    "DeliveryPolicy",
    "RunEventRelay",
    "Subscription",
]

DeliveryPolicy = Literal["reliable", "best_effort"]
"""How a subscription is fed when it falls behind (see the module docstring)."""

DEFAULT_BEST_EFFORT_BUFFER: Final = 256
"""Events a best-effort subscriber may fall behind before the oldest are dropped."""
DEFAULT_RELIABLE_BUFFER: Final = 1024
"""Events a reliable subscriber may fall behind before the pump waits for it."""

_TERMINAL: Final = frozenset({"error", "done"})


class Subscription:
    """One subscriber's view of the run: an async iterator of every event, in order.

    ``dropped`` counts the events a best-effort subscriber lost by falling
    behind; ``delivered`` the events it has read. ``close()`` unsubscribes.

    Example:
        >>> # async with relay.subscribe("ui", policy="best_effort") as ui:
        >>> #     async for event in ui: ...
    """

    def __init__(self, name: str, policy: DeliveryPolicy, max_buffer: int) -> None:
        if policy not in ("reliable", "best_effort"):
            raise ValueError(f"policy must be 'reliable' or 'best_effort', not {policy!r}")
        if max_buffer < 1:
            raise ValueError(f"max_buffer must be at least 1, got {max_buffer}")
        self.name = name
        self.policy: DeliveryPolicy = policy
        self.max_buffer = max_buffer
        self.dropped = 0
        self.delivered = 0
        self._items: deque[AiEvent] = deque()
        self._readable = asyncio.Event()
        self._writable = asyncio.Event()
        self._ended = False
        self._closed = False
        self._failure: BaseException | None = None

    def __repr__(self) -> str:
        return (
            f"<Subscription {self.name!r} {self.policy} buffered={len(self._items)} "
            f"delivered={self.delivered} dropped={self.dropped}>"
        )

    @property
    def closed(self) -> bool:
        """Whether the subscriber unsubscribed."""
        return self._closed

    @property
    def buffered(self) -> int:
        """Events waiting to be read."""
        return len(self._items)

    # ------------------------------------------------------------- reading
    def __aiter__(self) -> AsyncIterator[AiEvent]:
        return self

    async def __anext__(self) -> AiEvent:
        while not self._items:
            if self._ended:
                if self._failure is not None:
                    failure, self._failure = self._failure, None
                    raise RelayStateError(
                        f"the run's event stream broke off before done: {failure!r}"
                    ) from failure
                raise StopAsyncIteration
            self._readable.clear()
            await self._readable.wait()
        event = self._items.popleft()
        self.delivered += 1
        self._writable.set()
        return event

    def close(self) -> None:
        """Unsubscribe: buffered events are discarded and the pump stops feeding (and waiting).

        Example:
            >>> # ui.close()
        """
        self._closed = True
        self._ended = True
        self._items.clear()
        self._readable.set()
        self._writable.set()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------- feeding
    def _offer(self, event: AiEvent) -> None:
        """Best effort: append now, dropping the oldest event when full."""
        if event.type not in _TERMINAL and len(self._items) >= self.max_buffer:
            self._items.popleft()
            self.dropped += 1
        self._items.append(event)
        self._readable.set()

    async def _put(self, event: AiEvent) -> None:
        """Reliable: wait for room, then append."""
        while len(self._items) >= self.max_buffer and not self._closed:
            self._writable.clear()
            await self._writable.wait()
        if not self._closed:
            self._items.append(event)
            self._readable.set()

    def _end(self, failure: BaseException | None = None) -> None:
        self._ended = True
        self._failure = failure
        self._readable.set()


class RunEventRelay:
    """Reads a run's events once, to the end, and fans them out to subscribers.

    ``source`` is a :class:`~flowcore.port.RunHandle` (or any async iterable
    of AiEvents). Subscribe first, then ``await relay.run()`` or
    ``relay.start()``.

    Example:
        >>> # relay = RunEventRelay(executor.run(request))
        >>> # ui = relay.subscribe("ui", policy="best_effort")
        >>> # ledger = relay.subscribe("ledger", policy="reliable")
        >>> # relay.start()
        >>> # async for event in ledger: ...
    """

    def __init__(self, source: AsyncIterable[AiEvent]) -> None:
        self.source = source
        self._subscriptions: list[Subscription] = []
        self._task: asyncio.Task[None] | None = None
        self._started = False
        self._pumping = False
        self._finished = False
        self.pumped = 0

    def __repr__(self) -> str:
        state = "finished" if self._finished else "pumping" if self._started else "new"
        return f"<RunEventRelay {state} subscribers={len(self._subscriptions)}>"

    @property
    def subscriptions(self) -> tuple[Subscription, ...]:
        """Every subscription, in the order they were made."""
        return tuple(self._subscriptions)

    @property
    def finished(self) -> bool:
        """Whether the source has been read to its end."""
        return self._finished

    def subscribe(
        self,
        name: str,
        *,
        policy: DeliveryPolicy = "reliable",
        max_buffer: int | None = None,
    ) -> Subscription:
        """A new subscriber that will get every event of the run, in order.

        Example:
            >>> # ledger = relay.subscribe("ledger")  # reliable by default
        """
        if self._started:
            raise RelayStateError(
                f"subscriber {name!r} came after the relay started pumping and would miss "
                "events; subscribe everyone before run() / start()"
            )
        if max_buffer is None:
            max_buffer = (
                DEFAULT_RELIABLE_BUFFER if policy == "reliable" else DEFAULT_BEST_EFFORT_BUFFER
            )
        subscription = Subscription(name, policy, max_buffer)
        self._subscriptions.append(subscription)
        return subscription

    def start(self) -> asyncio.Task[None]:
        """Pump in a background task (returned, so it can be awaited).

        Example:
            >>> # pump = relay.start(); ...; await pump
        """
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.run())
            self._started = True  # from now on, subscribing would miss events
        return self._task

    async def run(self) -> None:
        """Read the source to its end, feeding every subscriber; returns when it ends.

        Example:
            >>> # await relay.run()
        """
        if self._pumping or self._task not in (None, asyncio.current_task()):
            raise RelayStateError("this relay is already pumping; call run() or start() once")
        self._pumping = self._started = True
        failure: BaseException | None = None
        try:
            async for event in self.source:
                self.pumped += 1
                for subscription in self._subscriptions:
                    if subscription.closed:
                        continue
                    if subscription.policy == "best_effort":
                        subscription._offer(event)
                    else:
                        await subscription._put(event)
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self._finished = True
            for subscription in self._subscriptions:
                subscription._end(failure)
