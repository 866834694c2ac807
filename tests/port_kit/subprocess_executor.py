"""``SubprocessExecutor``: a second, deliberately different ``GraphExecutorPort``.

Each run happens in its own worker process (:mod:`tests.port_kit.worker`)
that rebuilds the target by its registered kit name, runs it on flowcore's
engine and writes AiEvents as JSON lines. The parent's handle yields each
event as its line arrives (nothing is held back), resolves ``final`` from the
worker's last line, and ``cancel()`` terminates the worker: the handle then
writes the run's one ``done`` (status ``cancelled``) itself. A worker that
dies without finishing its run ends it ``failed``, with an ``error`` event
carrying the exit code and the tail of its stderr. Every process started is
waited for: by the run itself, or by :meth:`SubprocessExecutor.aclose`.

It shares nothing with ``flowcore.port.InProcExecutor`` but the data model
(AiEvents and their JSON form): proof, through the conformance kit, that the
port can be implemented differently and still swapped in.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Mapping
from pathlib import Path
from typing import Any

from flowcore.graph.compiled import CompiledGraph
from flowcore.port.errors import HandleConsumedError
from flowcore.port.events import (
    AiEvent,
    DoneAiEvent,
    ErrorAiEvent,
    RunStartAiEvent,
    event_from_dict,
    json_safe,
)
from flowcore.port.protocol import (
    UNSET,
    PendingQuestion,
    RunOutcome,
    RunRequest,
    UsageTotals,
)

__all__ = ["SubprocessExecutor", "SubprocessRunHandle"]

WORKER = Path(__file__).with_name("worker.py")
_STDERR_TAIL = 2000


def _outcome_from_dict(data: Mapping[str, Any]) -> RunOutcome:
    usage = data.get("usage") or {}
    return RunOutcome(
        run_id=data["run_id"],
        status=data["status"],
        output=data.get("output"),
        error=data.get("error"),
        interrupts=tuple(
            PendingQuestion(q["interrupt_id"], q["node"], q["value"])
            for q in data.get("interrupts") or ()
        ),
        thread_id=data.get("thread_id"),
        usage=UsageTotals(
            input_tokens=usage.get("input_tokens", 0),
            output_tokens=usage.get("output_tokens", 0),
            cost_usd=usage.get("cost_usd"),
        ),
    )


class SubprocessRunHandle:
    """One run in a worker process: events as its lines arrive, ``final``, ``cancel()``."""

    def __init__(self, executor: SubprocessExecutor, request: RunRequest, run_id: str) -> None:
        loop = asyncio.get_running_loop()
        self.run_id = run_id
        self.request = request
        self._executor = executor
        self._queue: asyncio.Queue[AiEvent | None] = asyncio.Queue()
        self._final: asyncio.Future[RunOutcome] = loop.create_future()
        self._iterated = False
        self._cancel_requested = False
        self._proc: asyncio.subprocess.Process | None = None
        self._ready = False
        self._identity = {"graph_name": "", "graph_version": ""}
        self._yielded = 0
        self._started = False
        self._done: DoneAiEvent | None = None
        self._stderr = b""
        self._task = loop.create_task(self._pump(), name=f"subprocess-run-{run_id}")

    # --------------------------------------------------------------- port
    def __aiter__(self) -> AsyncIterator[AiEvent]:
        if self._iterated:
            raise HandleConsumedError(
                f"the events of run {self.run_id} were already iterated; "
                "use a RunEventRelay to give several readers every event"
            )
        self._iterated = True
        return self._events()

    async def _events(self) -> AsyncIterator[AiEvent]:
        while (event := await self._queue.get()) is not None:
            yield event

    @property
    def final(self) -> Awaitable[RunOutcome]:
        """Resolves once, when the worker has ended; awaitable any number of times."""
        return asyncio.shield(self._final)

    def cancel(self) -> None:
        """Terminate the worker; the run ends ``cancelled`` unless it already ended."""
        if self._done is not None or self._cancel_requested:
            return
        self._cancel_requested = True
        # Before "ready" the identity of the graph is unknown: the pump
        # terminates the worker as soon as it has it.
        if self._ready:
            self._terminate()

    @property
    def pid(self) -> int | None:
        """The worker's process id (None until it has been started)."""
        return None if self._proc is None else self._proc.pid

    async def wait_closed(self) -> None:
        """Wait until the worker has exited and every event has been queued."""
        await asyncio.wait({self._task})

    # ------------------------------------------------------------ helpers
    def _terminate(self) -> None:
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()

    def _job(self) -> dict[str, Any]:
        request = self.request
        target = request.target
        name = target.name if isinstance(target, CompiledGraph) else target
        options = request.options
        return {
            "run_id": self.run_id,
            "target": name,
            "input": json_safe(dict(request.input)) if request.input is not None else None,
            "caller": {
                "request_id": request.caller.request_id,
                "trace_id": request.caller.trace_id,
                "user_id": request.caller.user_id,
                "billing_account_id": request.caller.billing_account_id,
            },
            "thread_id": options.thread_id,
            "resume": None if options.resume is UNSET else {"value": json_safe(options.resume)},
            "recursion_limit": options.recursion_limit,
            "checkpoint_path": str(self._executor.checkpoint_path),
        }

    def _own(self, **fields: Any) -> dict[str, Any]:
        """Correlation fields for an event the parent writes itself."""
        seq = self._yielded
        return {
            "run_id": self.run_id,
            **self._identity,
            "request_id": self.request.caller.request_id,
            "trace_id": self.request.caller.trace_id,
            "seq": seq,
            **fields,
        }

    def _emit(self, event: AiEvent) -> None:
        if self._done is not None:
            return  # nothing follows done
        if event.type == "run_start":
            self._started = True
        self._yielded += 1
        if isinstance(event, DoneAiEvent):
            self._done = event
        self._queue.put_nowait(event)

    def _handle_line(self, line: bytes) -> RunOutcome | None:
        message = json.loads(line)
        if "ready" in message:
            self._identity = {
                "graph_name": message["ready"]["graph_name"],
                "graph_version": message["ready"]["graph_version"],
            }
            self._ready = True
            if self._cancel_requested:
                self._terminate()
        elif "event" in message:
            self._emit(event_from_dict(message["event"]))
        elif "final" in message:
            return _outcome_from_dict(message["final"])
        return None

    def _close_run(self, outcome: RunOutcome | None, returncode: int | None) -> RunOutcome:
        """Write done (and what must precede it) if the worker did not; the outcome."""
        if self._done is None:
            if not self._started:
                self._emit(RunStartAiEvent(**self._own(thread_id=self.request.options.thread_id)))
            if self._cancel_requested:
                self._emit(DoneAiEvent(**self._own(status="cancelled")))
            else:
                tail = self._stderr[-_STDERR_TAIL:].decode("utf-8", "replace")
                message = f"worker exited with code {returncode} before the run ended: {tail}"
                self._emit(ErrorAiEvent(**self._own(error_type="WorkerExited", message=message)))
                self._emit(DoneAiEvent(**self._own(status="failed")))
        done = self._done
        assert done is not None
        if outcome is not None and outcome.status == done.status:
            return outcome
        error = None if done.status != "failed" else "WorkerExited: the worker sent no outcome"
        return RunOutcome(
            run_id=self.run_id,
            status=done.status,
            error=error,
            thread_id=self.request.options.thread_id,
        )

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(4096):
            self._stderr = (self._stderr + chunk)[-_STDERR_TAIL:]

    async def _pump(self) -> None:
        outcome: RunOutcome | None = None
        returncode: int | None = None
        try:
            proc = await asyncio.create_subprocess_exec(
                self._executor.python,
                str(WORKER),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._executor.env,
                limit=2**24,
            )
            self._proc = proc
            assert proc.stdin is not None
            assert proc.stdout is not None
            assert proc.stderr is not None
            stderr_task = asyncio.create_task(self._read_stderr(proc.stderr))
            try:
                proc.stdin.write(json.dumps(self._job()).encode() + b"\n")
                with contextlib.suppress(ConnectionError):
                    await proc.stdin.drain()
                proc.stdin.close()
                while line := await proc.stdout.readline():
                    outcome = self._handle_line(line) or outcome
                returncode = await proc.wait()
            finally:
                if proc.returncode is None:  # we are being cancelled: never leave it behind
                    proc.kill()
                    await asyncio.shield(proc.wait())
                await asyncio.shield(stderr_task)
        except Exception as exc:
            self._stderr += f"\n{type(exc).__name__}: {exc}".encode()
        finally:
            final = self._close_run(outcome, returncode)
            self._queue.put_nowait(None)
            if not self._final.done():
                self._final.set_result(final)
            self._executor._forget(self)


