"""Spec: the runtime keeps a thread's lease for one run, whichever engine asks.

``run_lease`` is the one call both engines make (native graphs through
``hold_thread``, LangGraph-shaped graphs with their saver's calls): the lease
is taken before the run's block starts, renewed while it lives, given back
however it ends, and a thread another run holds is refused with
``ThreadBusyError`` before anything runs. Each spec on a real store runs on
both built-in ones, the SQLite one on a real file.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from flowcore.checkpoint import InMemoryCheckpointer, SqliteCheckpointer, ThreadLease
from flowcore.checkpoint.lease import LeaseTable
from flowcore.errors import ThreadBusyError
from flowcore.runtime import LeaseKeeper, hold_thread, new_holder_id, run_lease

GUARD = 30.0
"""Seconds a handshake may take before a spec gives up: only reached when it fails."""

STORES = ("memory", "sqlite")


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


class Recorder:
    """A leasing store's two calls over a ``LeaseTable``, logging each call in order."""

    def __init__(self, ttl: float = 30.0) -> None:
        self.table = LeaseTable(ttl=ttl)
        self.log: list[tuple[str, str, str]] = []
        self.renewed = asyncio.Event()

    async def acquire(self, thread_id: str, holder: str) -> ThreadLease:
        if any(call[0] == "acquire" for call in self.log):
            self.renewed.set()
        self.log.append(("acquire", thread_id, holder))
        return self.table.take(thread_id, holder)

    async def release(self, thread_id: str, holder: str) -> None:
        self.log.append(("release", thread_id, holder))
        self.table.drop(thread_id, holder)


async def test_the_lease_is_taken_before_the_block_and_given_back_after_it() -> None:
    store = Recorder()
    seen_inside: list[tuple[str, str, str]] = []

    async with run_lease("t", store.acquire, store.release) as lease:
        seen_inside.extend(store.log)
        assert lease is not None
        assert store.table.holder("t") == lease.holder

    assert seen_inside == [("acquire", "t", lease.holder)]
    assert store.log == [("acquire", "t", lease.holder), ("release", "t", lease.holder)]
    assert store.table.holder("t") is None


async def test_each_run_gets_a_holder_id_of_its_own() -> None:
    store = Recorder()
    holders = []
    for _ in range(3):
        async with run_lease("t", store.acquire, store.release) as lease:
            assert lease is not None
            holders.append(lease.holder)
    assert len(set(holders)) == 3
    assert all(holder.rsplit(":", 2)[0] == new_holder_id().rsplit(":", 2)[0] for holder in holders)


async def test_a_store_that_does_not_lease_holds_nothing() -> None:
    released: list[str] = []

    async def no_lease(thread_id: str, holder: str) -> None:
        return None

    async def release(thread_id: str, holder: str) -> None:
        released.append(holder)

    async with run_lease("t", no_lease, release) as lease:
        assert lease is None
    assert released == []  # nothing taken, nothing to give back

    async with hold_thread(object(), "t") as nothing:  # not a LeasingCheckpointer
        assert nothing is None


async def test_hold_thread_takes_the_lease_in_the_store(make_store: Callable[..., Any]) -> None:
    store = await make_store()
    async with hold_thread(store, "t") as lease:
        assert lease is not None
        assert lease.thread_id == "t"
        with pytest.raises(ThreadBusyError) as caught:
            await store.acquire_lease("t", "someone-else:1:abc")
        assert caught.value.holder == lease.holder
    # Given back: anyone can take it now.
    assert (await store.acquire_lease("t", "someone-else:1:abc")).holder == "someone-else:1:abc"


async def test_a_held_thread_is_refused_before_the_block_runs(
    make_store: Callable[..., Any],
) -> None:
    store = await make_store()
    other = await store.acquire_lease("t", "other-host:7:feed")
    entered = False

    with pytest.raises(ThreadBusyError) as caught:
        async with hold_thread(store, "t"):
            entered = True

    assert not entered
    assert caught.value.thread_id == "t"
    assert caught.value.holder == "other-host:7:feed"
    # The refused run gave back nothing of the holder's: it still has the thread.
    with pytest.raises(ThreadBusyError):
        await store.acquire_lease("t", "third:9:cafe")
    assert (await store.acquire_lease("t", other.holder)).holder == other.holder


@pytest.mark.parametrize("ending", ["error", "cancelled"])
async def test_the_lease_is_given_back_however_the_block_ends(
    make_store: Callable[..., Any], ending: str
) -> None:
    store = await make_store()
    inside = asyncio.Event()

    async def run() -> None:
        async with hold_thread(store, "t"):
            inside.set()
            if ending == "error":
                raise RuntimeError("the run broke")
            await asyncio.Event().wait()  # until cancelled

    task = asyncio.create_task(run())
    await asyncio.wait_for(inside.wait(), GUARD)
    if ending == "cancelled":
        task.cancel()
    with pytest.raises(RuntimeError if ending == "error" else asyncio.CancelledError):
        await asyncio.wait_for(task, GUARD)

    assert (await store.acquire_lease("t", "next:1:beef")).holder == "next:1:beef"


