"""The scheduler loop: claim due slots, hand each one to a sink, sleep, again.

:class:`Scheduler` is a thin shell around the store's one-transaction tick
(:meth:`~flowcore.schedules.store.ScheduleStore.claim_due`): it reads the
time from a :class:`Clock`, claims what is due, and gives each claimed slot
to a :class:`SlotSink`. Any number of schedulers may run on one database;
each slot is claimed by exactly one of them.

* :class:`RunnerSink` (the default of ``flowcore scheduler``) runs the
  schedule's pipeline for its user through a
  :class:`~flowcore.pipeline.runner.PipelineRunner`, on thread
  ``schedule-<id>-<slot>``, so the run history records the schedule id and
  the slot time with the run, and notes the run id and status on the claim.
* ``flowcore.queue.slots.QueueSlotSink`` (Postgres, the queue extra)
  implements the same one-method protocol: ``fire`` defers a job instead of
  running it, and the worker that runs the job calls :func:`run_slot`.

The clock is injectable, so tests drive time by hand (:class:`ManualClock`)
and never sleep.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from flowcore.errors import InvalidInputError
from flowcore.schedules.model import Schedule, ScheduleStoreError
from flowcore.schedules.store import DueSlot, ScheduleStore, check_grace

if TYPE_CHECKING:
    from flowcore.pipeline.runner import PipelineRunner
    from flowcore.result import RunResult

__all__ = [
    "Clock",
    "ManualClock",
    "RunnerSink",
    "Scheduler",
    "SlotSink",
    "SystemClock",
    "run_slot",
    "slot_thread_id",
]


@runtime_checkable
class Clock(Protocol):
    """Where a scheduler reads the time and waits.

    Example:
        >>> isinstance(SystemClock(), Clock)
        True
    """

    def now(self) -> datetime:
        """The current time, timezone-aware."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...


class SystemClock:
    """The real clock: UTC now, and ``asyncio.sleep``.

    Example:
        >>> SystemClock().now().tzinfo is UTC
        True
    """

    def now(self) -> datetime:
        """The current UTC time."""
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        """Sleep on the event loop."""
        await asyncio.sleep(seconds)


