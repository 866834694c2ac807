"""Thread leases, the store side: the lease table, its ``ttl`` and their checks.

A run on a thread holds the thread's lease in the checkpoint store
(:meth:`~flowcore.checkpoint.protocol.LeasingCheckpointer.acquire_lease`), so
two runs of one thread never overlap, across tasks and processes. This module
holds what the stores need: :class:`LeaseTable`, the in-process table behind
the in-memory stores, :data:`DEFAULT_LEASE_TTL` and :func:`check_lease_ttl`.

Keeping a lease for a run (take it before the thread is read, renew it,
release it at the end) is the runtime's: :mod:`flowcore.runtime.leases`. The
names that moved there (``LeaseKeeper``, ``hold_thread``, ``new_holder_id``)
still resolve here for code that imported them from this module, but only
when asked for: no module of :mod:`flowcore.checkpoint` imports the runtime
as it loads (and no store uses those names), so the port loads on its own and
the runtime depends on it, never the other way round, with no import cycle.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from flowcore.checkpoint.protocol import ThreadLease
from flowcore.errors import InvalidInputError, ThreadBusyError

if TYPE_CHECKING:  # for type checkers only: at run time __getattr__ answers these
    from flowcore.runtime.leases import LeaseKeeper as LeaseKeeper
    from flowcore.runtime.leases import hold_thread as hold_thread
    from flowcore.runtime.leases import new_holder_id as new_holder_id

__all__ = [
    "DEFAULT_LEASE_TTL",
    "LeaseKeeper",
    "LeaseTable",
    "check_lease_ttl",
    "hold_thread",
    "new_holder_id",
]

# Moved to flowcore.runtime.leases; answered by __getattr__ below.
_MOVED = frozenset({"LeaseKeeper", "hold_thread", "new_holder_id"})

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


def __getattr__(name: str) -> Any:
    """The run-side names that moved to :mod:`flowcore.runtime.leases`, looked up on use."""
    if name in _MOVED:
        from flowcore.runtime import leases

        return getattr(leases, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
