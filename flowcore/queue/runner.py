"""The body of one queued job: run (or resume) one thread and publish what it does.

:class:`JobRunner` is what procrastinate calls for every ``flowcore.run``
job. It runs the job through :class:`~flowcore.port.InProcExecutor` (so
queued runs use the same engine, event mapping, history and redaction as
runs in process), with the worker's Postgres checkpointer, and appends every
AiEvent to the queue's tables as it happens (:mod:`flowcore.queue.tables`).

What makes a run survive its worker:

* **Resuming, not restarting.** When the thread's latest checkpoint was
  written by this very run (its ``metadata["run_id"]``), the job is a retry
  after a crash: it continues the thread (``input=None``), so the engine
  re-runs only the nodes whose results were not saved (saved pending writes
  are applied, not re-computed). A run that had already ended when its
  worker died is finished from that checkpoint without running anything.
* **One run per thread.** procrastinate's ``lock=thread_id`` keeps a second
  job of the thread from starting; the checkpointer's thread lease guards
  the run itself. A retried job waits for the dead run's lease to lapse.
* **Nothing half-told.** The terminal ``error``/``done`` events are held
  back until the outcome is known: a run cut short by the database going
  away is retried (its job raises :class:`~flowcore.queue.app.RunNeedsRetry`)
  and its subscribers simply see more events with the next ``seq`` numbers.

Stop requests (``cancel``, ``interrupt``, ``rollback``) arrive as
procrastinate aborts; the reason is read from the run's row.

Example:
    >>> # register_task(app, JobRunner(tables, executor, checkpointer))
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

from flowcore.checkpoint.protocol import Checkpointer
from flowcore.errors import ThreadBusyError
from flowcore.graph.compiled import CompiledGraph
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.plan import TaskPlan, as_pipeline
from flowcore.pipeline.validation import load_checked_definition
from flowcore.port.errors import UnknownTargetError
from flowcore.port.events import DoneAiEvent, ErrorAiEvent, RunStartAiEvent, event_to_dict
from flowcore.port.inproc import InProcExecutor, InProcRunHandle
from flowcore.port.protocol import (
    UNSET,
    Caller,
    PendingQuestion,
    RunOptions,
    RunOutcome,
    RunRequest,
)
from flowcore.queue.app import RunNeedsRetry, outcome_to_json
from flowcore.queue.errors import QueueStoreError
from flowcore.queue.jobs import RunJob
from flowcore.queue.tables import QueueTables, RunRow
from flowcore.queue.thread_ops import cut_thread, drop_run_checkpoints

__all__ = ["JobRunner"]

_log = logging.getLogger(__name__)

# Errors of the stores, not of the run: a run that ended with one of these is retried.
_INFRA_ERRORS = (
    "CheckpointStoreError",
    "RunHistoryStoreError",
    "BlockStoreError",
    "QueueStoreError",
    "ThreadBusyError",
    "OperationalError",
    "InterfaceError",
    "PoolTimeout",
    "PoolClosed",
)


def _infra_exception(exc: BaseException) -> bool:
    """Whether ``exc`` comes from a store or the database, not from the run itself."""
    name = type(exc).__name__
    return name in _INFRA_ERRORS or name.endswith("StoreError") or isinstance(exc, OSError)


def _infra_failure(outcome: RunOutcome) -> bool:
    if outcome.status != "failed" or not outcome.error:
        return False
    kind = outcome.error.split(":", 1)[0].strip()
    return kind in _INFRA_ERRORS or kind.endswith("StoreError")


class _Pump:
    """Moves one run's AiEvents from its handle to the events table, renumbered.

    ``base`` is the run's next free ``seq`` (non-zero after a crash); a
    continued run's second ``run_start`` is dropped so a subscriber sees one.

    Writes are group-committed: an event is written at once when no write is
    in flight, and the events that arrive meanwhile go together in the next
    transaction (one ``NOTIFY`` for them all). A subscriber waits no longer,
    and a busy worker makes far fewer round trips.
    """

    def __init__(self, tables: QueueTables, handle: InProcRunHandle, base: int) -> None:
        self.tables = tables
        self.handle = handle
        self.seq = base
        self.skip_start = base > 0
        self.held: list[dict[str, Any]] = []
        self.open_nodes = 0
        self._at_boundary = False
        self._buffer: list[dict[str, Any]] = []
        self._writer: asyncio.Task[None] | None = None

    def _send(self, data: dict[str, Any]) -> None:
        self._buffer.append(self._number(data))
        writer = self._writer
        if writer is not None and writer.done():
            writer.result()  # a failed write fails the pump (the job is then retried)
            writer = None
        if writer is None:
            self._writer = asyncio.ensure_future(self._write())

    async def _write(self) -> None:
        while self._buffer:
            batch, self._buffer = self._buffer, []
            await self.tables.append(self.handle.run_id, batch)

    async def _drain(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            await writer
        if self._buffer:
            await self._write()

    def stop_at_boundary(self) -> None:
        """Cancel the run when its next superstep begins (its last checkpoint is saved then).

        The engine saves a superstep's checkpoint before it starts any node of
        the next one, so the first ``node_start`` seen with no node running
        marks the boundary; that node is cancelled before it does anything
        that counts (its start is not published).
        """
        self._at_boundary = True

    def _number(self, data: dict[str, Any]) -> dict[str, Any]:
        data["seq"] = self.seq
        self.seq += 1
        return data

    async def run(self) -> RunOutcome:
        try:
            async for event in self.handle:
                data = event_to_dict(event)
                if event.type == "run_start" and self.skip_start:
                    continue
                if event.type in ("error", "done"):
                    self.held.append(data)  # numbered once the outcome is settled
                    continue
                if event.type == "node_start":
                    if self._at_boundary and self.open_nodes == 0:
                        # A new superstep begins: the last one's checkpoint is saved. Stop here.
                        self.handle.cancel()
                        continue
                    self.open_nodes += 1
                elif event.type in ("node_end", "node_error"):
                    self.open_nodes -= 1
                self._send(data)
            await self._drain()
        except BaseException:
            self.handle.cancel()
            writer = self._writer
            if writer is not None and not writer.done():
                writer.cancel()
                with contextlib.suppress(BaseException):
                    await writer
            raise
        return await self.handle.final

    def ending(self, outcome: RunOutcome, note: str | None = None) -> list[dict[str, Any]]:
        """The held terminal events, numbered, with ``note`` (why it stopped) as an error."""
        out = [dict(e) for e in self.held]
        if note is not None and out and out[-1]["type"] == "done":
            error = dict(out[-1])
            error.update(type="error", error_type="RunStopped", message=note)
            error.pop("status", None)
            out.insert(len(out) - 1, error)
        if out and out[-1]["type"] == "done":
            out[-1]["status"] = outcome.status
        return [self._number(e) for e in out]


class JobRunner:
    """The ``flowcore.run`` task: one job in, one run executed and published.

    Args:
        tables: The queue's runs and events tables.
        executor: Runs the job (its registered graphs; its runner runs pipelines).
        checkpointer: The Postgres checkpointer the executor's graphs and runner use.
        lease_wait: Seconds at most to wait for a crashed run's thread lease to lapse.

    Example:
        >>> # runner = JobRunner(tables, InProcExecutor(graphs=..., runner=...), checkpoints)
    """

    def __init__(
        self,
        tables: QueueTables,
        executor: InProcExecutor,
        checkpointer: Checkpointer,
        *,
        lease_wait: float = 60.0,
    ) -> None:
        self.tables = tables
        self.executor = executor
        self.checkpointer = checkpointer
        self.lease_wait = lease_wait
        self.active_jobs: set[int] = set()
        """Ids of the procrastinate jobs this runner is executing right now."""

    async def __call__(self, context: Any, job: Mapping[str, Any]) -> str:
        """Run the job; return the run's final status (procrastinate logs it).

        A database failure anywhere (before, during or after the run) makes
        the job retried (:class:`RunNeedsRetry`); any other error ends the
        run ``failed`` with it.

        Example:
            >>> # status = await runner(context, job=RunJob(...).to_json())
        """
        from procrastinate.exceptions import JobAborted

        run_job = RunJob.from_json(job)
        job_id = getattr(getattr(context, "job", None), "id", None)
        if job_id is not None:
            self.active_jobs.add(job_id)
        try:
            return await self._execute(context, run_job)
        except (RunNeedsRetry, JobAborted):
            raise
        except asyncio.CancelledError:
            await self._aborted_outside_run(context, run_job)
            raise
        except Exception as exc:
            if _infra_exception(exc):
                raise RunNeedsRetry(f"{type(exc).__name__}: {exc}") from None
            _log.exception("flowcore queue: run %s failed outside its graph", run_job.run_id)
            row = await self.tables.get_run(run_job.run_id)
            if row is not None and row.active:
                await self._fail_unstarted(run_job, row, exc)
            return "failed"
        finally:
            if job_id is not None:
                self.active_jobs.discard(job_id)

    async def _execute(self, context: Any, run_job: RunJob) -> str:
        try:
            target, checkpointed = await self._resolve(run_job)
        except Exception as exc:  # the job cannot run here: it ends failed, not retried
            if _infra_exception(exc):
                raise
            row = await self.tables.claim(run_job.run_id, run_job.thread_id)
            if row is not None and row.active:
                await self._fail_unstarted(run_job, row, exc)
            return "failed"
        thread_id = run_job.thread_id
        if thread_id is None and checkpointed:
            thread_id = f"queue-{run_job.run_id}"
        row = await self.tables.claim(run_job.run_id, thread_id)
        if row is None or not row.active:
            return row.status if row is not None else "unknown"
        thread_id = row.thread_id or thread_id
        if row.stop_reason is not None:
            await self._end_unstarted(run_job, row, row.stop_reason)
            return "cancelled"
        continuing = False
        if thread_id is not None and checkpointed:
            # Only once no run holds the thread is its latest checkpoint the one to go on from.
            await self._wait_for_lease(thread_id)
            now = await self.tables.get_run(run_job.run_id)
            if now is None or not now.active:
                return now.status if now is not None else "unknown"
            latest = await self.checkpointer.get(thread_id)
            if latest is not None and latest.metadata.get("run_id") == run_job.run_id:
                if latest.cursor is None or await self._waits_for_answer(target, thread_id):
                    # It had ended (or paused for a human) when its worker died.
                    return await self._finish_from_checkpoint(run_job, row, target, thread_id)
                continuing = True
        request = RunRequest(
            target=target,
            input=None if continuing else _start_input(run_job),
            caller=Caller(
                request_id=run_job.request_id,
                trace_id=run_job.trace_id,
                user_id=run_job.user_id,
                billing_account_id=run_job.billing_account_id,
            ),
            options=RunOptions(
                thread_id=thread_id,
                resume=UNSET if continuing or run_job.resume is None else run_job.resume["value"],
                recursion_limit=run_job.recursion_limit,
                budgets=run_job.budgets,
            ),
        )
        handle = self.executor.run(request, run_id=run_job.run_id)
        pump = _Pump(self.tables, handle, row.next_seq)
        pumping = asyncio.ensure_future(pump.run())
        try:
            outcome = await asyncio.shield(pumping)
        except asyncio.CancelledError:
            return await self._stopped(context, run_job, handle, pump, pumping, thread_id)
        except Exception:
            handle.cancel()
            raise RunNeedsRetry(f"publishing run {run_job.run_id} failed") from None
        if _infra_failure(outcome):
            raise RunNeedsRetry(outcome.error)
        await self.tables.append(
            run_job.run_id, pump.ending(outcome), outcome=outcome_to_json(outcome)
        )
        return outcome.status

    # ---------------------------------------------------------------- stopping
    async def _stopped(
        self,
        context: Any,
        job: RunJob,
        handle: InProcRunHandle,
        pump: _Pump,
        pumping: asyncio.Future[RunOutcome],
        thread_id: str | None,
    ) -> str:
        """The job was aborted: by a stop request, or because the worker is stopping."""
        from procrastinate.exceptions import JobAborted
        from procrastinate.job_context import AbortReason

        task = asyncio.current_task()
        if task is not None:
            task.uncancel()  # handled here; later awaits must not see a stale cancellation
        reason: str | None = None
        by: str | None = None
        if context.abort_reason() == AbortReason.USER_REQUEST:
            with contextlib.suppress(QueueStoreError):
                reason, by = await self.tables.stop_reason(job.run_id)
        if reason is None:
            # The worker stops (or lost the database): stop quietly, the job is retried.
            handle.cancel()
            with contextlib.suppress(Exception):
                await pumping
            raise asyncio.CancelledError
        if reason == "interrupt":
            pump.stop_at_boundary()
        else:
            handle.cancel()
        outcome = await pumping
        note = None
        if reason == "rollback" and thread_id is not None:
            # Rolled back whatever it reached: its checkpoints go, so it never happened.
            await drop_run_checkpoints(self.checkpointer, thread_id, job.run_id)
            note = f"run rolled back: run {by} was submitted with multitask strategy rollback"
            outcome = dataclasses.replace(outcome, status="cancelled", output=None, error=note)
        elif reason == "interrupt" and thread_id is not None and outcome.status == "cancelled":
            # Stopped at a step boundary: its saved steps stay, its remainder is dropped.
            await cut_thread(self.checkpointer, thread_id, job.run_id)
            note = f"run interrupted: run {by} was submitted with multitask strategy interrupt"
            outcome = dataclasses.replace(outcome, error=note)
        await self.tables.append(
            job.run_id, pump.ending(outcome, note), outcome=outcome_to_json(outcome)
        )
        raise JobAborted

    async def _aborted_outside_run(self, context: Any, job: RunJob) -> None:
        """Aborted while not running its graph: a stop request ends the run here."""
        from procrastinate.exceptions import JobAborted
        from procrastinate.job_context import AbortReason

        if context.abort_reason() != AbortReason.USER_REQUEST:
            return  # the worker stops: the job is retried
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        row = await self.tables.get_run(job.run_id)
        if row is not None and row.active:
            await self._end_unstarted(job, row, row.stop_reason or "cancel")
        raise JobAborted

    # ------------------------------------------------------------- resolving
    async def _resolve(self, job: RunJob) -> tuple[Any, bool]:
        """The target to hand the executor, and whether its runs keep checkpoints."""
        if "graph" in job.target:
            name = str(job.target["graph"])
            graph = self._registered(name)
            if isinstance(graph, Pipeline | TaskPlan):
                return graph, True
            return name, getattr(graph, "checkpointer", None) is not None
        runner = self.executor.runner
        if runner is None:
            raise QueueStoreError(
                "this worker has no pipeline runner; start it with 'flowcore worker', which "
                "builds one on the database"
            )
        definition = await load_checked_definition(job.target["pipeline"], runner.blocks)
        return definition, runner.checkpointer is not None

    async def _graph_of(self, target: Any) -> CompiledGraph | Any:
        if isinstance(target, Pipeline | TaskPlan):
            runner = self.executor.runner
            assert runner is not None
            return await runner.compile(as_pipeline(target))
        return self._registered(target) if isinstance(target, str) else target

    def _registered(self, name: str) -> Any:
        graph = self.executor.graphs.get(name)
        if graph is None:
            known = ", ".join(sorted(self.executor.graphs)) or "none"
            raise UnknownTargetError(
                f"no graph named {name!r} is registered with this worker (registered: {known}); "
                "start the workers with flowcore worker --graphs module:attr naming it"
            )
        return graph

    async def _wait_for_lease(self, thread_id: str) -> None:
        """Wait until no run holds the thread (a crashed run's lease lapses on its own)."""
        acquire = getattr(self.checkpointer, "acquire_lease", None)
        release = getattr(self.checkpointer, "release_lease", None)
        if acquire is None or release is None:
            return
        probe = f"queue-probe:{uuid.uuid4().hex[:12]}"
        deadline = time.monotonic() + self.lease_wait
        while True:
            try:
                await acquire(thread_id, probe)
            except ThreadBusyError as busy:
                if time.monotonic() > deadline:
                    raise RunNeedsRetry(str(busy)) from None
                left = (busy.expires_at or time.time()) - time.time()
                await asyncio.sleep(min(1.0, max(0.05, left)))
                continue
            await release(thread_id, probe)
            return

    # ------------------------------------------------------ ending without a run
    def _ids(self, job: RunJob, name: str, version: str) -> dict[str, Any]:
        return {
            "run_id": job.run_id,
            "graph_name": name,
            "graph_version": version,
            "request_id": job.request_id,
            "trace_id": job.trace_id,
        }

    async def _end_with(
        self,
        job: RunJob,
        row: RunRow,
        ids: dict[str, Any],
        outcome: RunOutcome,
        error: tuple[str, str] | None,
    ) -> None:
        seq = row.next_seq
        events: list[Any] = []
        if seq == 0:
            events.append(RunStartAiEvent(**ids, seq=seq, thread_id=outcome.thread_id))
            seq += 1
        if error is not None:
            events.append(ErrorAiEvent(**ids, seq=seq, error_type=error[0], message=error[1]))
            seq += 1
        events.append(DoneAiEvent(**ids, seq=seq, status=outcome.status))
        await self.tables.append(
            job.run_id, [event_to_dict(e) for e in events], outcome=outcome_to_json(outcome)
        )

    async def _fail_unstarted(self, job: RunJob, row: RunRow, exc: Exception) -> None:
        ids = self._ids(job, job.target_name, "")
        message = str(exc)
        outcome = RunOutcome(
            run_id=job.run_id,
            status="failed",
            error=f"{type(exc).__name__}: {message}",
            thread_id=row.thread_id,
        )
        await self._end_with(job, row, ids, outcome, (type(exc).__name__, message))

    async def _end_unstarted(self, job: RunJob, row: RunRow, reason: str) -> None:
        ids = self._ids(job, job.target_name, "")
        note = f"run stopped before it started ({reason})"
        outcome = RunOutcome(
            run_id=job.run_id, status="cancelled", error=note, thread_id=row.thread_id
        )
        await self._end_with(job, row, ids, outcome, ("RunStopped", note))

    async def _waits_for_answer(self, target: Any, thread_id: str) -> bool:
        graph = await self._graph_of(target)
        get_state = getattr(graph, "get_state", None)
        if get_state is None:
            return False
        return bool(getattr(await get_state(thread_id), "interrupts", ()))

    async def _finish_from_checkpoint(
        self, job: RunJob, row: RunRow, target: Any, thread_id: str
    ) -> str:
        """The run had ended when its worker died: publish its end from the last checkpoint."""
        graph = await self._graph_of(target)
        snapshot = await graph.get_state(thread_id)
        latest = await self.checkpointer.get(thread_id)
        status = str((latest.metadata if latest else {}).get("status") or "completed")
        if getattr(snapshot, "interrupts", ()):
            status = "interrupted"
        if status not in ("completed", "failed", "interrupted", "cancelled"):
            status = "completed"
        values = dict(getattr(snapshot, "values", {}) or {})
        asked = tuple(
            PendingQuestion(i.id, i.node, i.value) for i in getattr(snapshot, "interrupts", ())
        )
        outcome = RunOutcome(
            run_id=job.run_id,
            status=status,  # type: ignore[arg-type]
            output=values if status in ("completed", "interrupted") else None,
            interrupts=asked if status == "interrupted" else (),
            thread_id=thread_id,
        )
        ids = self._ids(job, getattr(graph, "name", job.target_name), _version(graph))
        await self._end_with(job, row, ids, outcome, None)
        return status


def _start_input(job: RunJob) -> Mapping[str, Any] | None:
    """A new run's input: a job without input (and no answer) starts with an empty one."""
    if job.resume is not None:
        return None
    return dict(job.input) if job.input is not None else {}


def _version(graph: Any) -> str:
    return str(getattr(graph, "version", "") or "")
