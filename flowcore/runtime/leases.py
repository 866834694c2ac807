"""Thread leases, the run side: one run per thread at a time, for both graph kinds.

A run on a thread first takes the thread's lease in its store, under a holder
id unique to the run (:func:`new_holder_id`). While the run is alive a
heartbeat task renews the lease every third of its ``ttl``; when the run
ends, however it ends, the lease is released. A holder that dies (SIGKILL,
power loss) stops renewing, so its lease lapses after at most ``ttl`` seconds
and the thread can be taken over.

* :func:`run_lease` — the lease for one run of a thread, given the store's
  take and give-back calls. Both engines get their lease here: native graphs
  through :func:`hold_thread` (any
  :class:`~flowcore.checkpoint.protocol.LeasingCheckpointer`), LangGraph-shaped
  graphs with their saver's calls (``Run._lease`` in
  ``flowcore/compat/langgraph/_loop.py``).
* :class:`LeaseKeeper` — what a run wraps itself in: take, heartbeat, release.

Why the lease is split between two packages: what a store keeps (the
:class:`~flowcore.checkpoint.protocol.ThreadLease` record, the
``acquire_lease``/``release_lease`` port, the in-memory
:class:`~flowcore.checkpoint.lease.LeaseTable`, the ``ttl`` default and its
check) stays in :mod:`flowcore.checkpoint.lease`, because stores need it and
``flowcore.checkpoint`` is a port that must load without the runtime. Keeping
a lease for a run (when to take it, renew it, give it back, and what to do
when it is lost) is the runtime's, so it lives here, and the runtime depends
on the checkpoint port, never the other way round.
:mod:`flowcore.checkpoint.lease` still answers the names that moved
(``LeaseKeeper``, ``hold_thread``, ``new_holder_id``) for code written before
the move, resolving them only when asked, so loading the checkpoint package
never loads this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from flowcore.checkpoint.protocol import LeasingCheckpointer, ThreadLease
from flowcore.errors import ThreadBusyError

__all__ = ["LeaseKeeper", "hold_thread", "new_holder_id", "run_lease"]

_log = logging.getLogger(__name__)


def new_holder_id() -> str:
    """A holder id for one run: host, process id and a random part.

    Example:
        >>> host, pid, tag = new_holder_id().rsplit(":", 2)
        >>> int(pid) == os.getpid(), len(tag)
        (True, 12)
    """
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(6)}"


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
        >>> from flowcore.checkpoint.lease import LeaseTable
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
        *,
        thread_id: str | None = None,
        holder: str | None = None,
    ) -> None:
        self._acquire = acquire
        self._release = release
        self.thread_id = thread_id
        """The thread leased, when known (:func:`run_lease`): see :meth:`hand_over`."""
        self.holder = holder
        """The run's holder id, when known (:func:`run_lease`)."""
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
        if self._held:
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

    def hand_over(self) -> tuple[str, str] | None:
        """Stop renewing, so the caller's last write can carry the release.

        Returns ``(thread_id, holder)`` for that write to give back, or None
        when nothing is held (or the keeper does not know the names). Call it
        just before queueing the store's last transaction of the run: a
        renewal already queued in the store runs before it, and none is made
        after it, so the release it carries is final. If that transaction
        commits, call :meth:`handed_back`; if not, the keeper still releases
        the lease on exit, in a transaction of its own.

        Example:
            >>> import asyncio
            >>> from flowcore.checkpoint.lease import LeaseTable
            >>> table = LeaseTable()
            >>> async def take(thread_id, holder):
            ...     return table.take(thread_id, holder)
            >>> async def give(thread_id, holder):
            ...     table.drop(thread_id, holder)
            >>> async def one_run():
            ...     keeper = run_lease("t1", take, give)
            ...     async with keeper as lease:
            ...         names = keeper.hand_over()
            ...         table.drop(*names)  # the run's last write gives it back
            ...         keeper.handed_back()
            ...     return names == ("t1", lease.holder), table.holder("t1")
            >>> asyncio.run(one_run())
            (True, None)
        """
        if not self._held or self.thread_id is None or self.holder is None:
            return None
        if self._beat is not None:
            # Cancelled now, awaited on exit: from here on it queues no renewal.
            self._beat.cancel()
        return self.thread_id, self.holder

    def handed_back(self) -> None:
        """The write that :meth:`hand_over` prepared committed: nothing is left to release.

        Example:
            >>> # names = keeper.hand_over(); await store_last(names); keeper.handed_back()
        """
        self._held = False

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


def run_lease(
    thread_id: str,
    acquire: Callable[[str, str], Awaitable[ThreadLease | None]],
    release: Callable[[str, str], Awaitable[None]],
) -> LeaseKeeper:
    """The lease of ``thread_id`` for one new run, kept through a store's two calls.

    The run gets a holder id of its own; ``acquire(thread_id, holder)`` takes
    or renews the lease (None: the store does not lease, so nothing is held)
    and ``release(thread_id, holder)`` gives it back. Native graphs come here
    through :func:`hold_thread`; LangGraph-shaped graphs pass their saver's
    calls.

    Example:
        >>> import asyncio
        >>> from flowcore.checkpoint.lease import LeaseTable
        >>> table = LeaseTable()
        >>> async def take(thread_id, holder):
        ...     return table.take(thread_id, holder)
        >>> async def give(thread_id, holder):
        ...     table.drop(thread_id, holder)
        >>> async def one_run():
        ...     async with run_lease("t1", take, give) as lease:
        ...         return table.holder("t1") == lease.holder
        >>> asyncio.run(one_run()), table.holder("t1")
        (True, None)
    """
    holder = new_holder_id()
    return LeaseKeeper(
        functools.partial(acquire, thread_id, holder),
        functools.partial(release, thread_id, holder),
        thread_id=thread_id,
        holder=holder,
    )


def hold_thread(
    store: object, thread_id: str
) -> contextlib.AbstractAsyncContextManager[ThreadLease | None]:
    """The lease of ``thread_id`` in ``store`` for one new run, or nothing to hold.

    Stores that are not :class:`~flowcore.checkpoint.protocol.LeasingCheckpointer`
    (custom ones written before leases) give a context that holds nothing, so
    they keep working without the one-runner guarantee.

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
    return run_lease(thread_id, store.acquire_lease, store.release_lease)
