"""``QueueExecutor``: the executor port over the run queue (procrastinate on Postgres).

``run(request)`` returns a :class:`QueueRunHandle` at once; its task records
the run, defers a ``flowcore.run`` job (``lock=thread_id``, so a thread's
runs never overlap) and then follows the run: it wakes on ``NOTIFY
flowcore_queue_events`` (or its poll) and reads the run's stored events
after the last ``seq`` it has, so it never misses one, also when it comes
late or its connection dropped. ``final`` is read from the run's row, which
the worker writes in the same transaction as the ``done`` event.

A thread that already has a queued or running run is handled by the
request's multitask strategy (LangGraph's four):

``reject``
    the new run is refused: :meth:`QueueExecutor.submit` raises
    :class:`~flowcore.queue.errors.ThreadBusyRejectedError` (through
    ``run()``, the run ends ``failed`` with that error).
``enqueue`` (default)
    the new run waits and starts when the current one has ended.
``interrupt``
    the current run stops at its next step boundary (when none of its
    nodes is running), keeping what it saved; the new run continues the
    thread from there.
``rollback``
    the current run is stopped and every checkpoint it wrote is deleted;
    the new run starts from the thread as it was before it.

Example:
    >>> # async with QueueExecutor(os.environ["FLOWCORE_DATABASE_URL"]) as executor:
    >>> #     handle = executor.run(RunRequest("chat", {"q": "hi"}, Caller("req-1", "tr-1")))
    >>> #     outcome = await handle.final
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable
from types import TracebackType
from typing import Any

from flowcore.graph.compiled import CompiledGraph
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.plan import TaskPlan
from flowcore.port.errors import HandleConsumedError, InvalidTargetError
from flowcore.port.events import (
    AiEvent,
    DoneAiEvent,
    ErrorAiEvent,
    RunStartAiEvent,
    event_from_dict,
    event_to_dict,
    json_safe,
)
from flowcore.port.protocol import UNSET, RunOutcome, RunRequest
from flowcore.queue.app import build_app, outcome_from_json, outcome_to_json
from flowcore.queue.errors import QueueConfigError, QueueStoreError, ThreadBusyRejectedError
from flowcore.queue.jobs import TASK_NAME, MultitaskStrategy, RunJob, check_strategy
from flowcore.queue.tables import EVENTS_CHANNEL, QueueTables, RunRow
from flowcore.queue.worker import check_queue_url

__all__ = ["QueueExecutor", "QueueRunHandle"]

_log = logging.getLogger(__name__)


def job_for(request: RunRequest, run_id: str, strategy: MultitaskStrategy) -> RunJob:
    """The :class:`RunJob` a request becomes (targets by name or as a pipeline document).

    Example:
        >>> from flowcore.port import Caller
        >>> job_for(RunRequest("chat", None, Caller("r", "t")), "r1", "enqueue").target
        {'graph': 'chat'}
    """
    target = request.target
    if isinstance(target, str):
        ref: dict[str, Any] = {"graph": target}
    elif isinstance(target, Pipeline | TaskPlan):
        ref = {"pipeline": target.model_dump(mode="json", by_alias=True)}
    elif isinstance(target, CompiledGraph):
        ref = {"graph": target.name}  # the workers must have registered it under its name
    else:
        raise InvalidTargetError(
            f"cannot queue a {type(target).__name__}: a queued run's target is the name of a "
            "graph the workers registered (flowcore worker --graphs module:attr), or a "
            "Pipeline / TaskPlan, which travels with the job"
        )
    options = request.options
    caller = request.caller
    return RunJob(
        run_id=run_id,
        target=ref,
        input=None if request.input is None else json_safe(dict(request.input)),
        resume=None if options.resume is UNSET else {"value": json_safe(options.resume)},
        thread_id=options.thread_id,
        user_id=caller.user_id,
        request_id=caller.request_id,
        trace_id=caller.trace_id,
        billing_account_id=caller.billing_account_id,
        recursion_limit=options.recursion_limit,
        budgets=None if options.budgets is None else json_safe(dict(options.budgets)),
        strategy=strategy,
    )


class QueueRunHandle:
    """One queued run: its events as the worker stores them, its outcome, ``cancel()``.

    Example:
        >>> # async for event in handle: ...
        >>> # outcome = await handle.final
    """

    def __init__(self, executor: QueueExecutor, run_id: str, request: RunRequest | None) -> None:
        loop = asyncio.get_running_loop()
        self.run_id = run_id
        self.request = request
        self._executor = executor
        self._queue: asyncio.Queue[AiEvent] = asyncio.Queue()
        self._final: asyncio.Future[RunOutcome] = loop.create_future()
        self._submitted: asyncio.Future[None] = loop.create_future()
        self._iterated = False
        self._cancel_requested = False
        self._task: asyncio.Task[None] | None = None

    def _start(self, strategy: MultitaskStrategy | None) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._drive(strategy), name=f"flowcore-queue-run-{self.run_id}"
        )

    def __aiter__(self) -> AsyncIterator[AiEvent]:
        """The run's AiEvents in ``seq`` order, ending after ``done``; iterate once only."""
        if self._iterated:
            raise HandleConsumedError(
                f"the events of run {self.run_id} are already being read; give several "
                "readers a RunEventRelay(handle), or executor.attach(run_id) each"
            )
        self._iterated = True
        return self._events()

    async def _events(self) -> AsyncIterator[AiEvent]:
        while True:
            event = await self._queue.get()
            yield event
            if event.type == "done":
                return

    @property
    def final(self) -> Awaitable[RunOutcome]:
        """Resolves once, to the run's :class:`RunOutcome`.

        Example:
            >>> # outcome = await handle.final
        """
        return asyncio.shield(self._final)

    @property
    def submitted(self) -> Awaitable[None]:
        """Resolves when the run is in the queue (raises if it was refused).

        Example:
            >>> # await handle.submitted
        """
        return asyncio.shield(self._submitted)

    def cancel(self) -> None:
        """Stop the run wherever it is (queued or running); it ends ``cancelled``.

        Example:
            >>> # handle.cancel()
        """
        if self._final.done() or self._cancel_requested:
            return
        self._cancel_requested = True
        self._executor._spawn(self._cancel())

    async def _cancel(self) -> None:
        try:
            await self.submitted
        except Exception:
            return  # refused: it has ended already
        await self._executor._stop_run(self.run_id, "cancel", None)

    def close(self) -> None:
        """Stop following the run here (the run itself goes on); ``cancel()`` stops it.

        Example:
            >>> # handle.close()  # a reader went away
        """
        if self._task is not None:
            self._task.cancel()
        self._executor._handles.discard(self)

    async def wait_closed(self) -> None:
        """Wait until the handle's task has finished."""
        if self._task is not None:
            await asyncio.wait({self._task})

    # -------------------------------------------------------------- driving
    async def _drive(self, strategy: MultitaskStrategy | None) -> None:
        try:
            if self.request is not None:
                await self._executor._submit(self.request, self.run_id, strategy)
            if not self._submitted.done():
                self._submitted.set_result(None)
            await self._follow()
        except asyncio.CancelledError:
            self._refused(asyncio.CancelledError(), "cancelled")
            raise
        except Exception as exc:
            if not self._submitted.done():
                self._submitted.set_exception(exc)
                self._submitted.exception()  # retrieved: the run ends failed instead
            self._refused(exc, "failed")

    def _refused(self, exc: BaseException, status: str) -> None:
        """End a run that never got into the queue (or could not be followed)."""
        if self._final.done():
            return
        request = self.request
        ids: dict[str, Any] = {
            "run_id": self.run_id,
            "graph_name": _name(request.target) if request else "",
            "graph_version": "",
            "request_id": request.caller.request_id if request else "",
            "trace_id": request.caller.trace_id if request else "",
        }
        error = f"{type(exc).__name__}: {exc}"
        thread = request.options.thread_id if request else None
        events: list[AiEvent] = [RunStartAiEvent(**ids, seq=0, thread_id=thread)]
        if status == "failed":
            events.append(
                ErrorAiEvent(**ids, seq=1, error_type=type(exc).__name__, message=str(exc))
            )
        events.append(DoneAiEvent(**ids, seq=len(events), status=status))  # type: ignore[arg-type]
        self._final.set_result(
            RunOutcome(
                run_id=self.run_id,
                status=status,  # type: ignore[arg-type]
                error=error if status == "failed" else None,
                thread_id=thread,
            )
        )
        for event in events:
            self._queue.put_nowait(event)

    async def _follow(self) -> None:
        tables = self._executor.tables
        wake = self._executor._subscribe(self.run_id)
        last = -1
        try:
            while True:
                wake.clear()
                try:
                    rows = await tables.events_after(self.run_id, last)
                    ending = rows and rows[-1]["type"] == "done"
                    row = await tables.get_run(self.run_id) if ending else None
                except QueueStoreError:
                    # The database is away (a restart): the run goes on in its worker.
                    await asyncio.sleep(self._executor.poll_interval)
                    continue
                for data in rows:
                    last = int(data["seq"])
                    event = event_from_dict(data)
                    if event.type == "done":
                        self._final_from(row, event)
                    self._queue.put_nowait(event)
                    if event.type == "done":
                        return
                if rows:
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), self._executor.poll_interval)
        finally:
            self._executor._unsubscribe(self.run_id, wake)

    def _final_from(self, row: RunRow | None, done: AiEvent) -> None:
        if self._final.done():
            return
        if row is not None and row.outcome is not None:
            self._final.set_result(outcome_from_json(row.outcome))
        else:  # cannot happen: the outcome is stored with done; still resolve
            status = getattr(done, "status", "failed")
            self._final.set_result(RunOutcome(run_id=self.run_id, status=status))  # type: ignore[arg-type]


