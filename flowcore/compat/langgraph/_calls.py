"""Calls of ``@task`` functions: each one a task of the runtime's pool, its result saved.

A running node (an ``@entrypoint`` or a ``StateGraph`` node) gets a
:class:`TaskCalls` for the calls it makes: the run's :class:`TaskPool`
they start in and a counter that numbers them. A call's id comes from its
caller's id, its number and the task's name, so when a paused node runs
again from its start, the same call gets the same id; a call whose result
an earlier attempt saved (as the pending write ``__return__``) is answered
from it and never run again. A call that pauses (``interrupt()`` inside the
task) saves its own question, so it, not its caller, takes the answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import hashlib
import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from flowcore.compat.langgraph._context import TaskScope, set_scope
from flowcore.compat.langgraph._errors import GraphInterrupt
from flowcore.compat.langgraph._node import retry_call
from flowcore.compat.langgraph._planner import ERROR, INTERRUPT, PUSH, RESUME, Task
from flowcore.compat.langgraph._records import Outcome, TaskEnd, TaskStart
from flowcore.compat.langgraph._task_cache import find_cached
from flowcore.compat.langgraph._tracing import call_arguments
from flowcore.compat.langgraph._types import Interrupt, RetryPolicy, TimeoutPolicy
from flowcore.runtime import TaskPool, call_node

if TYPE_CHECKING:
    from flowcore.compat.langgraph._loop import Run

__all__ = [
    "RETURN",
    "TaskCalls",
    "TaskInterrupted",
    "TaskSpec",
    "call_task",
    "note_task_defined",
    "run_with_calls",
    "tasks_defined",
]

RETURN = "__return__"
"""The pending write that holds a finished task call's result."""

T = TypeVar("T")


class TaskSpec(Protocol):
    """What a call needs to know about a ``@task`` function."""

    @property
    def name(self) -> str:
        """The task's name (streams and ids use it)."""
        ...

    @property
    def func(self) -> Callable[..., Any]:
        """The user's function."""
        ...

    @property
    def is_async(self) -> bool:
        """Whether calling ``func`` gives a coroutine."""
        ...

    @property
    def retry_policy(self) -> Sequence[RetryPolicy]:
        """The retry policies of the task (empty: one attempt)."""
        ...

    @property
    def timeout(self) -> TimeoutPolicy | None:
        """The time limits of each attempt (None: no cap)."""
        ...


class TaskInterrupted(GraphInterrupt):
    """A task call paused: its question is saved under the call, not under its caller.

    Example:
        >>> TaskInterrupted(()).interrupts
        ()
    """

    recorded = True


class TaskCalls:
    """The task calls one running node (or task) makes, and where they run.

    Example:
        >>> # calls = TaskCalls(run, pool, loop, task, scope); calls.next_index() -> 0
    """

    __slots__ = ("_count", "interrupts", "loop", "owner", "pool", "run", "scope")

    def __init__(
        self,
        run: Run,
        pool: TaskPool,
        loop: asyncio.AbstractEventLoop,
        owner: Task,
        scope: TaskScope,
    ) -> None:
        self.run = run
        self.pool = pool
        self.loop = loop
        self.owner = owner
        self.scope = scope
        # itertools.count is atomic under the GIL: calls may come from a worker thread.
        self._count = itertools.count()
        self.interrupts: list[Interrupt] = []

    def next_index(self) -> int:
        """The number of the next call (0 for the first)."""
        return next(self._count)

    def saved(self, task_id: str) -> list[tuple[str, Any]]:
        """The pending writes an earlier attempt of the run saved for ``task_id``."""
        return [(c, v) for t, c, v in list(self.run.pending) if t == task_id]


class _Defined:
    """Whether any ``@task`` function exists in this process (it only ever turns True).

    Opening a call pool around every node costs a run about 5 % of a step; a
    node can only make task calls once some ``@task`` function exists, so
    until then the run loop calls nodes without one.
    """

    tasks = False


def note_task_defined() -> None:
    """Record that a ``@task`` function exists: from now on, nodes run with a call pool."""
    _Defined.tasks = True


