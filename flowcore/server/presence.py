"""``Presence``: one server process's heartbeat in the database, and its periodic chores.

Several ``flowcore serve`` processes may share one database. Each says it is
alive by beating in ``flowcore_server_instances`` (every ``beat_every``
seconds); a run whose process has not beaten for ``stale_after`` seconds, or
has left, may be taken over by another. On every ``tick`` the process also
cancels its runs someone asked (through any process) to cancel, and, when
asked to, sweeps for runs a stopped process left behind.

Example:
    >>> # presence = Presence(store, cancel=on_cancel, sweep=manager.recover)
    >>> # await presence.start(); ...; await presence.stop()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from flowcore.server.run_store import RunStore

__all__ = ["Presence"]

log = logging.getLogger("flowcore.server")


class Presence:
    """Beats, forwards cancel requests, sweeps for orphaned runs; ``stop`` leaves cleanly.

    Args:
        store: The run store (its ``server_id`` is this process).
        cancel: Called with the id of a run of this process to cancel.
        sweep: Continues orphaned runs (returns their ids); None: no sweeping.
        beat_every: Seconds between beats.
        stale_after: Seconds without a beat after which a process counts as gone
            (also how often ``sweep`` runs).
        tick: Seconds between checks for cancel requests.

    Example:
        >>> # presence = Presence(store, cancel=lambda run_id: ..., sweep=None)
    """

    def __init__(
        self,
        store: RunStore,
        *,
        cancel: Callable[[str], None],
        sweep: Callable[[], Awaitable[list[str]]] | None = None,
        beat_every: float = 5.0,
        stale_after: float = 30.0,
        tick: float = 1.0,
    ) -> None:
        self.store = store
        self.cancel = cancel
        self.sweep = sweep
        self.beat_every = beat_every
        self.stale_after = stale_after
        self.tick = tick
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Beat now, then keep beating in the background (a no-op if started).

        Example:
            >>> # await presence.start()
        """
        if self._task is not None:
            return
        await self.store.beat()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="flowcore-serve-beat")

    async def _run(self) -> None:
        swept = beaten = time.monotonic()
        while True:
            await asyncio.sleep(min(self.tick, self.beat_every))
            try:
                for run_id in await self.store.cancels_requested():
                    self.cancel(run_id)
                if time.monotonic() - beaten >= self.beat_every:
                    beaten = time.monotonic()
                    await self.store.beat()
                if self.sweep is not None and time.monotonic() - swept >= self.stale_after:
                    swept = time.monotonic()
                    resumed = await self.sweep()
                    if resumed:
                        log.info("continuing %d run(s) a stopped server left", len(resumed))
            except Exception as exc:
                # A database that is briefly away must not end the server's heartbeat.
                log.warning("server heartbeat failed: %s", type(exc).__name__)

    async def stop(self) -> None:
        """Stop beating and remove this process's beat: its runs may continue elsewhere.

        Example:
            >>> # await presence.stop()  # after its runs are suspended
        """
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(Exception):  # the database may be gone already
            await self.store.leave()