class ManualClock:
    """A clock that moves only when told: ``sleep`` advances it and returns at once.

    Example:
        >>> clock = ManualClock(datetime(2024, 3, 31, tzinfo=UTC))
        >>> clock.advance(90).isoformat()
        '2024-03-31T00:01:30+00:00'
    """

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise InvalidInputError("ManualClock needs a timezone-aware start, e.g. tzinfo=UTC")
        self._now = start

    def now(self) -> datetime:
        """The clock's time."""
        return self._now

    def set(self, when: datetime) -> None:
        """Jump to ``when`` (forwards or back)."""
        self._now = when

    def advance(self, seconds: float) -> datetime:
        """Move ``seconds`` forward; the new time."""
        self._now += timedelta(seconds=seconds)
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Advance instead of waiting (yielding once to the loop)."""
        self.advance(seconds)
        await asyncio.sleep(0)


@runtime_checkable
class SlotSink(Protocol):
    """What happens to a claimed slot: run it here, or send it to a queue.

    ``fire`` is called once per claimed slot. An error it raises is reported
    (see :class:`Scheduler`'s ``on_error``) and never retried: slots are at
    most once.

    Example:
        >>> class Recorder:
        ...     def __init__(self): self.fired = []
        ...     async def fire(self, due): self.fired.append(due.claim.slot)
        >>> isinstance(Recorder(), SlotSink)
        True
    """

    async def fire(self, due: DueSlot) -> None:
        """Start (or enqueue) the run of ``due``."""
        ...


def slot_thread_id(schedule_id: str, slot: float) -> str:
    """The thread a slot's run is saved under: names the schedule and the UTC slot time.

    Example:
        >>> slot_thread_id("lunch", 1711845000.0)
        'schedule-lunch-20240331T0030Z'
    """
    return f"schedule-{schedule_id}-{datetime.fromtimestamp(slot, UTC):%Y%m%dT%H%MZ}"


class RunnerSink:
    """Runs each slot in this process through flowcore's pipeline runner, and records it.

    Args:
        runner: The runner (blocks, executor, checkpointer, history).
        store: Where :meth:`ScheduleStore.finish_slot` notes the run id and status.
        on_run: Called with each slot and the result of its run (a CLI prints it).

    Example:
        >>> # sink = RunnerSink(workspace.runner(provider, model, tools), store)
    """

    def __init__(
        self,
        runner: PipelineRunner,
        store: ScheduleStore,
        *,
        on_run: Callable[[DueSlot, RunResult], None] | None = None,
    ) -> None:
        self.runner = runner
        self.store = store
        self.on_run = on_run

    async def fire(self, due: DueSlot) -> None:
        """Run the schedule's pipeline for its user on the slot's thread; note the outcome.

        Example:
            >>> # await sink.fire(due)
        """
        result = await run_slot(self.runner, self.store, due.schedule, due.claim.slot)
        if self.on_run is not None:
            self.on_run(due, result)


async def run_slot(
    runner: PipelineRunner, store: ScheduleStore, schedule: Schedule | str, slot: float
) -> RunResult:
    """Run one claimed slot of ``schedule`` and note its run on the claim; the result.

    The run is the schedule's pipeline, for its user, with its input, on
    thread :func:`slot_thread_id`, recorded in the runner's history. This is
    what :class:`RunnerSink` does in the scheduler's process, and what a
    queue worker's job does with the ``(schedule_id, slot)`` a queueing sink
    sent it (``schedule`` may be given by id; it is then read from ``store``).
    A run that cannot start is noted as ``error: ...`` and re-raised.

    Example:
        >>> # result = await run_slot(runner, store, job["schedule_id"], job["slot"])
    """
    found = schedule if isinstance(schedule, Schedule) else await store.get(schedule)
    try:
        result = await runner.run(
            found.definition(),
            dict(found.inputs),
            user_id=found.user_id,
            thread_id=slot_thread_id(found.schedule_id, slot),
        )
    except Exception as exc:
        await store.finish_slot(found.schedule_id, slot, run_id="", status=f"error: {exc}"[:500])
        raise
    await store.finish_slot(found.schedule_id, slot, run_id=result.run_id, status=result.status)
    return result


ErrorCallback = Callable[[DueSlot, BaseException], None]


class Scheduler:
    """Fires due slots of every enabled schedule in a store, at most once each.

    Args:
        store: The open schedule store.
        sink: What a claimed slot becomes (a run here, a queued job ...).
        clock: Where time comes from; :class:`SystemClock` by default.
        poll_interval: Seconds between ticks (default 1).
        grace: Seconds a slot may be late and still count as on time (default 60);
            a later slot is *missed* and its schedule's policy applies.
        name: This scheduler's name in the claims (default host, pid and a random tag).
        max_running: Slots fired concurrently at most; more wait their turn.
        on_error: Called with a slot whose run failed to start or raised.
        on_tick_error: Called when a tick's database transaction fails (the
            database restarts, say); the loop goes on at the next poll, and
            nothing was claimed by the failed tick.

    Example:
        >>> # scheduler = Scheduler(store, RunnerSink(runner, store))
        >>> # await scheduler.run()                # until cancelled
        >>> # await scheduler.tick(wait=True)      # one tick, its runs awaited (tests)
    """

    def __init__(
        self,
        store: ScheduleStore,
        sink: SlotSink,
        *,
        clock: Clock | None = None,
        poll_interval: float = 1.0,
        grace: float = 60.0,
        name: str | None = None,
        max_running: int = 8,
        on_error: ErrorCallback | None = None,
        on_tick_error: Callable[[ScheduleStoreError], object] | None = None,
    ) -> None:
        if isinstance(poll_interval, bool) or not poll_interval > 0:
            raise InvalidInputError(f"poll_interval must be > 0 seconds, got {poll_interval!r}")
        if isinstance(max_running, bool) or not isinstance(max_running, int) or max_running < 1:
            raise InvalidInputError(f"max_running must be an int >= 1, got {max_running!r}")
        self.store = store
        self.sink = sink
        self.clock = clock or SystemClock()
        self.poll_interval = float(poll_interval)
        self.grace = check_grace(grace)
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.on_error = on_error
        self.on_tick_error = on_tick_error
        self.fired = 0
        self.failed = 0
        self.tick_errors = 0
        self._slots = asyncio.Semaphore(max_running)
        self._running: set[asyncio.Task[None]] = set()

    async def tick(self, *, wait: bool = False) -> list[DueSlot]:
        """Claim what is due now and start firing it; ``wait`` also awaits those runs.

        Example:
            >>> # won = await scheduler.tick(wait=True)
        """
        won = await self.store.claim_due(self.clock.now(), grace=self.grace, claimed_by=self.name)
        started = [self._start(due) for due in won]
        if wait and started:
            await asyncio.gather(*started, return_exceptions=True)
        return won

    async def run(self, *, stop: asyncio.Event | None = None, ticks: int | None = None) -> None:
        """Tick every ``poll_interval`` until ``stop`` is set, ``ticks`` ran, or cancelled.

        Runs still going when the loop ends are awaited (or cancelled with it).

        Example:
            >>> # await scheduler.run(stop=shutdown_event)
        """
        done = 0
        try:
            while not (stop is not None and stop.is_set()) and (ticks is None or done < ticks):
                try:
                    await self.tick()
                except ScheduleStoreError as exc:
                    # The transaction rolled back whole: no slot was claimed, so the next
                    # tick decides the same slots again (late ones under the missed policy).
                    self.tick_errors += 1
                    if self.on_tick_error is not None:
                        self.on_tick_error(exc)
                done += 1
                if ticks is not None and done >= ticks:
                    break
                await self._pause(stop)
            await self.drain()
        except BaseException:
            await self._cancel_running()
            raise

    async def drain(self) -> None:
        """Wait for every run this scheduler started.

        Example:
            >>> # await scheduler.drain()
        """
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)

    async def _pause(self, stop: asyncio.Event | None) -> None:
        if stop is None:
            await self.clock.sleep(self.poll_interval)
            return
        # Woken early by stop, so shutting down never waits out a poll.
        sleeper = asyncio.ensure_future(self.clock.sleep(self.poll_interval))
        waiter = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, waiter):
                task.cancel()
            await asyncio.gather(sleeper, waiter, return_exceptions=True)

    def _start(self, due: DueSlot) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(self._fire(due))
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return task

    async def _fire(self, due: DueSlot) -> None:
        async with self._slots:
            try:
                await self.sink.fire(due)
                self.fired += 1
            except Exception as exc:
                self.failed += 1
                if self.on_error is not None:
                    self.on_error(due, exc)

    async def _cancel_running(self) -> None:
        running = list(self._running)
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
