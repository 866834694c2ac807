"""``QueueWorker``: a process that executes queued runs, and keeps going when things break.

A worker opens flowcore's stores on the Postgres database (checkpoints with
thread leases, blocks, memory, run history), the queue's tables, and a
procrastinate worker whose task is :class:`~flowcore.queue.runner.JobRunner`.
procrastinate fetches jobs with ``FOR UPDATE SKIP LOCKED`` (a job of a busy
thread waits: its ``lock`` is the thread id), wakes on ``LISTEN/NOTIFY``, and
writes the worker's heartbeat every ``heartbeat`` seconds.

**Crashed workers.** Every worker also sweeps: each ``heartbeat`` seconds it
asks procrastinate for ``flowcore.run`` jobs still ``doing`` on a worker
whose heartbeat is older than ``stalled_after`` seconds (a SIGKILLed or
frozen process) and puts them back in the queue; the next worker to take one
resumes the run from its last checkpoint (see :mod:`flowcore.queue.runner`).

**Lost database.** The worker supervises itself: when the database goes
away (a Postgres restart), procrastinate stops its worker (heartbeat or
listener failed) and the runs it had are retried; the supervisor closes
every pool, waits for the database with a capped backoff, and starts again
with fresh connections. The process keeps running: no outside supervisor is
needed for that (one is still advised for crashes, e.g. systemd's
``Restart=always``).

**Schedules.** Like procrastinate's periodic tasks, schedules are fired by
the workers themselves: with the ``schedules`` extra installed, each worker
also runs a :class:`~flowcore.schedules.Scheduler` tick loop beside its
procrastinate worker, whose sink (:class:`~flowcore.queue.slots.QueueSlotSink`)
defers every slot it claims as a ``flowcore.schedule_slot`` job. Any worker
runs that job (:class:`~flowcore.queue.slots.SlotJobRunner`). However many
workers tick, the schedule store's claim table gives each slot to one.

Example:
    >>> # worker = QueueWorker(url, build_executor, concurrency=4)
    >>> # await worker.run()          # until worker.stop() or cancellation
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import socket
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from flowcore._postgres import is_postgres_url, redact_url
from flowcore.port.inproc import InProcExecutor
from flowcore.queue.app import build_app, register_task, require_procrastinate
from flowcore.queue.errors import QueueConfigError
from flowcore.queue.jobs import TASK_NAME
from flowcore.queue.runner import JobRunner
from flowcore.queue.slots import QueueSlotSink, SlotJobRunner, register_slot_task
from flowcore.queue.tables import QueueTables
from flowcore.storage import Backends, open_backends

if TYPE_CHECKING:
    from flowcore.schedules.scheduler import Clock, Scheduler

__all__ = ["QueueWorker"]

_log = logging.getLogger(__name__)

ExecutorFactory = Callable[[Backends], InProcExecutor]
"""Builds the executor a worker runs jobs with, on the worker's open stores."""


def check_queue_url(url: str | None, what: str) -> str:
    """``url`` if it is a Postgres URL, else a :class:`QueueConfigError` saying what to set.

    Example:
        >>> check_queue_url("postgresql://db/x", "flowcore worker")
        'postgresql://db/x'
    """
    if not url or not is_postgres_url(url):
        shown = "unset" if not url else repr(redact_url(url))
        raise QueueConfigError(
            f"{what} needs a Postgres database: FLOWCORE_DATABASE_URL is {shown}; set it to "
            "postgresql://user:password@host:5432/dbname (queued runs, their events and "
            "threads live there; SQLite cannot be shared by worker processes)"
        )
    return url


