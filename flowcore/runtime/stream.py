"""The events of one run as an async iterator, with its final result: one class for both kinds.

A run is started as a task on first use; the planner-specific part (what
the task does, and the result a cancelled run left behind) is a subclass's
:meth:`EventStream._run` and :meth:`EventStream._left_result`. Native
:class:`~flowcore.graph.compiled.RunStream` and compat's
``CompatRunStream`` are the two subclasses.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from flowcore.events import DoneEvent, Event

if TYPE_CHECKING:
    # Only named in annotations; importing it would load flowcore.interrupts,
    # which itself needs the runtime (flowcore.runtime.answers).
    from flowcore.result import RunResult

__all__ = ["EventStream"]

_END_OF_STREAM: Any = object()


class EventStream:
    """The events of one run, as an async iterator, plus its final result.

    The run starts on the first ``__anext__`` (or ``__aenter__``). ``cancel()``
    or leaving ``async with`` early cancels in-flight nodes; the stream still
    ends with a ``done`` event whose status is ``cancelled``.

    Example:
        >>> # async with compiled.stream(inp) as events:
        >>> #     async for ev in events: ...
        >>> #     result = await events.result()
    """

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._task: asyncio.Task[RunResult] | None = None
        self._finished = False
        self._cancel_requested = False

    def _emit(self, event: Event) -> None:
        """Queue ``event`` for the reader (what a run is given to report through)."""
        self._queue.put_nowait(event)

    async def _run(self) -> RunResult:
        """Run to the end and return the result (the subclass's run)."""
        raise NotImplementedError

    def _left_result(self) -> RunResult | None:
        """The result a cancelled run recorded before it stopped, if any."""
        raise NotImplementedError

    def _start(self) -> asyncio.Task[RunResult]:
        if self._task is None:
            task = asyncio.get_running_loop().create_task(self._run())
            task.add_done_callback(lambda _t: self._queue.put_nowait(_END_OF_STREAM))
            self._task = task
        return self._task

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        if self._finished:
            raise StopAsyncIteration
        self._start()
        event = await self._queue.get()
        if event is _END_OF_STREAM:
            self._finished = True
            task = self._task
            if task is not None and not task.cancelled() and task.exception() is not None:
                # The run never started (e.g. the thread could not be resumed, or is busy).
                raise task.exception()  # type: ignore[misc]
            raise StopAsyncIteration
        if isinstance(event, DoneEvent):
            # Let the done callback's sentinel arrive, but stop at done.
            self._finished = True
        return event

    async def result(self) -> RunResult:
        """Wait for the run to end (reading no more events) and return its result.

        Example:
            >>> # result = await stream.result()
        """
        task = self._start()
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            left = self._left_result()
            if task.cancelled() and left is not None:
                return left
            raise

    def cancel(self) -> None:
        """Ask the run to stop; in-flight nodes are cancelled, ``done`` still arrives.

        Example:
            >>> # stream.cancel()
        """
        if self._task is None:
            # Not started yet: remember, so that starting ends it at once.
            self._cancel_requested = True
        elif not self._task.done():
            self._task.cancel()

    async def aclose(self) -> None:
        """Cancel the run if it is still going and wait until it has stopped."""
        task = self._task
        if task is None:
            self._finished = True
            return
        if not task.done():
            task.cancel()
        # wait() rather than await: a cancelled run is expected here, but the
        # caller's own cancellation must still propagate.
        await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # mark as retrieved; the result/errors live in result()
        self._finished = True

    async def __aenter__(self) -> Self:
        self._start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
