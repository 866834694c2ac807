"""Spec: one thread, one runner, for LangGraph-style graphs on flowcore's savers (in process).

A top-level run on a thread of ``InMemorySaver``, ``SqliteSaver`` or
``AsyncSqliteSaver`` holds the thread's lease from before it loads the
thread until its last save; another run of the thread meanwhile raises
flowcore's ``ThreadBusyError`` (LangGraph itself does not lease). Subgraph
runs live inside their parent's lease. Two real processes and a SIGKILLed
holder: ``test_thread_lease_processes``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypedDict

import pytest

from flowcore import InvalidInputError, ThreadBusyError
from flowcore.compat.langgraph import (
    END,
    START,
    AsyncSqliteSaver,
    Command,
    InMemorySaver,
    SqliteSaver,
    StateGraph,
    interrupt,
)

GUARD = 30.0  # only reached when a spec fails; a busy machine stays far below it
CONFIG = {"configurable": {"thread_id": "t"}}


class State(TypedDict):
    n: int


class Gate:
    """Holds the ``effect`` node until released, and counts how often it ran."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.runs = 0


async def wait(event: asyncio.Event, what: str) -> None:
    try:
        await asyncio.wait_for(event.wait(), GUARD)
    except TimeoutError:
        raise AssertionError(f"gave up waiting for {what}") from None


def effect_app(saver: Any, gate: Gate, *, fail: bool = False, ask: bool = False) -> Any:
    async def effect(state: State) -> dict[str, Any]:
        gate.runs += 1
        gate.entered.set()
        # Patient: the specs hold it across waits of up to GUARD on a loaded machine.
        await asyncio.wait_for(gate.release.wait(), 2 * GUARD)
        if ask:
            interrupt("approve?")
        if fail:
            raise RuntimeError("the effect broke")
        return {"n": state["n"] + 1}

    builder = StateGraph(State)
    builder.add_node("effect", effect)
    builder.add_edge(START, "effect")
    builder.add_edge("effect", END)
    return builder.compile(checkpointer=saver)


@pytest.fixture(params=["memory", "sqlite", "async-sqlite"])
async def make_saver(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Callable[..., Any]]:
    opened: list[Any] = []

    async def make(lease_ttl: float = 30.0) -> Any:
        path = str(tmp_path / f"lg-{len(opened)}.db")
        saver: Any
        if request.param == "memory":
            saver = InMemorySaver(lease_ttl=lease_ttl)
        elif request.param == "sqlite":
            saver = SqliteSaver(path, lease_ttl=lease_ttl)
        else:
            saver = AsyncSqliteSaver(path, lease_ttl=lease_ttl)
            await saver.setup()
        opened.append(saver)
        return saver

    yield make
    for saver in opened:
        if isinstance(saver, SqliteSaver):
            saver.close()
        elif isinstance(saver, AsyncSqliteSaver):
            await saver.aclose()


async def test_a_second_run_of_a_running_thread_is_refused_and_runs_nothing(
    make_saver: Callable[..., Any],
) -> None:
    gate = Gate()
    app = effect_app(await make_saver(), gate)
    first = asyncio.create_task(app.ainvoke({"n": 0}, CONFIG))
    await wait(gate.entered, "the first run to reach its effect")

    with pytest.raises(ThreadBusyError) as caught:
        await app.ainvoke({"n": 0}, CONFIG)

    gate.release.set()
    assert await asyncio.wait_for(first, GUARD) == {"n": 1}
    assert gate.runs == 1
    assert caught.value.thread_id == "t"  # the LangGraph thread id, not a store key
    assert "'t' is already running elsewhere" in str(caught.value)


async def test_of_runs_started_together_exactly_one_runs(make_saver: Callable[..., Any]) -> None:
    gate = Gate()
    gate.release.set()
    app = effect_app(await make_saver(), gate)

    outcomes = await asyncio.gather(
        *(app.ainvoke({"n": 0}, CONFIG) for _ in range(4)), return_exceptions=True
    )

    assert sorted(type(o).__name__ for o in outcomes) == [
        "ThreadBusyError",
        "ThreadBusyError",
        "ThreadBusyError",
        "dict",
    ], outcomes
    assert gate.runs == 1


async def test_a_stream_of_a_running_thread_is_refused(make_saver: Callable[..., Any]) -> None:
    gate = Gate()
    app = effect_app(await make_saver(), gate)
    first = asyncio.create_task(app.ainvoke({"n": 0}, CONFIG))
    await wait(gate.entered, "the first run to reach its effect")

    async def read_all() -> list[Any]:
        return [chunk async for chunk in app.astream({"n": 0}, CONFIG)]

    with pytest.raises(ThreadBusyError):
        await read_all()

    gate.release.set()
    assert await asyncio.wait_for(first, GUARD) == {"n": 1}