def tasks_defined() -> bool:
    """Whether any ``@task`` function exists in this process."""
    return _Defined.tasks


_CALLS: contextvars.ContextVar[TaskCalls | None] = contextvars.ContextVar(
    "flowcore_compat_langgraph_calls", default=None
)


async def run_with_calls(
    run: Run, task: Task, scope: TaskScope, work: Callable[[], Awaitable[T]]
) -> T:
    """Run ``work()`` (a node) with a pool for the task calls it makes; wait for them all.

    A failure of the node cancels its calls still running; a call that paused
    pauses the node even if the node never read its result.
    """
    loop = asyncio.get_running_loop()
    failure: Exception | None = None
    result: Any = None
    calls: TaskCalls | None = None
    async with TaskPool() as pool:
        calls = TaskCalls(run, pool, loop, task, scope)
        token = _CALLS.set(calls)
        try:
            result = await work()
        except Exception as exc:
            failure = exc
            if not isinstance(exc, GraphInterrupt):
                pool.cancel_others()
        finally:
            _CALLS.reset(token)
    if calls.interrupts and (failure is None or isinstance(failure, TaskInterrupted)):
        raise TaskInterrupted(tuple(calls.interrupts))
    if failure is not None:
        raise failure
    answer: T = result
    return answer


def _call_id(owner: Task, index: int, name: str) -> str:
    text = hashlib.sha256(f"{owner.id}|{PUSH}|{index}|{name}".encode()).hexdigest()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:32]}"


def call_task(
    spec: TaskSpec, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> asyncio.Future[Any] | concurrent.futures.Future[Any]:
    """Start one call of ``spec`` in the running node's pool; return its future.

    On the event loop (an async node) the future is an ``asyncio.Future`` to
    await; in a sync node's worker thread it is a ``concurrent.futures.Future``
    whose ``result()`` waits for the call.

    Example:
        >>> # inside an entrypoint: total = add(1, 2).result()
    """
    calls = _CALLS.get()
    if calls is None:
        raise RuntimeError(
            f"Task {spec.name!r} was called outside a running graph: call a @task function "
            "from inside an @entrypoint or a StateGraph node."
        )
    try:
        on_loop = asyncio.get_running_loop() is calls.loop
    except RuntimeError:
        on_loop = False
    future: asyncio.Future[Any] | concurrent.futures.Future[Any] = (
        calls.loop.create_future() if on_loop else concurrent.futures.Future()
    )
    index = calls.next_index()
    owner = calls.owner
    task_id = _call_id(owner, index, spec.name)
    saved = calls.saved(task_id)
    done = [v for c, v in saved if c == RETURN]
    call = Task(task_id, spec.name, (PUSH, *owner.path, index), (args, dict(kwargs)), (PUSH,))
    if done:
        run = calls.run
        if "step_tasks" in run.wants:
            # LangGraph lists a call it answers from the step's saved writes as a task
            # of the step (it reports no result for it: it did not run).
            _emit_soon(calls, on_loop, "step_tasks", (run.step, [call], run.debug_metadata))
        future.set_result(done[0])
        return future
    calls.run.calls[task_id] = call

    def start() -> None:
        job = calls.pool.start(_run_call(calls, call, spec, saved, future))

        def stop(done: Any) -> None:
            # Cancelling the future a caller holds stops the task call it stands for.
            if done.cancelled() and not job.done():
                calls.loop.call_soon_threadsafe(job.cancel)

        future.add_done_callback(stop)

    if on_loop:
        start()
    else:
        calls.loop.call_soon_threadsafe(start)
    return future


def _emit_soon(calls: TaskCalls, on_loop: bool, kind: str, payload: Any) -> None:
    """Hand the run one record from the loop's thread (the run's sink is not thread-safe)."""
    if on_loop:
        calls.run.emit(kind, payload)
    else:
        calls.loop.call_soon_threadsafe(calls.run.emit, kind, payload)


def _answers(calls: TaskCalls, saved: list[tuple[str, Any]]) -> list[Any]:
    """The answers a call gets: those it took before, then those addressed to its pauses."""
    answers: list[Any] = []
    for chan, value in saved:
        if chan == RESUME:
            answers.extend(value if isinstance(value, list) else [value])
    by_id = calls.run.resume_by_id
    for chan, value in saved:
        if chan == INTERRUPT:
            for item in value if isinstance(value, list | tuple) else [value]:
                if isinstance(item, Interrupt) and item.id in by_id:
                    answers.append(by_id.pop(item.id))
    return answers


def _settle(
    future: asyncio.Future[Any] | concurrent.futures.Future[Any],
    value: Any = None,
    error: BaseException | None = None,
) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)
        if isinstance(future, asyncio.Future):
            # A caller that never reads the result already hears of a pause or a
            # failure through its node; asyncio need not log it as unretrieved.
            future.add_done_callback(_mark_read)


