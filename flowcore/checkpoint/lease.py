"""Thread leases: one run per thread at a time, across tasks and processes.

A run on a thread first takes the thread's lease in the checkpoint store
(:meth:`~flowcore.checkpoint.protocol.LeasingCheckpointer.acquire_lease`),
under a holder id unique to the run. While the run is alive a heartbeat task
renews the lease every third of its ``ttl``; when the run ends, however it
ends, the lease is released. A holder that dies (SIGKILL, power loss) stops
renewing, so its lease lapses after at most ``ttl`` seconds and the thread
can be taken over.

:class:`LeaseTable` is the in-process table behind the in-memory stores;
:class:`LeaseKeeper` is what a run wraps itself in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from flowcore.checkpoint.protocol import LeasingCheckpointer, ThreadLease
from flowcore.errors import InvalidInputError, ThreadBusyError

__all__ = [
    "DEFAULT_LEASE_TTL",
    "LeaseKeeper",
    "LeaseTable",
    "check_lease_ttl",
    "hold_thread",
    "new_holder_id",
]

_log = logging.getLogger(__name__)

DEFAULT_LEASE_TTL = 30.0
"""Seconds a lease lasts without renewal: how long a dead runner keeps its thread."""


def check_lease_ttl(ttl: float) -> float:
    """``ttl`` as a float, refusing one that is not a positive, finite number of seconds.

    Raises:
        InvalidInputError: If it is not.

    Example:
        >>> check_lease_ttl(30)
        30.0
    """
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl < math.inf:
        raise InvalidInputError(
            f"lease_ttl must be a positive number of seconds, got {ttl!r}; it is how long a "
            f"run that died keeps its thread (default {DEFAULT_LEASE_TTL:g})"
        )
    return float(ttl)


def new_holder_id() -> str:
    """A holder id for one run: host, process id and a random part.

    Example:
        >>> host, pid, tag = new_holder_id().rsplit(":", 2)
        >>> int(pid) == os.getpid(), len(tag)
        (True, 12)
    """
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(6)}"


class LeaseTable:
    """Thread leases held in a dict: the in-process form of a store's lease table.

    Every method finishes without awaiting, so on one event loop a take is
    atomic; callers on other threads must hold their own lock around it.

    Args:
        ttl: Seconds each take or renewal lasts.

    Example:
        >>> table = LeaseTable(ttl=30.0)
        >>> table.take("t1", "run-a").holder
        'run-a'
        >>> table.take("t1", "run-b")
        Traceback (most recent call last):
        ...
        flowcore.errors.ThreadBusyError: thread 't1' is already running elsewhere: ...
    """

    def __init__(self, *, ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.ttl = check_lease_ttl(ttl)
        self._held: dict[str, tuple[str, float]] = {}

    def take(self, thread_id: str, holder: str) -> ThreadLease:
        """Take (or renew) ``thread_id``'s lease for ``holder``; see ``acquire_lease``.

        Example:
            >>> LeaseTable().take("t1", "run-a").thread_id
            't1'
        """
        now = time.time()
        current = self._held.get(thread_id)
        if current is not None and current[0] != holder and current[1] > now:
            raise ThreadBusyError(thread_id=thread_id, holder=current[0], expires_at=current[1])
        expires_at = now + self.ttl
        self._held[thread_id] = (holder, expires_at)
        return ThreadLease(thread_id, holder, expires_at, self.ttl)

    def drop(self, thread_id: str, holder: str) -> None:
        """Release ``thread_id``'s lease if ``holder`` still has it.

        Example:
            >>> table = LeaseTable()
            >>> _ = table.take("t1", "run-a")
            >>> table.drop("t1", "run-a")
            >>> table.take("t1", "run-b").holder
            'run-b'
        """
        current = self._held.get(thread_id)
        if current is not None and current[0] == holder:
            del self._held[thread_id]

    def holder(self, thread_id: str) -> str | None:
        """Who holds ``thread_id`` now (None: free or expired).

        Example:
            >>> LeaseTable().holder("t1") is None
            True
        """
        current = self._held.get(thread_id)
        return current[0] if current is not None and current[1] > time.time() else None


class LeaseKeeper:
    """Holds one thread's lease for the length of an ``async with`` block.

    On enter it takes the lease (raising
    :class:`~flowcore.errors.ThreadBusyError` if another run holds it) and
    starts a heartbeat task that renews it every third of its ``ttl``. On exit
    it cancels the heartbeat and releases the lease, whether the block ended
    normally, with an error or cancelled. If a renewal finds the lease taken
    by someone else (this run stalled for longer than ``ttl``), the keeper
    cancels the block's task so it stops writing, and the block ends with
    ``ThreadBusyError`` instead.

    Args:
        acquire: Takes or renews the lease (the same call for both); None
            means the store behind it does not lease, so nothing is held.
        release: Gives it back.

    Example:
        >>> import asyncio
        >>> table = LeaseTable()
        >>> async def one_run():
        ...     async def take():
        ...         return table.take("t1", "run-a")
        ...     async def give():
        ...         table.drop("t1", "run-a")
        ...     async with LeaseKeeper(take, give) as lease:
        ...         return lease.holder, table.holder("t1")
        >>> asyncio.run(one_run()), table.holder("t1")
        (('run-a', 'run-a'), None)
    """

    def __init__(
        self,
        acquire: Callable[[], Awaitable[ThreadLease | None]],
        release: Callable[[], Awaitable[None]],
    ) -> None:
        self._acquire = acquire
        self._release = release
        self._beat: asyncio.Task[None] | None = None
        self._host: asyncio.Task[Any] | None = None
        self._held = False
        self.lost: ThreadBusyError | None = None
        """Set when a renewal found the lease held by another run."""

    async def __aenter__(self) -> ThreadLease | None:
        lease = await self._acquire()
        if lease is None:
            return None
        self._held = True
        self._host = asyncio.current_task()
        self._beat = asyncio.get_running_loop().create_task(
            self._heartbeat(lease), name=f"flowcore lease heartbeat {lease.thread_id}"
        )
        return lease

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        beat, self._beat = self._beat, None
        if beat is not None:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
        if not self._held:
            return
        self._held = False
        # Shielded: a run that is being cancelled must still give its thread back.
        release = asyncio.ensure_future(self._release_quietly())
        try:
            await asyncio.shield(release)
        except asyncio.CancelledError:
            await release
            raise
        lost, host = self.lost, self._host
        # The keeper cancelled this task itself: report why instead, unless someone
        # else asked for a cancellation too.
        if lost is None or exc_type is not asyncio.CancelledError or host is None:
            return
        if host.uncancel() == 0:
            raise lost from None

    async def _release_quietly(self) -> None:
        try:
            await self._release()
        except Exception as exc:  # the lease lapses by itself within ttl
            _log.warning("flowcore: could not release a thread lease (%s); it will expire", exc)

    async def _heartbeat(self, lease: ThreadLease) -> None:
        interval = lease.ttl / 3
        while True:
            await asyncio.sleep(interval)
            try:
                await self._acquire()
            except ThreadBusyError as exc:
                self.lost = ThreadBusyError(
                    thread_id=exc.thread_id,
                    holder=exc.holder,
                    expires_at=exc.expires_at,
                    message=(
                        f"this run lost thread {exc.thread_id!r}: it could not renew its lease "
                        f"for {lease.ttl:g} s, and run {exc.holder!r} has taken the thread "
                        "over, so this run was stopped; give the run's event loop room to "
                        "breathe (no blocking calls) or a longer lease_ttl"
                    ),
                )
                if self._host is not None:
                    self._host.cancel()
                return
            except Exception as exc:  # a store hiccup: the next beat tries again
                _log.warning(
                    "flowcore: renewing the lease of thread %r failed: %s", lease.thread_id, exc
                )


def hold_thread(
    store: object, thread_id: str
) -> contextlib.AbstractAsyncContextManager[ThreadLease | None]:
    """The lease of ``thread_id`` in ``store`` for one new run, or nothing to hold.

    Stores that are not :class:`LeasingCheckpointer` (custom ones written
    before leases) give a context that holds nothing, so they keep working
    without the one-runner guarantee.

    Example:
        >>> import asyncio
        >>> from flowcore.checkpoint import InMemoryCheckpointer
        >>> async def demo():
        ...     store = InMemoryCheckpointer()
        ...     async with hold_thread(store, "t1") as lease:
        ...         return lease.thread_id
        >>> asyncio.run(demo())
        't1'
    """
    if not isinstance(store, LeasingCheckpointer):
        return contextlib.nullcontext(None)
    holder = new_holder_id()
    leasing = store

    async def acquire() -> ThreadLease:
        return await leasing.acquire_lease(thread_id, holder)

    async def release() -> None:
        await leasing.release_lease(thread_id, holder)

    return LeaseKeeper(acquire, release)