async def test_a_long_run_s_lease_is_renewed_past_its_ttl(
    make_store: Callable[..., Any],
) -> None:
    # Renewed every 0.5 s, so only a stall of the loop longer than 1 s lets it lapse.
    ttl = 1.5
    store = await make_store(lease_ttl=ttl)
    async with hold_thread(store, "t") as lease:
        assert lease is not None
        # Past the lease as first taken: without renewals it would have lapsed.
        await asyncio.sleep(max(0.0, lease.expires_at - time.time()) + ttl / 3)
        with pytest.raises(ThreadBusyError) as caught:
            await store.acquire_lease("t", "rival:2:beef")
        assert caught.value.holder == lease.holder
        assert caught.value.expires_at > lease.expires_at


async def test_the_heartbeat_renews_through_the_same_call_that_took_the_lease() -> None:
    store = Recorder(ttl=0.3)
    async with run_lease("t", store.acquire, store.release) as lease:
        assert lease is not None
        await asyncio.wait_for(store.renewed.wait(), GUARD)
    renewals = [call for call in store.log if call[0] == "acquire"]
    assert len(renewals) >= 2
    assert all(call == ("acquire", "t", lease.holder) for call in renewals)
    assert store.log[-1] == ("release", "t", lease.holder)


async def test_a_run_that_loses_its_lease_is_stopped_with_thread_busy() -> None:
    table = LeaseTable(ttl=0.3)
    taken_over = asyncio.Event()
    holder = "run-a"

    async def acquire() -> ThreadLease:
        if taken_over.is_set():
            # A rival took the thread while this run could not renew.
            table.drop("t", holder)
            table.take("t", "rival:2:beef")
        return table.take("t", holder)

    async def release() -> None:
        table.drop("t", holder)

    reached_the_end = False

    async def run() -> None:
        nonlocal reached_the_end
        async with LeaseKeeper(acquire, release):
            taken_over.set()
            await asyncio.sleep(GUARD)  # cancelled by the keeper at the next renewal
            reached_the_end = True

    with pytest.raises(ThreadBusyError) as caught:
        await asyncio.wait_for(run(), 2 * GUARD)
    assert not reached_the_end
    assert caught.value.holder == "rival:2:beef"
    assert "this run lost thread 't'" in str(caught.value)
    assert table.holder("t") == "rival:2:beef"  # the release left the rival's lease alone


async def test_a_handed_over_lease_is_no_longer_renewed_and_not_released_twice() -> None:
    store = Recorder(ttl=0.3)
    keeper = run_lease("t", store.acquire, store.release)
    async with keeper as lease:
        assert lease is not None
        assert keeper.hand_over() == ("t", lease.holder)
        calls = len(store.log)
        # Several renewal intervals: a renewal now could re-take a lease the last
        # write has just given back.
        await asyncio.sleep(1.0)
        assert len(store.log) == calls
        store.table.drop("t", lease.holder)  # what the run's last write does
        keeper.handed_back()
    assert [call[0] for call in store.log] == ["acquire"]
    assert store.table.holder("t") is None


async def test_a_handed_over_lease_whose_last_write_failed_is_still_released() -> None:
    store = Recorder(ttl=30.0)
    keeper = run_lease("t", store.acquire, store.release)
    taken: list[ThreadLease | None] = []

    async def run() -> None:
        async with keeper as lease:
            taken.append(lease)
            assert keeper.hand_over() is not None
            raise RuntimeError("the last batch failed")

    with pytest.raises(RuntimeError, match="the last batch failed"):
        await run()
    lease = taken[0]
    assert lease is not None
    assert store.log == [("acquire", "t", lease.holder), ("release", "t", lease.holder)]
    assert store.table.holder("t") is None


async def test_nothing_is_handed_over_without_a_lease_or_its_names() -> None:
    async def no_lease() -> None:
        return None

    async def nothing() -> None:
        return None

    keeper = LeaseKeeper(no_lease, nothing)
    async with keeper:
        assert keeper.hand_over() is None
    table = LeaseTable()

    async def take() -> ThreadLease:
        return table.take("t", "run-a")

    async def give() -> None:
        table.drop("t", "run-a")

    unnamed = LeaseKeeper(take, give)  # built without run_lease: names unknown
    async with unnamed:
        assert unnamed.hand_over() is None
    assert table.holder("t") is None


def test_the_old_import_path_answers_the_moved_names() -> None:
    import flowcore.checkpoint.lease as old

    assert old.LeaseKeeper is LeaseKeeper
    assert old.hold_thread is hold_thread
    assert old.new_holder_id is new_holder_id
    with pytest.raises(AttributeError):
        _ = old.no_such_name
