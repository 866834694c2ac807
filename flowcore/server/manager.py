"""``RunManager``: starts runs through the executor port, keeps their events, ends them cleanly.

Every run belongs to the user whose key started it; any other user asking
for it gets the same answer as for an id that does not exist. A run's
AiEvents go to an in-memory log (renumbered 0, 1, 2, ... across a restart)
that any number of readers follow from the start; the log is stored when
the run ends, so it can be replayed later.

Stopping the server (:meth:`RunManager.shutdown`) cancels the runs still
going: the engine has saved every finished node's writes, so each run on a
thread is marked ``suspended`` and :meth:`RunManager.recover`, called when
the server starts again, continues it from its thread under the same run id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from flowcore.errors import ResumeError
from flowcore.interrupts import Resume
from flowcore.pipeline.runner import check_run_inputs
from flowcore.port.events import AiEvent, json_safe
from flowcore.port.protocol import UNSET, Caller, RunHandle, RunOptions, RunOutcome, RunRequest
from flowcore.server.errors import BadRequestError, ConflictError, NotFoundError, UnavailableError
from flowcore.server.executor import ServerExecutor
from flowcore.server.pipeline_store import PipelineStore
from flowcore.server.presence import Presence
from flowcore.server.run_store import ACTIVE, RunRow, RunStore, ended
from flowcore.server.targets import ResolvedTarget, resolve_target

__all__ = ["LiveRun", "RunManager"]

log = logging.getLogger("flowcore.server")


@dataclass(slots=True)
class LiveRun:
    """A run going on in this process: its record, handle and event log."""

    row: RunRow
    resolved: ResolvedTarget
    handle: RunHandle
    log: list[AiEvent] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    finished: bool = False
    suspending: bool = False
    task: asyncio.Task[None] | None = None

    def append(self, event: AiEvent) -> None:
        # Numbered by the log, so a run continued after a restart keeps counting up.
        self.log.append(replace(event, seq=len(self.log)))
        self._wake()

    def finish(self) -> None:
        self.finished = True
        self._wake()

    def _wake(self) -> None:
        waiting, self.changed = self.changed, asyncio.Event()
        waiting.set()


def _interrupts(outcome: RunOutcome) -> tuple[dict[str, Any], ...]:
    return tuple(
        {"interrupt_id": q.interrupt_id, "node": q.node, "value": json_safe(q.value)}
        for q in outcome.interrupts
    )


class RunManager:
    """The server's runs: start, follow, cancel, resume, stop and recover.

    Example:
        >>> # manager = RunManager(executor=executor, store=RunStore(db))
        >>> # row = await manager.start("ada", {"graph": "chat"}, {"question": "hi"})
        >>> # async for event in manager.follow("ada", row.run_id): ...
    """

    def __init__(
        self,
        *,
        executor: ServerExecutor,
        store: RunStore,
        pipelines: PipelineStore | None = None,
        shutdown_grace: float = 10.0,
        beat_every: float = 5.0,
        stale_after: float = 30.0,
        poll_every: float = 0.25,
        tick: float = 1.0,
    ) -> None:
        self.executor = executor
        self.store = store
        self.pipelines = pipelines
        self.shutdown_grace = shutdown_grace
        self.stale_after = stale_after
        self.poll_every = poll_every
        self.presence = Presence(
            store,
            cancel=self._cancel_requested,
            beat_every=beat_every,
            stale_after=stale_after,
            tick=tick,
        )
        self.stopping = False
        self._live: dict[str, LiveRun] = {}
        self._recovering: set[str] = set()  # claimed here, not yet live
        self._stopping_task: asyncio.Future[None] | None = None

    # ------------------------------------------------------------- reading
    def live(self, run_id: str) -> LiveRun | None:
        """The live run ``run_id`` (None once it has ended).

        Example:
            >>> # manager.live("r1") is None
        """
        return self._live.get(run_id)

    async def get(self, user_id: str, run_id: str) -> RunRow:
        """The run ``run_id`` of ``user_id``; :class:`NotFoundError` for anyone else's.

        Example:
            >>> # row = await manager.get("ada", "r1")
        """
        live = self._live.get(run_id)
        row = live.row if live is not None else await self.store.get(run_id)
        if row is None or row.user_id != user_id:
            raise NotFoundError(
                f"no run {run_id!r} for this API key's user; GET /api/runs lists your runs"
            )
        return row

    async def events(self, user_id: str, run_id: str) -> list[AiEvent]:
        """The events of the run so far (a copy).

        Example:
            >>> # log = await manager.events("ada", "r1")
        """
        await self.get(user_id, run_id)
        live = self._live.get(run_id)
        return list(live.log) if live is not None else await self.store.events(run_id)

    async def follow(self, user_id: str, run_id: str) -> AsyncIterator[AiEvent]:
        """The run's events from the first: what happened so far, then live, ending after ``done``.

        A run another server process is running (same database) is followed
        from the database: its events arrive once it ends there.

        Example:
            >>> # async for event in manager.follow("ada", "r1"): ...
        """
        await self.get(user_id, run_id)
        if run_id not in self._live:
            # Running on another server process: its events are stored when it ends.
            await self._wait_elsewhere(run_id)
        live = self._live.get(run_id)
        if live is None:
            for event in await self.store.events(run_id):
                yield event
            return
        index = 0
        while True:
            while index < len(live.log):
                event = live.log[index]
                index += 1
                yield event
                if event.type == "done":
                    return
            if live.finished:
                return
            await live.changed.wait()

    async def _wait_elsewhere(self, run_id: str) -> None:
        """Wait while another live server process runs ``run_id`` (or until it runs here)."""
        while not self.stopping and run_id not in self._live:
            if run_id in self._recovering:
                await asyncio.sleep(self.poll_every)
                continue
            row = await self.store.get(run_id)
            if row is None or row.status not in ACTIVE or row.server_id == self.store.server_id:
                return
            if not await self.store.alive(row.server_id, stale_after=self.stale_after):
                return  # nobody runs it: what was stored is all there is, for now
            await asyncio.sleep(self.poll_every)

    async def wait(self, user_id: str, run_id: str) -> RunRow:
        """Wait until the run has ended (or been suspended); its final record.

        The wait is shielded: a caller that goes away does not stop the run.

        Example:
            >>> # row = await manager.wait("ada", "r1")
        """
        await self.get(user_id, run_id)
        live = self._live.get(run_id)
        if live is not None and live.task is not None:
            await asyncio.shield(live.task)
        return await self.get(user_id, run_id)

    async def resolve(self, row: RunRow) -> ResolvedTarget:
        """The target of a recorded run, resolved again (for its graph, state, inputs).

        Example:
            >>> # resolved = await manager.resolve(row)
        """
        live = self._live.get(row.run_id)
        if live is not None:
            return live.resolved
        return await resolve_target(
            row.target,
            graphs=self.executor.graphs,
            pipelines=self.pipelines,
            runner=self.executor.runner,
        )

    # ------------------------------------------------------------- running
    async def start(
        self,
        user_id: str,
        target: Mapping[str, Any],
        run_input: Mapping[str, Any] | None,
        *,
        thread_id: str | None = None,
    ) -> RunRow:
        """Start a run of ``target`` for ``user_id``; returns its record at once.

        Raises:
            TargetNotFoundError: an unknown graph or pipeline id.
            PipelineError: a pipeline or plan document that does not validate.
            NotFoundError: ``thread_id`` is another user's thread.
            ConflictError: the thread has a run going, or the target keeps no checkpoints.

        Example:
            >>> # row = await manager.start("ada", {"graph": "chat"}, {"question": "hi"})
        """
        self._check_open()
        resolved = await resolve_target(
            target,
            graphs=self.executor.graphs,
            pipelines=self.pipelines,
            runner=self.executor.runner,
        )
        given = dict(run_input or {})
        if resolved.pipeline is not None and thread_id is None:
            problems = check_run_inputs(resolved.pipeline, given)
            if problems:
                raise BadRequestError(
                    f"the input does not fit pipeline {resolved.pipeline.id!r}: "
                    + "; ".join(problems),
                    problems=problems,
                )
        if thread_id is not None:
            if not resolved.checkpointed:
                raise ConflictError(
                    f"{resolved.name!r} keeps no checkpoints, so it cannot run on a thread; "
                    "leave thread_id out"
                )
            await self._check_thread(user_id, thread_id)
        elif resolved.checkpointed:
            thread_id = f"thread-{uuid.uuid4().hex[:16]}"
        return await self._launch(
            user_id, target, resolved, given, thread_id, resume=UNSET, continues=None
        )

    async def resume(
        self, user_id: str, run_id: str, value: Any, interrupt_id: str | None = None
    ) -> RunRow:
        """Answer the question a paused run waits on; returns the run that continues its thread.

        Example:
            >>> # follow_up = await manager.resume("ada", "r1", {"approved": True})
        """
        self._check_open()
        row = await self.get(user_id, run_id)
        if row.status != "interrupted" or row.thread_id is None:
            raise ConflictError(
                f"run {run_id!r} is {row.status}, not waiting for an answer; only an "
                "interrupted run can be resumed"
            )
        if row.continued_by is not None:
            raise ConflictError(
                f"run {run_id!r} was already resumed by run {row.continued_by!r}; "
                f"GET /api/runs/{row.continued_by} shows it"
            )
        ids = [str(q.get("interrupt_id")) for q in row.interrupts]
        if interrupt_id is not None and interrupt_id not in ids:
            raise BadRequestError(
                f"run {run_id!r} waits on interrupt(s) {', '.join(ids) or 'none'}, "
                f"not {interrupt_id!r}; GET /api/runs/{run_id} lists them"
            )
        await self._check_thread(user_id, row.thread_id)
        answer = Resume(by_id={interrupt_id: value}) if interrupt_id else Resume(value)
        resolved = await self.resolve(row)
        follow_up = await self._launch(
            user_id,
            row.target,
            resolved,
            None,
            row.thread_id,
            resume=answer,
            continues=row.run_id,
            stored_resume={"value": json_safe(value), "interrupt_id": interrupt_id},
        )
        linked = replace(row, continued_by=follow_up.run_id)
        await self.store.update(linked)
        return follow_up

    async def cancel(self, user_id: str, run_id: str) -> RunRow:
        """Stop a running run; it ends ``cancelled`` (with its ``done`` event).

        A run going on another server process (same database) is asked to
        stop through the database; that process cancels it within a
        ``tick`` of its :class:`~flowcore.server.presence.Presence`.

        Example:
            >>> # await manager.cancel("ada", "r1")
        """
        row = await self.get(user_id, run_id)
        live = self._live.get(run_id)
        if live is None:
            # Going on another server process: it sees the request on its next tick.
            if row.status in ("queued", "running") and await self.store.request_cancel(run_id):
                return row
            raise ConflictError(f"run {run_id!r} already ended ({row.status}); nothing to cancel")
        live.handle.cancel()
        return live.row

    def _check_open(self) -> None:
        if self.stopping:
            raise UnavailableError("the server is stopping and starts no new runs; retry later")

    async def _check_thread(self, user_id: str, thread_id: str) -> None:
        owner = await self.store.thread_owner(thread_id)
        if owner is not None and owner != user_id:
            raise NotFoundError(f"no thread {thread_id!r} for this API key's user")
        busy = [r.row for r in self._live.values() if r.row.thread_id == thread_id]
        if not busy:
            # ... or on another live server process of the same database.
            for row in await self.store.list(thread_id=thread_id, limit=20):
                if (
                    row.status in ("queued", "running")
                    and row.server_id != self.store.server_id
                    and await self.store.alive(row.server_id, stale_after=self.stale_after)
                ):
                    busy.append(row)
        if busy:
            raise ConflictError(
                f"thread {thread_id!r} has run {busy[0].run_id!r} going; wait for it to end "
                "or cancel it first"
            )

    async def _launch(
        self,
        user_id: str,
        target: Mapping[str, Any],
        resolved: ResolvedTarget,
        run_input: Mapping[str, Any] | None,
        thread_id: str | None,
        *,
        resume: Any,
        continues: str | None,
        stored_resume: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        log: list[AiEvent] | None = None,
        row: RunRow | None = None,
    ) -> RunRow:
        run_id = run_id or uuid.uuid4().hex
        if row is None:
            row = RunRow(
                run_id=run_id,
                user_id=user_id,
                thread_id=thread_id,
                target=dict(target),
                target_name=resolved.name,
                input=None if run_input is None else json_safe(dict(run_input)),
                status="running",
                started_at=time.time(),
                continues=continues,
                resume=stored_resume,
            )
            await self.store.insert(row)
        request = RunRequest(
            resolved.target,
            None if resume is not UNSET else run_input,
            Caller(request_id=run_id, trace_id=run_id, user_id=user_id),
            RunOptions(thread_id=thread_id, resume=resume),
        )
        handle = self.executor.run(request, run_id=run_id)
        live = LiveRun(row=row, resolved=resolved, handle=handle, log=log or [])
        self._live[run_id] = live
        live.task = asyncio.get_running_loop().create_task(
            self._pump(live), name=f"flowcore-serve-{run_id}"
        )
        return row

    async def _pump(self, live: LiveRun) -> None:
        try:
            async for event in live.handle:
                if event.type == "usage_report":
                    live.row = replace(
                        live.row,
                        input_tokens=live.row.input_tokens + int(getattr(event, "input_tokens", 0)),
                        output_tokens=live.row.output_tokens
                        + int(getattr(event, "output_tokens", 0)),
                    )
                elif event.type == "run_start" and live.row.thread_id is None:
                    live.row = replace(live.row, thread_id=getattr(event, "thread_id", None))
                elif event.type == "done":
                    try:
                        await self._end(live, await live.handle.final)
                    except Exception as exc:
                        # The database refused the record: readers still get their done.
                        log.error(
                            "run %s ended but could not be recorded: %s",
                            live.row.run_id,
                            type(exc).__name__,
                        )
                        live.suspending = False
                    if live.suspending:
                        break  # resumes on restart: its stream has not ended
                    live.append(event)
                    with contextlib.suppress(Exception):  # logged above if the store is down
                        await self.store.save_events(live.row.run_id, live.log[-1:])
                    continue
                live.append(event)
        finally:
            live.finish()
            self._live.pop(live.row.run_id, None)

    async def _end(self, live: LiveRun, outcome: RunOutcome) -> None:
        """Record how the run ended (before its ``done`` event is visible to readers)."""
        # Tokens were counted from the usage events (across a restart too).
        if live.suspending and outcome.status == "cancelled":
            live.row = replace(live.row, status="suspended")
        else:
            live.suspending = False
            output = json_safe(dict(outcome.output)) if outcome.output is not None else None
            live.row = ended(
                live.row,
                outcome.status,
                error=outcome.error,
                interrupts=_interrupts(outcome),
                output=output,
                thread_id=outcome.thread_id or live.row.thread_id,
            )
        await self.store.update(live.row)
        # Everything up to done; done itself is stored right after it is appended.
        await self.store.save_events(live.row.run_id, live.log)

    # ---------------------------------------------------------- stop, start
    async def shutdown(self) -> None:
        """Stop taking runs and stop the running ones at their last checkpoint.

        A run on a thread is marked ``suspended`` (and continued by
        :meth:`recover` on the next start); one without a thread ends
        ``cancelled``. Waits up to ``shutdown_grace`` seconds.

        Example:
            >>> # await manager.shutdown()
        """
        if self._stopping_task is None:
            self.stopping = True
            self._stopping_task = asyncio.ensure_future(self._stop_runs())
        # shield: the lifespan exit and the signal handler may both wait for this stop.
        await asyncio.shield(self._stopping_task)

    async def begin(self, *, recover: bool = True) -> list[str]:
        """Say this process is alive and, with ``recover``, continue orphaned runs.

        Starts the :class:`~flowcore.server.presence.Presence` (the beat, and
        cancel requests from other processes); with ``recover`` its sweeps
        continue orphaned runs later too. Returns the runs continued now.

        Example:
            >>> # resumed = await manager.begin()  # in the app's lifespan
        """
        await self.store.beat()  # before recovering: the runs it claims must look alive
        resumed = await self.recover() if recover else []
        self.presence.sweep = self.recover if recover else None
        await self.presence.start()
        return resumed

    def _cancel_requested(self, run_id: str) -> None:
        live = self._live.get(run_id)
        if live is not None:
            live.handle.cancel()

    async def _stop_runs(self) -> None:
        lives = list(self._live.values())
        for live in lives:
            live.suspending = live.row.thread_id is not None and live.resolved.checkpointed
            live.handle.cancel()
        tasks = [live.task for live in lives if live.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=self.shutdown_grace)
        for task in tasks:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        # Only now: the suspended runs are recorded, so another server may take them over.
        await self.presence.stop()

    async def recover(self) -> list[str]:
        """Continue the runs a stopped server process left unfinished; returns their ids.

        Only runs no live server holds are taken, each by one conditional
        update (:meth:`RunStore.claim`), so of several servers starting at
        once each run is continued by one. A run that cannot continue (no
        thread, its graph no longer registered) is marked ``failed`` with the
        reason.

        Example:
            >>> # resumed = await manager.recover()
        """
        resumed: list[str] = []
        for found in await self.store.unfinished(stale_after=self.stale_after):
            if found.run_id in self._live or self.stopping:
                continue
            # Marked before the claim: a reader of this run waits until it is live here.
            self._recovering.add(found.run_id)
            try:
                row = await self.store.claim(found)
                if row is not None and await self._continue(row):
                    resumed.append(row.run_id)
            finally:
                self._recovering.discard(found.run_id)
        return resumed

    async def _continue(self, row: RunRow) -> bool:
        """Launch a claimed run again from its thread; False (and marked failed) if it cannot."""
        try:
            resolved = await self.resolve(row)
            state = None
            if row.thread_id is not None and resolved.checkpointed:
                with contextlib.suppress(ResumeError):  # no checkpoint yet: state None
                    state = await resolved.state(self.executor.runner, row.thread_id)
        except Exception as exc:
            # One run that cannot be read again must not keep the server from starting.
            await self.store.update(
                ended(row, "failed", error=f"the server restarted and cannot resume: {exc}")
            )
            return False
        if row.thread_id is None or not resolved.checkpointed:
            await self.store.update(
                ended(
                    row,
                    "failed",
                    error="the server stopped during the run, which had no thread to resume",
                )
            )
            return False
        log = await self.store.events(row.run_id)
        resume: Any = UNSET
        # Stopped before its first checkpoint: start it again with its own input.
        run_input = dict(row.input or {}) if state is None and row.resume is None else None
        if row.resume is not None and state is not None and state.waiting:
            interrupt_id = row.resume.get("interrupt_id")
            value = row.resume.get("value")
            resume = Resume(by_id={interrupt_id: value}) if interrupt_id else Resume(value)
        await self._launch(
            row.user_id,
            row.target,
            resolved,
            run_input,
            row.thread_id,
            resume=resume,
            continues=row.continues,
            run_id=row.run_id,
            log=log,
            row=row,
        )
        return True