class SubprocessExecutor:
    """Runs each request in a fresh worker process; targets are kit graph names.

    ``target`` may be a registered name (``"kit.simple"``) or a compiled kit
    graph (its name is sent). ``checkpoint_path`` is the SQLite file every
    worker keeps threads in, so a resume may run in a new worker.

    Example:
        >>> # executor = SubprocessExecutor(checkpoint_path=tmp_path / "threads.sqlite")
        >>> # handle = executor.run(RunRequest("kit.simple", {...}, caller))
    """

    def __init__(
        self, *, checkpoint_path: str | os.PathLike[str], python: str = sys.executable
    ) -> None:
        self.checkpoint_path = Path(checkpoint_path)
        self.python = python
        repo = str(WORKER.parents[2])
        path = os.environ.get("PYTHONPATH")
        self.env = dict(os.environ, PYTHONPATH=repo if not path else f"{repo}{os.pathsep}{path}")
        self._live: set[SubprocessRunHandle] = set()

    def run(self, request: RunRequest) -> SubprocessRunHandle:
        """Start a worker for ``request`` and return its handle at once."""
        handle = SubprocessRunHandle(self, request, uuid.uuid4().hex)
        self._live.add(handle)
        return handle

    def _forget(self, handle: SubprocessRunHandle) -> None:
        self._live.discard(handle)

    async def aclose(self) -> None:
        """Cancel every run still going and wait until each worker has exited."""
        live = list(self._live)
        for handle in live:
            handle.cancel()
        for handle in live:
            await handle.wait_closed()