async def test_other_threads_run_alongside(make_saver: Callable[..., Any]) -> None:
    gate = Gate()
    app = effect_app(await make_saver(), gate)
    first = asyncio.create_task(app.ainvoke({"n": 0}, CONFIG))
    await wait(gate.entered, "the first run to reach its effect")
    gate.entered.clear()

    other = asyncio.create_task(app.ainvoke({"n": 5}, {"configurable": {"thread_id": "u"}}))
    await wait(gate.entered, "the run of another thread to reach its effect")
    gate.release.set()

    assert await asyncio.wait_for(asyncio.gather(first, other), GUARD) == [{"n": 1}, {"n": 6}]


@pytest.mark.parametrize("ending", ["completed", "failed", "interrupted", "cancelled"])
async def test_the_lease_is_released_however_the_run_ends(
    make_saver: Callable[..., Any], ending: str
) -> None:
    gate = Gate()
    saver = await make_saver()
    app = effect_app(saver, gate, fail=ending == "failed", ask=ending == "interrupted")
    run = asyncio.create_task(app.ainvoke({"n": 0}, CONFIG))
    await wait(gate.entered, "the run to reach its effect")
    if ending == "cancelled":
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
    elif ending == "failed":
        gate.release.set()
        with pytest.raises(RuntimeError, match="the effect broke"):
            await asyncio.wait_for(run, GUARD)
    else:
        gate.release.set()
        await asyncio.wait_for(run, GUARD)

    # The thread is free at once, not after the 30 s lease.
    again_gate = Gate()
    again_gate.release.set()
    again = effect_app(saver, again_gate)
    if ending == "interrupted":
        assert await again.ainvoke(Command(resume="yes"), CONFIG) == {"n": 1}
    else:
        assert await again.ainvoke({"n": 10}, CONFIG) == {"n": 11}


async def test_an_expired_lease_is_taken_over(make_saver: Callable[..., Any]) -> None:
    # Long enough that the refused run below comes before it lapses on a busy machine.
    ttl = 1.0
    saver = await make_saver(lease_ttl=ttl)
    # A run that took the lease and went silent, as a killed process does.
    dead = await saver._acquire_lease("t", "gone-host:1:dead")
    assert dead is not None
    gate = Gate()
    gate.release.set()
    app = effect_app(saver, gate)
    with pytest.raises(ThreadBusyError) as caught:
        await app.ainvoke({"n": 0}, CONFIG)
    assert caught.value.holder == "gone-host:1:dead"

    await asyncio.sleep(max(0.0, dead.expires_at - time.time()) + 0.05)

    assert await app.ainvoke({"n": 0}, CONFIG) == {"n": 1}


async def test_the_heartbeat_keeps_a_long_run_s_lease_past_its_ttl(
    make_saver: Callable[..., Any],
) -> None:
    # Renewed every 0.5 s, so only a stall of the loop longer than 1 s (not just a busy
    # machine) lets it lapse.
    ttl = 1.5
    gate = Gate()
    app = effect_app(await make_saver(lease_ttl=ttl), gate)
    first = asyncio.create_task(app.ainvoke({"n": 0}, CONFIG))
    await wait(gate.entered, "the run to reach its effect")
    with pytest.raises(ThreadBusyError) as seen:
        await app.ainvoke({"n": 0}, CONFIG)
    held_until = seen.value.expires_at

    # Past the lease as it was when first seen: without renewals it would have lapsed.
    await asyncio.sleep(max(0.0, held_until - time.time()) + ttl / 3)
    with pytest.raises(ThreadBusyError) as caught:
        await app.ainvoke({"n": 0}, CONFIG)
    assert caught.value.expires_at > max(held_until, time.time())

    gate.release.set()
    assert await asyncio.wait_for(first, GUARD) == {"n": 1}
    assert gate.runs == 1


async def test_a_subgraph_on_the_parent_s_saver_runs_inside_the_parent_s_lease(
    make_saver: Callable[..., Any],
) -> None:
    inner = StateGraph(State)
    inner.add_node("double", lambda s: {"n": s["n"] * 2})
    inner.add_edge(START, "double")
    inner.add_edge("double", END)
    outer = StateGraph(State)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    outer.add_edge("sub", END)
    app = outer.compile(checkpointer=await make_saver())

    assert await asyncio.wait_for(app.ainvoke({"n": 3}, CONFIG), GUARD) == {"n": 6}


@pytest.mark.parametrize("kind", ["memory", "sqlite", "async-sqlite"])
def test_lease_ttl_must_be_a_positive_number_of_seconds(tmp_path: Path, kind: str) -> None:
    makers: dict[str, Callable[[], Any]] = {
        "memory": lambda: InMemorySaver(lease_ttl=0),
        "sqlite": lambda: SqliteSaver(str(tmp_path / "lg.db"), lease_ttl=-5),
        "async-sqlite": lambda: AsyncSqliteSaver(str(tmp_path / "lg.db"), lease_ttl=0),
    }
    with pytest.raises(InvalidInputError, match="lease_ttl must be a positive number"):
        makers[kind]()