def _name(target: Any) -> str:
    if isinstance(target, str):
        return target
    if isinstance(target, Pipeline):
        return target.id
    if isinstance(target, TaskPlan):
        return target.plan_id
    return str(getattr(target, "name", type(target).__name__))


class QueueExecutor:
    """Runs requests on queue workers: a ``GraphExecutorPort`` over Postgres.

    Args:
        url: ``postgresql://...``: the database the workers use.
        strategy: The default multitask strategy (``enqueue``); ``submit``
            and ``run`` take another per call.
        poll_interval: Seconds between reads of a run's events when no
            notification came (a safety net under LISTEN/NOTIFY).

    Example:
        >>> # async with QueueExecutor(url) as executor:
        >>> #     handle = await executor.submit(request, strategy="reject")
    """

    def __init__(
        self,
        url: str,
        *,
        strategy: MultitaskStrategy = "enqueue",
        poll_interval: float = 0.5,
    ) -> None:
        self.url = check_queue_url(url, "QueueExecutor")
        self.strategy = check_strategy(strategy)
        self.poll_interval = poll_interval
        self._tables: QueueTables | None = None
        self._app: Any = None
        self._listener: asyncio.Task[None] | None = None
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._handles: set[QueueRunHandle] = set()
        self._background: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------ lifecycle
    async def open(self) -> QueueExecutor:
        """Connect (installing the queue's tables if needed); ``async with`` does this.

        Example:
            >>> # executor = await QueueExecutor(url).open()
        """
        if self._tables is not None:
            return self
        tables = QueueTables(self.url)
        await tables.__aenter__()
        app = build_app(self.url, max_connections=5)
        try:
            await app.open_async()
        except BaseException:
            await tables.aclose()
            raise
        self._tables, self._app = tables, app
        self._listener = asyncio.get_running_loop().create_task(
            self._listen(), name="flowcore-queue-listener"
        )
        return self

    async def aclose(self) -> None:
        """Stop following runs (the runs go on in the workers) and close the connections.

        Example:
            >>> # await executor.aclose()
        """
        tasks = [h._task for h in self._handles if h._task is not None]
        tasks += list(self._background)
        if self._listener is not None:
            tasks.append(self._listener)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._handles.clear()
        self._listener = None
        app, self._app = self._app, None
        if app is not None:
            await app.close_async()
        tables, self._tables = self._tables, None
        if tables is not None:
            await tables.aclose()

    async def __aenter__(self) -> QueueExecutor:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def tables(self) -> QueueTables:
        """The queue's tables (open)."""
        if self._tables is None:
            raise QueueConfigError(
                "the QueueExecutor is not open; use 'async with QueueExecutor(url) as executor:'"
            )
        return self._tables

    # ------------------------------------------------------------ the port
    def run(
        self,
        request: RunRequest,
        *,
        strategy: MultitaskStrategy | None = None,
        run_id: str | None = None,
    ) -> QueueRunHandle:
        """Queue the run and return its handle at once (see ``GraphExecutorPort.run``).

        A refused run (strategy ``reject``, a target that cannot be queued)
        ends ``failed`` with the reason, like any run that could not start.
        ``run_id`` names the run (default: a new random id), as for
        ``InProcExecutor.run``.

        Example:
            >>> # handle = executor.run(request)
        """
        self.tables  # noqa: B018 - fails at once, naming the fix, when not open
        handle = QueueRunHandle(self, run_id or uuid.uuid4().hex, request)
        self._handles.add(handle)
        handle._start(strategy)
        return handle

    async def submit(
        self, request: RunRequest, *, strategy: MultitaskStrategy | None = None
    ) -> QueueRunHandle:
        """Queue the run; raise :class:`ThreadBusyRejectedError` if ``reject`` refuses it.

        Example:
            >>> # handle = await executor.submit(request, strategy="reject")
        """
        handle = self.run(request, strategy=strategy)
        await handle.submitted
        return handle

    async def enqueue(
        self, request: RunRequest, *, strategy: MultitaskStrategy | None = None
    ) -> str:
        """Queue the run without following it; returns its run id (``attach`` follows it).

        Raises :class:`ThreadBusyRejectedError` if strategy ``reject`` refuses it.

        Example:
            >>> # run_id = await executor.enqueue(request)
        """
        run_id = uuid.uuid4().hex
        await self._submit(request, run_id, strategy)
        return run_id

    def attach(self, run_id: str) -> QueueRunHandle:
        """Follow a run queued earlier (by any process): all its events from the first.

        Example:
            >>> # handle = executor.attach(run_id)
        """
        self.tables  # noqa: B018
        handle = QueueRunHandle(self, run_id, None)
        self._handles.add(handle)
        handle._start(None)
        return handle

    # ------------------------------------------------------------ internals
    async def _submit(
        self, request: RunRequest, run_id: str, strategy: MultitaskStrategy | None
    ) -> None:
        chosen = check_strategy(strategy or self.strategy)
        job = job_for(request, run_id, chosen)
        tables = self.tables
        thread_id = job.thread_id
        to_stop: list[RunRow] = []
        pool = tables._require_open()
        async with tables._errors("queue a run"), pool.connection() as conn, conn.transaction():
            if thread_id is not None:
                # One submitter at a time per thread decides against its active runs.
                await conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"flowcore-thread:{thread_id}",)
                )
                active = await tables.active_runs(conn, thread_id)
                if active and chosen == "reject":
                    raise ThreadBusyRejectedError(thread_id, active[0].run_id)
                if chosen in ("interrupt", "rollback"):
                    to_stop = active
            await tables.insert_run(
                conn, run_id=run_id, thread_id=thread_id, target=job.target_name, strategy=chosen
            )
            # The job goes in with the run's row, in one transaction: never one without the other.
            deferrer = self._app.configure_task(TASK_NAME, lock=thread_id, connection=conn)
            job_id = await deferrer.defer_async(job=job.to_json())
            await conn.execute(
                "UPDATE flowcore_queue_runs SET job_id = %s WHERE run_id = %s", (job_id, run_id)
            )
        for row in to_stop:
            await self._stop_run(row.run_id, chosen, run_id)

    async def _stop_run(self, run_id: str, reason: str, by: str | None) -> None:
        """Stop a run: a queued one ends here, a running one is aborted in its worker."""
        tables = self.tables
        row = await tables.request_stop(run_id, reason, by)
        if row is None or not row.active:
            return
        manager = self._app.job_manager
        if row.job_id is not None and await manager.cancel_job_by_id_async(row.job_id):
            # Still waiting in the queue: it never runs, so its end is written here.
            await self._end_queued(row, reason, by)
            return
        if row.job_id is not None:
            await manager.cancel_job_by_id_async(row.job_id, abort=True)

    async def _end_queued(self, row: RunRow, reason: str, by: str | None) -> None:
        ids: dict[str, Any] = {
            "run_id": row.run_id,
            "graph_name": row.target,
            "graph_version": "",
            "request_id": "",
            "trace_id": "",
        }
        note = f"run stopped before it started ({reason}" + (f" by run {by})" if by else ")")
        events: list[AiEvent] = [
            RunStartAiEvent(**ids, seq=0, thread_id=row.thread_id),
            ErrorAiEvent(**ids, seq=1, error_type="RunStopped", message=note),
            DoneAiEvent(**ids, seq=2, status="cancelled"),
        ]
        outcome = RunOutcome(
            run_id=row.run_id, status="cancelled", error=note, thread_id=row.thread_id
        )
        await self.tables.append(
            row.run_id,
            [event_to_dict(e) for e in events],
            outcome=outcome_to_json(outcome),
            only_if_status=("queued",),
        )

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._settled)

    def _settled(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.warning("flowcore queue: a stop request failed: %r", task.exception())

    def _subscribe(self, run_id: str) -> asyncio.Event:
        event = asyncio.Event()
        self._waiters.setdefault(run_id, set()).add(event)
        return event

    def _unsubscribe(self, run_id: str, event: asyncio.Event) -> None:
        waiters = self._waiters.get(run_id)
        if waiters is not None:
            waiters.discard(event)
            if not waiters:
                del self._waiters[run_id]

    async def _listen(self) -> None:
        """Wake the handles of runs whose events were stored; reconnect when the link drops."""
        import psycopg

        backoff = 0.2
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
            except psycopg.Error:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
                continue
            backoff = 0.2
            try:
                await conn.execute(f"LISTEN {EVENTS_CHANNEL}")
                for waiters in list(self._waiters.values()):  # missed while away
                    for event in waiters:
                        event.set()
                async for note in conn.notifies():
                    for event in self._waiters.get(note.payload, ()):
                        event.set()
            except psycopg.Error:
                continue
            finally:
                with contextlib.suppress(Exception):
                    await conn.close()
