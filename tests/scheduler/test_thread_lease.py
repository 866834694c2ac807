"""Spec: one thread, one runner, within a process (native API).

A run on a thread takes the thread's lease before it reads the thread and
gives it back however it ends; while it runs, another run of the same thread
raises ``ThreadBusyError`` and runs nothing. Runs of other threads are not
held up. Each spec runs on both built-in stores; the SQLite one on a real
file. (Two real processes and a SIGKILLed holder: test_thread_lease_processes.)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypedDict

import pytest

from flowcore import (
    START,
    Graph,
    InMemoryCheckpointer,
    Resume,
    ThreadBusyError,
    interrupt,
)
from flowcore.checkpoint import LeasingCheckpointer, SqliteCheckpointer
from flowcore.checkpoint.lease import new_holder_id

from .helpers import GUARD, wait

STORES = ("memory", "sqlite")


class State(TypedDict):
    n: int


class Gate:
    """Holds the ``effect`` node until released, and counts how often it ran."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.runs = 0


def effect_graph(store: Any, gate: Gate, *, fail: bool = False, ask: bool = False) -> Any:
    async def effect(state: State) -> dict[str, Any]:
        gate.runs += 1
        gate.entered.set()
        # Patient: specs hold it across stalls and sleeps that a loaded machine stretches.
        await asyncio.wait_for(gate.release.wait(), 2 * GUARD)
        if ask:
            interrupt("approve?")
        if fail:
            raise RuntimeError("the effect broke")
        return {"n": state["n"] + 1}

    return (
        Graph(State)
        .add_node("effect", effect)
        .add_edge(START, "effect")
        .compile(checkpointer=store)
    )


@pytest.fixture(params=STORES)
async def make_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Callable[..., Any]]:
    opened: list[Any] = []

    async def make(lease_ttl: float = 30.0) -> Any:
        if request.param == "memory":
            store: Any = InMemoryCheckpointer(lease_ttl=lease_ttl)
        else:
            store = await SqliteCheckpointer.open(
                tmp_path / f"threads-{len(opened)}.db", lease_ttl=lease_ttl
            )
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.aclose()


async def test_both_stores_lease_threads(make_store: Callable[..., Any]) -> None:
    assert isinstance(await make_store(), LeasingCheckpointer)


async def test_a_second_run_of_a_running_thread_is_refused_and_runs_nothing(
    make_store: Callable[..., Any],
) -> None:
    gate = Gate()
    app = effect_graph(await make_store(), gate)
    first = asyncio.create_task(app.run({"n": 0}, thread_id="t"))
    await wait(gate.entered, "the first run to reach its effect")

    with pytest.raises(ThreadBusyError) as caught:
        await app.run({"n": 0}, thread_id="t")
    with pytest.raises(ThreadBusyError):
        await app.run(None, thread_id="t")

    gate.release.set()
    result = await asyncio.wait_for(first, GUARD)
    assert result.status == "completed"
    assert gate.runs == 1
    err = caught.value
    assert err.code == "thread-busy"
    assert err.thread_id == "t"
    assert err.holder.split(":")[1].isdigit()  # host:pid:random
    assert err.expires_at > time.time()
    assert "'t' is already running elsewhere" in str(err)
    assert err.holder in str(err)


async def test_update_state_is_refused_while_a_run_holds_the_thread(
    make_store: Callable[..., Any],
) -> None:
    gate = Gate()
    app = effect_graph(await make_store(), gate)
    first = asyncio.create_task(app.run({"n": 0}, thread_id="t"))
    await wait(gate.entered, "the run to reach its effect")

    with pytest.raises(ThreadBusyError):
        await app.update_state("t", {"n": 100})

    gate.release.set()
    assert (await asyncio.wait_for(first, GUARD)).state["n"] == 1
    # Once the run ended the thread is free again, and the update lands.
    await app.update_state("t", {"n": 100})
    assert (await app.get_state("t")).values["n"] == 100


async def test_of_two_runs_started_together_exactly_one_runs(
    make_store: Callable[..., Any],
) -> None:
    gate = Gate()
    gate.release.set()
    app = effect_graph(await make_store(), gate)

    outcomes = await asyncio.gather(
        *(app.run({"n": 0}, thread_id="t") for _ in range(5)), return_exceptions=True
    )

    busy = [o for o in outcomes if isinstance(o, ThreadBusyError)]
    done = [o for o in outcomes if not isinstance(o, BaseException)]
    assert (len(done), len(busy)) == (1, 4), outcomes
    assert gate.runs == 1


async def test_a_stream_of_a_running_thread_fails_when_it_starts(
    make_store: Callable[..., Any],
) -> None:
    gate = Gate()
    app = effect_graph(await make_store(), gate)
    first = asyncio.create_task(app.run({"n": 0}, thread_id="t"))
    await wait(gate.entered, "the first run to reach its effect")

    async def read_all() -> None:
        async with app.stream({"n": 0}, thread_id="t") as events:
            async for _ in events:
                pass

    with pytest.raises(ThreadBusyError):
        await read_all()

    gate.release.set()
    assert (await asyncio.wait_for(first, GUARD)).status == "completed"
    assert gate.runs == 1


async def test_other_threads_run_alongside(make_store: Callable[..., Any]) -> None:
    gate = Gate()
    app = effect_graph(await make_store(), gate)
    first = asyncio.create_task(app.run({"n": 0}, thread_id="t1"))
    await wait(gate.entered, "the first run to reach its effect")
    gate.entered.clear()

    second = asyncio.create_task(app.run({"n": 0}, thread_id="t2"))
    await wait(gate.entered, "the run of another thread to reach its effect")
    gate.release.set()

    results = await asyncio.wait_for(asyncio.gather(first, second), GUARD)
    assert [r.status for r in results] == ["completed", "completed"]