class QueueWorker:
    """Executes queued runs from the database at ``url`` until stopped.

    Args:
        url: ``postgresql://...`` (the same database the submitters use).
        build_executor: Builds the :class:`InProcExecutor` (registered graphs,
            pipeline runner) on the worker's open stores.
        concurrency: Runs executed at once.
        heartbeat: Seconds between heartbeats (and stalled-job sweeps).
        stalled_after: Seconds without a heartbeat after which a worker's
            runs are re-queued.
        lease_ttl: Seconds a run's thread lease lasts without renewal (how
            long a crashed run keeps its thread).
        retry_delay: Seconds before a run cut short by the database is retried.
        name: The worker's name in procrastinate's logs (and on the slots it claims).
        schedules: Fire due schedule slots from this worker (None: when the
            ``schedules`` extra, cronsim, is installed).
        schedule_clock: The schedules' clock (tests replay time with one).
        schedule_poll: Seconds between schedule ticks.
        schedule_grace: Seconds a slot may be late and still fire.

    Example:
        >>> # await QueueWorker(url, lambda b: InProcExecutor(graphs=...)).run()
    """

    def __init__(
        self,
        url: str,
        build_executor: ExecutorFactory,
        *,
        concurrency: int = 4,
        heartbeat: float = 2.0,
        stalled_after: float = 10.0,
        lease_ttl: float = 10.0,
        retry_delay: float = 0.5,
        shutdown_grace: float = 2.0,
        name: str | None = None,
        schedules: bool | None = None,
        schedule_clock: Clock | None = None,
        schedule_poll: float = 1.0,
        schedule_grace: float = 60.0,
    ) -> None:
        check_queue_url(url, "QueueWorker")
        has_cronsim = importlib.util.find_spec("cronsim") is not None
        if schedules and not has_cronsim:
            raise QueueConfigError(
                "firing schedules needs the schedules extra (cronsim is missing): "
                "pip install 'flowcore[schedules]'"
            )
        if concurrency < 1:
            raise QueueConfigError(f"concurrency must be at least 1, got {concurrency}")
        if stalled_after <= heartbeat:
            raise QueueConfigError(
                f"stalled_after ({stalled_after:g}s) must be longer than heartbeat "
                f"({heartbeat:g}s), or live workers would look dead"
            )
        self.url = url
        self.build_executor = build_executor
        self.concurrency = concurrency
        self.heartbeat = heartbeat
        self.stalled_after = stalled_after
        self.lease_ttl = lease_ttl
        self.retry_delay = retry_delay
        self.shutdown_grace = shutdown_grace
        self.name = name or f"flowcore-{socket.gethostname()}-{os.getpid()}"
        self.schedules = has_cronsim if schedules is None else schedules
        self.schedule_clock = schedule_clock
        self.schedule_poll = schedule_poll
        self.schedule_grace = schedule_grace
        self.sessions = 0
        """How many times the worker (re)connected: 1 plus one per lost database."""
        self.slot_runner: SlotJobRunner | None = None
        """The current session's schedule-slot job body (its counters)."""
        self.scheduler: Scheduler | None = None
        """The current session's schedule tick loop, when the worker fires schedules."""
        self._stop = asyncio.Event()

    def stop(self) -> None:
        """Ask the worker to stop: runs in progress get ``shutdown_grace`` seconds, then retry.

        Example:
            >>> # loop.add_signal_handler(signal.SIGTERM, worker.stop)
        """
        self._stop.set()

    async def run(self) -> None:
        """Work until :meth:`stop` (or cancellation), reconnecting after a lost database.

        Example:
            >>> # await worker.run()
        """
        require_procrastinate("flowcore worker")
        backoff = 0.2
        while not self._stop.is_set():
            try:
                await self._session()
                backoff = 0.2
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.warning(
                    "flowcore worker %s: lost the database (%s: %s); reconnecting in %.1fs",
                    self.name,
                    type(exc).__name__,
                    str(exc)[:200],
                    backoff,
                )
            if self._stop.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), backoff)
            backoff = min(backoff * 2, 2.0)

    async def _session(self) -> None:
        """One connected life: open everything, work until stopped or the database fails."""
        self.sessions += 1
        async with AsyncExitStack() as stack:
            tables = await stack.enter_async_context(QueueTables(self.url))
            backends = await stack.enter_async_context(open_backends(self.url))
            checkpoints: Any = backends.checkpoints
            checkpoints.lease_ttl = self.lease_ttl  # a crashed run keeps its thread this long
            executor = self.build_executor(backends)
            stack.push_async_callback(executor.aclose)
            app = build_app(self.url, max_connections=self.concurrency + 4)
            runner = JobRunner(tables, executor, checkpoints, lease_wait=self.lease_ttl * 3)
            register_task(app, runner, retry_delay=self.retry_delay)
            from flowcore.schedules.postgres import PostgresScheduleStore

            schedules = await stack.enter_async_context(PostgresScheduleStore(self.url))
            self.slot_runner = SlotJobRunner(getattr(executor, "runner", None), schedules)
            register_slot_task(app, self.slot_runner)
            await stack.enter_async_context(app.open_async())
            from procrastinate.worker import Worker

            procrastinate_worker: Any = Worker(
                app,
                name=self.name,
                concurrency=self.concurrency,
                wait=True,
                install_signal_handlers=False,
                update_heartbeat_interval=self.heartbeat,
                stalled_worker_timeout=self.stalled_after,
                abort_job_polling_interval=min(1.0, self.heartbeat),
                fetch_job_polling_interval=min(2.0, self.heartbeat),
                shutdown_graceful_timeout=self.shutdown_grace,
                listen_notify=True,
                # A finished run's record is flowcore_queue_runs; its job row is spent.
                delete_jobs="successful",
            )
            worker = asyncio.ensure_future(procrastinate_worker.run())
            sweeper = asyncio.ensure_future(self._sweep(app, procrastinate_worker, runner))
            stopping = asyncio.ensure_future(self._stop.wait())
            helpers = [sweeper, stopping]
            if self.schedules:
                helpers.append(asyncio.ensure_future(self._fire_schedules(app, schedules)))
            try:
                await asyncio.wait({worker, *helpers}, return_when="FIRST_COMPLETED")
            finally:
                for task in (*helpers, worker):
                    task.cancel()
                for task in helpers:
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
                with contextlib.suppress(asyncio.CancelledError):
                    await worker  # re-raises a database failure: the supervisor reconnects
            if not self._stop.is_set():
                raise ConnectionError("the procrastinate worker stopped by itself")

    async def _fire_schedules(self, app: Any, store: Any) -> None:
        """Tick the schedules until stopped, deferring each slot this worker claims as a job."""
        from flowcore.schedules.scheduler import Scheduler

        def failed(due: Any, exc: BaseException) -> None:
            _log.warning(
                "flowcore worker %s: could not queue slot %s of schedule %s: %s",
                self.name,
                due.claim.slot_time.isoformat(),
                due.claim.schedule_id,
                str(exc)[:200],
            )

        self.scheduler = Scheduler(
            store,
            QueueSlotSink(app),
            clock=self.schedule_clock,
            poll_interval=self.schedule_poll,
            grace=self.schedule_grace,
            name=self.name,
            on_error=failed,
            on_tick_error=lambda exc: _log.warning(
                "flowcore worker %s: schedule tick failed: %s", self.name, str(exc)[:200]
            ),
        )
        await self.scheduler.run(stop=self._stop)

    async def _sweep(self, app: Any, worker: Any, runner: JobRunner) -> None:
        """Re-queue the runs of workers whose heartbeat went stale (crashed or frozen).

        Also this worker's own orphans: a job procrastinate still has as
        ``doing`` here although no run of it is going (its end could not be
        written because the database was away at that moment). Seen so in
        two sweeps in a row, it is put back in the queue; its run then ends
        from its checkpoints.
        """
        manager = app.job_manager
        suspects: set[int] = set()
        while True:
            await asyncio.sleep(self.heartbeat)
            try:
                suspects = await self._requeue_orphans(app, worker, runner, suspects)
            except Exception:  # the database is away; try again next time
                suspects = set()
            try:
                stalled = await manager.get_stalled_jobs(
                    task_name=TASK_NAME, seconds_since_heartbeat=self.stalled_after
                )
            except Exception:  # the database is away; the worker's own checks notice that
                continue
            for job in stalled:
                try:
                    requeued = await _retry_if_still(app, job.id, job.worker_id)
                except Exception:  # the database is away: next time
                    continue
                if requeued:
                    _log.warning(
                        "flowcore worker %s: re-queued job %s of a worker without heartbeat",
                        self.name,
                        job.id,
                    )
            with contextlib.suppress(Exception):
                await manager.prune_stalled_workers(self.stalled_after)

    async def _requeue_orphans(
        self, app: Any, worker: Any, runner: JobRunner, suspects: set[int]
    ) -> set[int]:
        """Retry this worker's ``doing`` jobs that no run is executing; returns new suspects."""
        if worker.worker_id is None:
            return set()
        rows = await app.connector.execute_query_all_async(
            "SELECT id FROM procrastinate_jobs WHERE status = 'doing' "
            "AND worker_id = %(worker_id)s AND task_name = %(task)s",
            worker_id=worker.worker_id,
            task=TASK_NAME,
        )
        idle = {int(row["id"]) for row in rows} - runner.active_jobs
        for job_id in idle & suspects:
            if await _retry_if_still(app, job_id, worker.worker_id):
                _log.warning(
                    "flowcore worker %s: re-queued job %s, whose end could not be written",
                    self.name,
                    job_id,
                )
        return idle - suspects


# Retry a job only if it is still "doing" on the worker it was found on. Another sweeper may
# have re-queued it already, and a live worker taken it since: retrying it then would hand
# one job to two workers. The row lock makes the check and the retry one step.
_RETRY_IF_STILL = (
    "WITH job AS (SELECT id FROM procrastinate_jobs WHERE id = %(job_id)s "
    "AND status = 'doing' AND worker_id IS NOT DISTINCT FROM %(worker_id)s FOR UPDATE) "
    "SELECT procrastinate_retry_job_v2(job.id, now(), NULL, NULL, NULL) AS retried FROM job"
)


async def _retry_if_still(app: Any, job_id: int, worker_id: int | None) -> bool:
    """Put the job back in the queue if it is still doing on ``worker_id``; True if it was."""
    rows = await app.connector.execute_query_all_async(
        _RETRY_IF_STILL, job_id=job_id, worker_id=worker_id
    )
    return bool(rows)
