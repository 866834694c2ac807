"""Spec: a compat run's last batch gives its thread lease back in the same commit.

On flowcore's SQLite savers a run under ``durability="async"`` stores what it
queued when it ends; that last transaction also deletes the run's lease, so
the run pays one commit for both instead of two. Whatever happens, the
guarantees of ``test_thread_lease`` hold: the lease is held until the last
write is stored, and freed however the run ends, also when that last batch
fails (then in a transaction of its own, after the batch's error was kept to
be raised).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypedDict

import pytest

from flowcore.compat.langgraph import END, START, AsyncSqliteSaver, StateGraph


class State(TypedDict):
    n: int


def loop_app(saver: Any, steps: int, on_step: Any = None) -> Any:
    async def step(state: State) -> dict[str, Any]:
        if on_step is not None:
            on_step(state["n"])
        return {"n": state["n"] + 1}

    def route(state: State) -> str:
        return END if state["n"] >= steps else "step"

    g = StateGraph(State)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", route, ["step", END])
    return g.compile(checkpointer=saver)


@pytest.fixture
async def saver(tmp_path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "threads.db")) as opened:
        yield opened


class Spy:
    """Counts the store's commits and its own lease releases."""

    def __init__(self, saver: AsyncSqliteSaver) -> None:
        self.store = saver.store
        self.commits = 0
        self.releases: list[str] = []
        self.fail: str | None = None
        self.store.before_commit = self._commit
        real = self.store.release_lease

        async def release(thread_id: str, holder: str) -> None:
            self.releases.append(thread_id)
            self.fail = None  # the failure is the batch's, not the release's
            await real(thread_id, holder)

        self.store.release_lease = release  # type: ignore[method-assign]

    def _commit(self) -> None:
        self.commits += 1
        if self.fail is not None:
            raise RuntimeError(self.fail)

    async def leases(self) -> list[Any]:
        rows = await self.store._read("SELECT thread_id, holder FROM thread_leases", {})
        return [tuple(row) for row in rows]


async def test_an_async_run_commits_its_last_batch_and_its_release_together(
    saver: AsyncSqliteSaver,
) -> None:
    spy = Spy(saver)
    app = loop_app(saver, 5)
    config = {"configurable": {"thread_id": "t"}}

    assert await app.ainvoke({"n": 0}, config, durability="async") == {"n": 5}

    # One commit takes the lease, one stores the run and gives the lease back.
    assert spy.commits == 2
    assert spy.releases == []
    assert await spy.leases() == []
    state = await app.aget_state(config)
    assert state.values == {"n": 5}
    # The thread is free: the next run takes it at once.
    assert await app.ainvoke(None, config, durability="async") == {"n": 5}


async def test_a_sync_run_gives_its_lease_back_on_its_own(saver: AsyncSqliteSaver) -> None:
    spy = Spy(saver)
    app = loop_app(saver, 3)
    config = {"configurable": {"thread_id": "t"}}
    assert await app.ainvoke({"n": 0}, config, durability="sync") == {"n": 3}
    # Every save was stored at its step: nothing was left for a last batch to carry.
    assert spy.releases == ["langgraph/t/"]
    assert await spy.leases() == []


async def test_a_run_whose_last_batch_fails_raises_its_error_and_frees_the_lease(
    saver: AsyncSqliteSaver,
) -> None:
    spy = Spy(saver)
    armed = [True]

    def arm(n: int) -> None:
        # After the lease was taken: every commit of the run's saves fails from here.
        if armed[0]:
            spy.fail = "the disk is full"

    app = loop_app(saver, 4, on_step=arm)
    config = {"configurable": {"thread_id": "t"}}

    with pytest.raises(RuntimeError, match="the disk is full"):
        await app.ainvoke({"n": 0}, config, durability="async")

    # The batch's transaction was rolled back, lease delete included; the lease was
    # then given back on its own.
    assert spy.releases == ["langgraph/t/"]
    assert await spy.leases() == []
    assert (await app.aget_state(config)).values == {}  # nothing of the run committed
    armed[0] = False
    assert await app.ainvoke({"n": 0}, config, durability="async") == {"n": 4}


async def test_a_run_that_fails_in_a_node_still_frees_its_thread(
    saver: AsyncSqliteSaver,
) -> None:
    spy = Spy(saver)

    def boom(n: int) -> None:
        if n == 2:
            raise ValueError("node failed")

    app = loop_app(saver, 4, on_step=boom)
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ValueError, match="node failed"):
        await app.ainvoke({"n": 0}, config, durability="async")
    assert await spy.leases() == []
    # What the run saved before the failure is stored (its last batch committed).
    assert (await app.aget_state(config)).values == {"n": 2}
