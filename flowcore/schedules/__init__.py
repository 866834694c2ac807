"""Schedules that fire: a plan's cron + timezone becomes periodic runs for its user.

A :class:`Schedule` names a pipeline or task plan, its input, its user, a
:class:`~flowcore.pipeline.schedule.ScheduleSpec` and a missed-slot policy.
A :class:`ScheduleStore` keeps schedules and one claim row per fired slot
(SQLite by default, Postgres when ``FLOWCORE_DATABASE_URL`` says so); a
:class:`Scheduler` claims due slots in one transaction per tick, so each slot
fires at most once however many schedulers run, and hands each to a
:class:`SlotSink` (:class:`RunnerSink` runs it in process).

Slot times come from cronsim (``pip install 'flowcore[schedules]'``),
walked in the schedule's own timezone; see :mod:`flowcore.schedules.slots`
for the daylight-saving policy.

Example:
    >>> import asyncio, tempfile, os
    >>> from datetime import datetime, UTC
    >>> class Recorder:
    ...     def __init__(self): self.slots = []
    ...     async def fire(self, due): self.slots.append(due.claim.slot_time.isoformat())
    >>> async def demo(path):
    ...     clock = ManualClock(datetime(2024, 3, 30, 12, tzinfo=UTC))
    ...     async with SqliteScheduleStore(path) as store:
    ...         await store.add(new_schedule({"id": "p", "name": "P", "nodes": []},
    ...             cron="30 1 * * *", timezone="Europe/London", now=clock.now().timestamp()))
    ...         sink = Recorder()
    ...         scheduler = Scheduler(store, sink, clock=clock, poll_interval=3600, grace=3600)
    ...         await scheduler.run(ticks=48)  # two days, an hour a tick
    ...         return sink.slots
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     asyncio.run(demo(os.path.join(tmp, "f.db")))
    ['2024-03-31T01:00:00+00:00', '2024-04-01T00:30:00+00:00']
"""

from flowcore.schedules.model import (
    MISSED_SLOT_POLICIES,
    InvalidScheduleError,
    MissedSlotPolicy,
    Schedule,
    ScheduleExistsError,
    ScheduleNotFoundError,
    ScheduleStoreError,
    SlotClaim,
    new_schedule,
)
from flowcore.schedules.opening import open_schedule_store
from flowcore.schedules.postgres import PostgresScheduleStore
from flowcore.schedules.scheduler import (
    Clock,
    ManualClock,
    RunnerSink,
    Scheduler,
    SlotSink,
    SystemClock,
    run_slot,
    slot_thread_id,
)
from flowcore.schedules.slots import Decision, decide, latest_slot, next_slot, slot_instant
from flowcore.schedules.sqlite import SqliteScheduleStore
from flowcore.schedules.store import DueSlot, ScheduleStore

__all__ = [
    "MISSED_SLOT_POLICIES",
    "Clock",
    "Decision",
    "DueSlot",
    "InvalidScheduleError",
    "ManualClock",
    "MissedSlotPolicy",
    "PostgresScheduleStore",
    "RunnerSink",
    "Schedule",
    "ScheduleExistsError",
    "ScheduleNotFoundError",
    "ScheduleStore",
    "ScheduleStoreError",
    "Scheduler",
    "SlotClaim",
    "SlotSink",
    "SqliteScheduleStore",
    "SystemClock",
    "decide",
    "latest_slot",
    "new_schedule",
    "next_slot",
    "open_schedule_store",
    "run_slot",
    "slot_instant",
    "slot_thread_id",
]
