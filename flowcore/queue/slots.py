"""Schedule slots as queued jobs: a claimed slot is deferred, and a worker runs it.

On Postgres a scheduler does not have to run a slot's pipeline itself.
:class:`QueueSlotSink` is the :class:`~flowcore.schedules.SlotSink` that
defers each claimed slot as a ``flowcore.schedule_slot`` procrastinate job;
any ``flowcore worker`` then runs it through
:func:`~flowcore.schedules.run_slot` (:class:`SlotJobRunner`), which records
the run in the run history (thread ``schedule-<id>-<slot>``) and notes its
id and status on the slot's claim row, exactly as the in-process
:class:`~flowcore.schedules.RunnerSink` does.

At most once, three times over:

* the claim table lets one scheduler (or worker tick) claim a slot;
* the job's ``queueing_lock`` is the slot (:func:`slot_key`), so deferring the
  same slot again while its job waits is refused (``AlreadyEnqueued``) and a
  retried deferral queues nothing more;
* the job's ``lock`` is the slot too, and a job whose slot already has a
  recorded run (or no claim at all) runs nothing.

A slot job is never retried: a worker that dies during a slot's run leaves
that slot failed, as a crashed in-process scheduler would.

Example:
    >>> slot_key("digest", 1711845000.0)
    'flowcore-slot:digest:1711845000.0'
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from flowcore.queue.errors import QueueConfigError

if TYPE_CHECKING:
    from procrastinate import App

    from flowcore.pipeline.runner import PipelineRunner
    from flowcore.schedules.postgres import PostgresScheduleStore
    from flowcore.schedules.store import DueSlot

__all__ = ["SLOT_TASK_NAME", "QueueSlotSink", "SlotJobRunner", "register_slot_task", "slot_key"]

_log = logging.getLogger(__name__)

SLOT_TASK_NAME: Final = "flowcore.schedule_slot"
"""The procrastinate task a schedule slot is deferred as."""


def slot_key(schedule_id: str, slot: float) -> str:
    """The slot's job identity: its ``queueing_lock`` and its ``lock``.

    Example:
        >>> slot_key("lunch", 60)
        'flowcore-slot:lunch:60.0'
    """
    return f"flowcore-slot:{schedule_id}:{float(slot)!r}"


class QueueSlotSink:
    """Defers each claimed slot as a job for the workers instead of running it here.

    Args:
        app: An open procrastinate app on the schedules' Postgres database.

    ``queued`` counts the jobs this sink deferred, ``already`` the deferrals
    refused because the slot's job was still waiting.

    Example:
        >>> # scheduler = Scheduler(store, QueueSlotSink(app))
    """

    def __init__(self, app: App) -> None:
        self.app = app
        self.queued = 0
        self.already = 0

    async def fire(self, due: DueSlot) -> None:
        """Defer the slot's job (see :meth:`defer`).

        Example:
            >>> # await sink.fire(due)
        """
        await self.defer(due.claim.schedule_id, due.claim.slot)

    async def defer(self, schedule_id: str, slot: float) -> int | None:
        """Queue the job of one slot; its job id, or None if that slot's job is already queued.

        Example:
            >>> # job_id = await sink.defer("digest", 1711845000.0)
        """
        from procrastinate.exceptions import AlreadyEnqueued

        key = slot_key(schedule_id, slot)
        deferrer = self.app.configure_task(SLOT_TASK_NAME, queueing_lock=key, lock=key)
        try:
            job_id: int = await deferrer.defer_async(schedule_id=schedule_id, slot=float(slot))
        except AlreadyEnqueued:
            self.already += 1
            return None
        self.queued += 1
        return job_id


class SlotJobRunner:
    """The body of a ``flowcore.schedule_slot`` job: run the slot unless it already ran.

    Args:
        runner: The worker's pipeline runner (None: the worker was built without
            one, and slot jobs fail saying so).
        store: The schedule store on the worker's database.

    ``ran`` counts the slots this worker ran; ``skipped`` the jobs it let go
    (a slot with a recorded run, or one nobody claimed).

    Example:
        >>> # register_slot_task(app, SlotJobRunner(executor.runner, store))
    """

    def __init__(self, runner: PipelineRunner | None, store: PostgresScheduleStore) -> None:
        self.runner = runner
        self.store = store
        self.ran = 0
        self.skipped = 0

    async def __call__(self, schedule_id: str, slot: float) -> str:
        """Run the slot through :func:`~flowcore.schedules.run_slot`; the run's status.

        Example:
            >>> # status = await slot_runner("digest", 1711845000.0)
        """
        from flowcore.schedules.scheduler import run_slot

        claim = await self.store.get_slot(schedule_id, slot)
        if claim is None or claim.status is not None:
            # Unclaimed: not this queue's to run. Recorded: a duplicate job; it ran once already.
            self.skipped += 1
            why = "no claim" if claim is None else f"already {claim.status}"
            _log.info("schedule slot %s skipped (%s)", slot_key(schedule_id, slot), why)
            return "skipped"
        if self.runner is None:
            raise QueueConfigError(
                "this worker has no pipeline runner, so it cannot run schedule slots; build its "
                "InProcExecutor with runner=... (flowcore worker does)"
            )
        result = await run_slot(self.runner, self.store, schedule_id, slot)
        self.ran += 1
        return result.status


def register_slot_task(app: App, body: SlotJobRunner) -> None:
    """Register ``body`` as the app's ``flowcore.schedule_slot`` task (never retried).

    Example:
        >>> # register_slot_task(app, SlotJobRunner(runner, store))
    """

    async def schedule_slot(schedule_id: str, slot: float) -> Any:
        return await body(schedule_id, slot)

    app.task(name=SLOT_TASK_NAME)(schedule_slot)
