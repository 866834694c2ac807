"""Small builders and async helpers shared by the scheduler specs.

Ordering between nodes is arranged with ``asyncio.Event`` handshakes, never
with timings; every wait carries a guard so a broken engine fails a test
instead of hanging it.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Awaitable, Callable, Iterable
from typing import Annotated, Any, TypedDict, TypeVar

from flowcore import START, Event, Graph, RunResult, RunStream, append

T = TypeVar("T")

MODES = ("supersteps", "dataflow")
"""Both scheduling modes; most specs hold in each."""

GUARD = 30.0
"""Seconds a handshake may take before the test gives up: only hit on failure, so it is
long enough that a busy machine never reaches it (a blocked sync node also waits this
long for its release, and must still be blocked when the run has given up on it)."""


class LogState(TypedDict):
    """A state whose ``log`` collects, in order, what nodes appended."""

    log: Annotated[list[str], append]


class CountState(TypedDict):
    """``count`` is summed across writes; ``x`` and ``y`` are plain replace-keys."""

    count: Annotated[int, operator.add]
    x: str
    y: str


async def wait(event: asyncio.Event, what: str = "event") -> None:
    """Wait for ``event``, failing loudly (not hanging) if it never fires."""
    try:
        async with asyncio.timeout(GUARD):
            await event.wait()
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


LOOP_TURNS = 50
"""Event-loop turns that are plenty for a finished node's outcome to reach the scheduler."""


async def loop_turns(count: int = LOOP_TURNS) -> None:
    """Yield to the event loop ``count`` times, so that what is ready runs first.

    Counted, not timed: ``asyncio.sleep(0.01)`` is cut short on a busy machine,
    where the process is descheduled longer than that and the timer is already
    due on the next turn, so the scheduler's own callbacks may not have run yet.
    """
    for _ in range(count):
        await asyncio.sleep(0)


async def guarded(awaitable: Awaitable[T], what: str = "run") -> T:
    """Await ``awaitable`` under the guard timeout."""
    try:
        async with asyncio.timeout(GUARD):
            return await awaitable
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def logger(name: str) -> Callable[[Any], dict[str, list[str]]]:
    """A sync node that appends its own name to ``log``."""

    def node(state: Any) -> dict[str, list[str]]:
        return {"log": [name]}

    node.__name__ = name
    return node


def alogger(name: str) -> Callable[[Any], Awaitable[dict[str, list[str]]]]:
    """An async node that appends its own name to ``log``."""

    async def node(state: Any) -> dict[str, list[str]]:
        return {"log": [name]}

    node.__name__ = name
    return node


def chain_graph(names: Iterable[str], *, state: type[Any] = LogState) -> Graph:
    """START -> names[0] -> names[1] -> ..., each node logging its name."""
    graph = Graph(state)
    prev = START
    for name in names:
        graph.add_node(name, alogger(name))
        graph.add_edge(prev, name)
        prev = name
    return graph


class GuardedEvents:
    """Iterate a RunStream, failing (not hanging) if the next event never comes.

    A plain async iterator, not a generator: breaking out of the loop leaves
    no half-finished generator behind for the loop to finalize.
    """

    def __init__(self, stream: RunStream) -> None:
        self._stream = stream

    def __aiter__(self) -> GuardedEvents:
        return self

    async def __anext__(self) -> Event:
        try:
            async with asyncio.timeout(GUARD):
                return await anext(self._stream)
        except TimeoutError:
            raise AssertionError("timed out waiting for the next event") from None


def guarded_events(stream: RunStream) -> GuardedEvents:
    """``async for event in guarded_events(stream)``: see :class:`GuardedEvents`."""
    return GuardedEvents(stream)


async def collect(stream: RunStream) -> list[Event]:
    """Read a whole stream inside ``async with`` and return its events."""
    async with stream as events:
        return [ev async for ev in guarded_events(events)]


def runs_of(result: RunResult, node: str, status: str | None = None) -> list[Any]:
    """The node_runs records of ``node`` (with ``status``, if given), in order."""
    return [
        r for r in result.node_runs if r.node == node and (status is None or r.status == status)
    ]


def statuses(result: RunResult) -> dict[str, list[str]]:
    """node -> list of its run statuses, in order."""
    out: dict[str, list[str]] = {}
    for r in result.node_runs:
        out.setdefault(r.node, []).append(r.status)
    return out
