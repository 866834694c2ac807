"""``DetachingRunManager``: the run manager when queue workers, not this process, run the runs.

With the in-process executor a server's shutdown stops its runs at a
checkpoint and the next server continues them. With runs on ``flowcore
worker`` processes (:class:`~flowcore.server.queue_executor.QueueServerExecutor`)
that would be wrong: the workers own the runs. So here a shutdown only
*detaches*: the server stops following its runs (they keep going, their
records stay ``running``) and leaves; the next server to start (or another
API process of the same database, on its next sweep) claims each such run
and *re-attaches* to it by run id: the queue replays the run's events from
the first, then follows it live to its ``done``, which is recorded as usual.

Cancelling through the API cancels the run in the queue (a queued job never
runs; a running one is aborted in its worker).

Example:
    >>> # manager = DetachingRunManager(executor=queue_server_executor, store=RunStore(db))
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, cast

from flowcore.port.events import AiEvent
from flowcore.server.manager import LiveRun, RunManager
from flowcore.server.run_store import ACTIVE, RunRow, ended
from flowcore.server.targets import ResolvedTarget

__all__ = ["DetachingRunManager", "detaches"]

log = logging.getLogger("flowcore.server")


def detaches(executor: Any) -> bool:
    """Whether ``executor``'s runs outlive the server (they run on queue workers).

    Example:
        >>> from flowcore.port.inproc import InProcExecutor
        >>> detaches(InProcExecutor())
        False
    """
    return bool(getattr(executor, "detached_runs", False))


class DetachingRunManager(RunManager):
    """A :class:`RunManager` that detaches from runs on shutdown and re-attaches on start.

    Example:
        >>> # manager = DetachingRunManager(executor=executor, store=RunStore(db))
        >>> # await manager.begin()      # re-attaches to runs a stopped server followed
        >>> # await manager.shutdown()   # the runs go on in the workers
    """

    async def _stop_runs(self) -> None:
        """Stop following the runs (never stop the runs), then leave so others may take them."""
        tasks = [live.task for live in list(self._live.values()) if live.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        # Only now: no reader here records anything more, so another server may take them.
        await self.presence.stop()

    async def follow(self, user_id: str, run_id: str) -> AsyncIterator[AiEvent]:
        """The run's events from the first, then live, ending after ``done``.

        A run another API process follows is streamed from the queue here
        too, live (the workers store every event as it happens).

        Example:
            >>> # async for event in manager.follow("ada", "r1"): ...
        """
        row = await self.get(user_id, run_id)
        if run_id in self._live or row.status not in ACTIVE or self.stopping:
            async for event in super().follow(user_id, run_id):
                yield event
            return
        async for event in self.executor.follow(run_id):  # type: ignore[attr-defined]
            yield event

    async def wait(self, user_id: str, run_id: str) -> RunRow:
        """Wait until the run has ended, or this server stopped following it; its record.

        Example:
            >>> # row = await manager.wait("ada", "r1")
        """
        await self.get(user_id, run_id)
        live = self._live.get(run_id)
        if live is not None and live.task is not None:
            # asyncio.wait, not the task itself: a shutdown cancels the following, and the
            # caller then gets the run as recorded (still running), not a cancellation.
            await asyncio.wait({live.task})
        return await self.get(user_id, run_id)

    async def _continue(self, row: RunRow) -> bool:
        """Follow a claimed run again by its run id: every event from the first, then live."""
        if not await self.executor.queued(row.run_id):  # type: ignore[attr-defined]
            # Its server stopped between recording the run and queueing it.
            await self.store.update(
                ended(row, "failed", error="the server stopped before the run was queued")
            )
            return False
        try:
            resolved = await self.resolve(row)
        except Exception:
            # The graph is the workers' business; the record needs only its name.
            resolved = ResolvedTarget(row.target_name, cast(Any, row.target_name), None, False)
        handle = self.executor.attach(row.run_id)  # type: ignore[attr-defined]
        live = LiveRun(row=row, resolved=resolved, handle=handle, log=[])
        self._live[row.run_id] = live
        live.task = asyncio.get_running_loop().create_task(
            self._pump(live), name=f"flowcore-serve-{row.run_id}"
        )
        log.info("re-attached to queued run %s", row.run_id)
        return True