def _mark_read(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


async def _run_call(
    calls: TaskCalls,
    call: Task,
    spec: TaskSpec,
    saved: list[tuple[str, Any]],
    future: asyncio.Future[Any] | concurrent.futures.Future[Any],
) -> None:
    """Run one task call to its end; its outcome goes to ``future``, never raised here."""
    run = calls.run
    step = run.step
    if "task_start" in run.wants:
        run.emit("task_start", TaskStart(step, call))
    if "step_tasks" in run.wants:
        run.emit("step_tasks", (step, [call], run.debug_metadata))
    scope = TaskScope(run, call, step, _answers(calls, saved), calls.scope.null_resume)
    set_scope(scope)
    inner = TaskCalls(run, calls.pool, calls.loop, call, scope)
    _CALLS.set(inner)
    args, kwargs = call.input
    call.attempts = 0

    async def attempt() -> Any:
        scope.calls = 0
        call.attempts += 1
        return await call_node(spec.func, spec.is_async, args, kwargs)

    async def run_it() -> Any:
        return await retry_call(attempt, spec.retry_policy, spec.timeout, spec.name)

    try:
        entry, found, value = await find_cached(
            run.graph.cache, spec.name, getattr(spec, "cache_policy", None), args, kwargs
        )
        if not found:
            observer = run.observer
            if observer is None:
                value = await run_it()
            else:
                shown = call_arguments(spec.func, args, kwargs)
                value = await observer.call_task(call, step, calls.owner.id, shown, run_it)
        if inner.interrupts:
            raise TaskInterrupted(tuple(inner.interrupts))
    except GraphInterrupt as exc:
        if not getattr(exc, "recorded", False):
            asked: list[tuple[str, Any]] = [(INTERRUPT, list(exc.interrupts))]
            if scope.resume:
                asked.append((RESUME, list(scope.resume)))
            await run._put_writes(call, asked)
            run.pending.extend((call.id, c, v) for c, v in asked)
        calls.interrupts.extend(exc.interrupts)
        call.interrupts = exc.interrupts
        _ended(run, step, call, "interrupt")
        _settle(future, error=TaskInterrupted(exc.interrupts))
        return
    except asyncio.CancelledError:
        call.error = asyncio.CancelledError()
        _ended(run, step, call, "cancelled")
        future.cancel()
        raise
    except Exception as exc:
        await run._put_writes(call, [(ERROR, repr(exc))])
        call.error = exc
        _ended(run, step, call, "error")
        _settle(future, error=exc)
        return
    finally:
        set_scope(None)
    if entry is not None and not found:
        await entry.keep(value)
    stored: list[tuple[str, Any]] = [(RETURN, value)]
    if scope.resume:
        stored.append((RESUME, list(scope.resume)))
    await run._put_writes(call, stored)
    run.pending.extend((call.id, c, v) for c, v in stored)
    call.writes = [(RETURN, value)]
    call.done = True
    # The caller hears first, as in LangGraph: its code goes on before a stream
    # consumer takes the call's update.
    _settle(future, value)
    if "updates" in run.wants:
        run.emit("updates", {spec.name: value})
    _ended(run, step, call, "done")


_SHOWN = (RETURN,)


def _ended(run: Run, step: int, call: Task, outcome: Outcome) -> None:
    if "task_end" in run.wants:
        run.emit("task_end", TaskEnd(step, call, outcome, _SHOWN))