@pytest.mark.parametrize("ending", ["completed", "failed", "interrupted", "cancelled"])
async def test_the_lease_is_released_however_the_run_ends(
    make_store: Callable[..., Any], ending: str
) -> None:
    gate = Gate()
    store = await make_store()
    app = effect_graph(store, gate, fail=ending == "failed", ask=ending == "interrupted")
    run = asyncio.create_task(app.run({"n": 0}, thread_id="t"))
    await wait(gate.entered, "the run to reach its effect")
    if ending == "cancelled":
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
    else:
        gate.release.set()
        assert (await asyncio.wait_for(run, GUARD)).status == ending

    # Free at once, not after the 30 s lease: another holder takes it.
    lease = await store.acquire_lease("t", new_holder_id())
    await store.release_lease("t", lease.holder)


async def test_a_resumed_run_holds_the_lease_too(make_store: Callable[..., Any]) -> None:
    gate = Gate()
    gate.release.set()
    store = await make_store()
    app = effect_graph(store, gate, ask=True)
    assert (await app.run({"n": 0}, thread_id="t")).status == "interrupted"
    gate.release.clear()
    gate.entered.clear()

    resumed = asyncio.create_task(app.run(Resume("yes"), thread_id="t"))
    await wait(gate.entered, "the resumed run to reach its effect")
    with pytest.raises(ThreadBusyError):
        await app.run(Resume("yes"), thread_id="t")
    gate.release.set()

    assert (await asyncio.wait_for(resumed, GUARD)).status == "completed"
    assert gate.runs == 2  # the first attempt, which asked, and the resumed one


async def test_a_refused_resume_still_gives_the_lease_back(
    make_store: Callable[..., Any],
) -> None:
    gate = Gate()
    gate.release.set()
    app = effect_graph(await make_store(), gate)

    with pytest.raises(Exception, match="has no checkpoints"):
        await app.run(None, thread_id="t")

    assert (await app.run({"n": 0}, thread_id="t")).status == "completed"


async def test_the_heartbeat_keeps_a_long_run_s_lease_past_its_ttl(
    make_store: Callable[..., Any],
) -> None:
    gate = Gate()
    # Renewed every 0.5 s, so only a stall of the loop longer than 1 s (not just a busy
    # machine) lets it lapse.
    ttl = 1.5
    app = effect_graph(await make_store(lease_ttl=ttl), gate)
    first = asyncio.create_task(app.run({"n": 0}, thread_id="t"))
    await wait(gate.entered, "the run to reach its effect")
    with pytest.raises(ThreadBusyError) as seen:
        await app.run({"n": 0}, thread_id="t")
    held_until = seen.value.expires_at

    # Past the lease as it was when first seen: without renewals it would have lapsed.
    await asyncio.sleep(max(0.0, held_until - time.time()) + ttl / 3)
    with pytest.raises(ThreadBusyError) as caught:
        await app.run({"n": 0}, thread_id="t")
    assert caught.value.expires_at > max(held_until, time.time())

    gate.release.set()
    assert (await asyncio.wait_for(first, GUARD)).status == "completed"
    assert gate.runs == 1


async def test_an_expired_lease_is_taken_over(make_store: Callable[..., Any]) -> None:
    gate = Gate()
    gate.release.set()
    # Long enough that the refused run below comes before it lapses on a busy machine.
    ttl = 1.0
    store = await make_store(lease_ttl=ttl)
    # A holder that took the lease and then went silent, as a killed process does.
    dead = await store.acquire_lease("t", "gone-host:1:dead")
    app = effect_graph(store, gate)
    with pytest.raises(ThreadBusyError) as caught:
        await app.run({"n": 0}, thread_id="t")
    assert caught.value.holder == "gone-host:1:dead"

    await asyncio.sleep(max(0.0, dead.expires_at - time.time()) + 0.05)

    assert (await app.run({"n": 0}, thread_id="t")).status == "completed"
    assert gate.runs == 1


async def test_a_run_that_lost_its_lease_stops_with_thread_busy(tmp_path: Path) -> None:
    """A runner whose loop stalled past its lease, while another took the thread over."""
    ttl = 0.3
    db = tmp_path / "threads.db"
    async with SqliteCheckpointer(db, lease_ttl=ttl) as store:
        gate = Gate()
        app = effect_graph(store, gate)
        first = asyncio.create_task(app.run({"n": 0}, thread_id="t"))
        await wait(gate.entered, "the run to reach its effect")

        async def rival() -> str:
            async with SqliteCheckpointer(db, lease_ttl=30.0) as other, asyncio.timeout(GUARD):
                while True:  # until the stalled run's last renewal has lapsed
                    try:
                        return (await other.acquire_lease("t", "rival:2:beef")).holder
                    except ThreadBusyError:
                        await asyncio.sleep(0.01)

        # Stall this event loop (no heartbeat can run) past the lease, while another
        # runner takes the thread as soon as the lease lapses: a thread with its own loop
        # and connection, as another process would. Blocking on purpose: that is the stall,
        # and it lasts until the takeover however slowly the machine gets there.
        time.sleep(2 * ttl)  # noqa: ASYNC251
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            assert pool.submit(asyncio.run, rival()).result(timeout=GUARD) == "rival:2:beef"

        with pytest.raises(ThreadBusyError) as caught:
            await asyncio.wait_for(first, GUARD)
        assert caught.value.holder == "rival:2:beef"
        assert "this run lost thread 't'" in str(caught.value)
        assert gate.runs == 1
        assert not gate.release.is_set()  # it stopped mid-node, without finishing it
