"""Spec: the durability modes of the runtime's one writer (flowcore.runtime.durability).

A small in-memory store stands in for the port here: it logs what it
stores (one line per item, ``many`` for a batch) and can be held shut or
made to refuse an item. Its items are plain strings: ``c1`` a checkpoint,
``w1`` a write. The last tests show that both graph kinds save through
this writer.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest

from flowcore import END, START, Checkpoint, Graph, InMemoryCheckpointer, append
from flowcore.compat.langgraph import AsyncSqliteSaver, StateGraph
from flowcore.runtime import durability
from flowcore.runtime.durability import DurabilityWriter


class FakeStore:
    """Stores strings in a list; ``gate`` (when set up) holds every save until opened."""

    def __init__(self, *, fail_on: str | None = None, gated: bool = False) -> None:
        self.stored: list[str] = []
        self.log: list[tuple[str, ...]] = []
        self.fail_on = fail_on
        self.gate: asyncio.Event | None = asyncio.Event() if gated else None

    async def _wait(self) -> None:
        if self.gate is not None:
            await self.gate.wait()

    def _keep(self, item: str) -> None:
        if item == self.fail_on:
            raise OSError(f"disk full at {item}")
        self.stored.append(item)

    async def save_checkpoint(self, item: str) -> None:
        await self._wait()
        self.log.append(("one", item))
        self._keep(item)

    async def save_writes(self, item: str) -> None:
        await self._wait()
        self.log.append(("one", item))
        self._keep(item)


class BatchingFakeStore(FakeStore):
    """A :class:`FakeStore` with ``save_many``: all of a batch or none of it."""

    async def save_many(self, items: Sequence[str]) -> None:
        await self._wait()
        self.log.append(("many", *items))
        if self.fail_on in items:
            raise OSError("batch refused")
        self.stored.extend(items)


async def settle() -> None:
    """Let every ready task of the loop run until none is left to make progress."""
    for _ in range(20):
        await asyncio.sleep(0)


# ---------------------------------------------------------------------- sync


async def test_sync_stores_each_save_before_returning() -> None:
    store = BatchingFakeStore()
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "sync")
    await writer.checkpoint("c1")
    assert store.stored == ["c1"]
    await writer.writes("w1")
    assert store.stored == ["c1", "w1"]
    # One save, one call: no batch, no background task.
    assert store.log == [("one", "c1"), ("one", "w1")]
    await writer.close()


async def test_sync_a_riding_write_is_committed_with_the_next_checkpoint() -> None:
    store = BatchingFakeStore(gated=True)
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "sync")
    await writer.writes("w1", rides=True)  # returns before it is stored
    saving = asyncio.ensure_future(writer.checkpoint("c2"))
    await settle()
    assert not saving.done()
    assert store.stored == []
    store.gate.set()  # type: ignore[union-attr]
    await saving
    # The write was already on its way when the checkpoint came; both are stored, in order.
    assert store.stored == ["w1", "c2"]
    await writer.close()


async def test_sync_a_riding_write_left_alone_is_stored_at_close() -> None:
    store = FakeStore()
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "sync")
    await writer.writes("w1", rides=True)
    await writer.close()
    assert store.stored == ["w1"]


async def test_sync_group_commit_stores_concurrent_saves_in_one_batch() -> None:
    store = BatchingFakeStore(gated=True)
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "sync", group_commit=True)
    first = asyncio.ensure_future(writer.writes("w1"))
    await settle()  # w1 is with the store now
    others = [asyncio.ensure_future(writer.writes(w)) for w in ("w2", "w3")]
    await settle()
    assert not any(t.done() for t in (first, *others))
    store.gate.set()  # type: ignore[union-attr]
    await asyncio.gather(first, *others)
    assert store.log == [("many", "w1"), ("many", "w2", "w3")]
    await writer.close()


async def test_sync_a_failed_save_is_raised_by_that_save() -> None:
    store = FakeStore(fail_on="c2")
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "sync")
    await writer.checkpoint("c1")
    with pytest.raises(OSError, match="disk full at c2"):
        await writer.checkpoint("c2")
    assert store.stored == ["c1"]


# --------------------------------------------------------------------- async


async def test_async_returns_at_once_and_stores_in_order_in_batches() -> None:
    store = BatchingFakeStore(gated=True)
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "async")
    await writer.checkpoint("c1")
    await settle()  # the background task took c1 and waits for the store
    for item in ("w1", "c2", "w2", "c3"):
        if item.startswith("c"):
            await writer.checkpoint(item)
        else:
            await writer.writes(item)
    assert store.stored == []  # the run went on without its store
    store.gate.set()  # type: ignore[union-attr]
    await writer.close()
    # What queued up while the store was busy went over as one batch, in order.
    assert store.log == [("many", "c1"), ("many", "w1", "c2", "w2", "c3")]
    assert store.stored == ["c1", "w1", "c2", "w2", "c3"]


async def test_async_without_save_many_stores_one_item_at_a_time() -> None:
    store = FakeStore()
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "async")
    for item in ("c1", "w1", "c2"):
        await (writer.checkpoint(item) if item.startswith("c") else writer.writes(item))
    await writer.close()
    assert store.log == [("one", "c1"), ("one", "w1"), ("one", "c2")]


async def test_async_a_refused_batch_is_stored_one_by_one_up_to_the_bad_item() -> None:
    store = BatchingFakeStore(fail_on="c2", gated=True)
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "async")
    await writer.checkpoint("c1")
    await settle()
    for item in ("w1", "c2", "w2"):
        await (writer.checkpoint(item) if item.startswith("c") else writer.writes(item))
    store.gate.set()  # type: ignore[union-attr]
    # The error is the single save's, not the batch's; what came after c2 is not stored.
    with pytest.raises(OSError, match="disk full at c2"):
        await writer.close()
    assert store.stored == ["c1", "w1"]


async def test_async_a_failed_save_is_raised_by_the_next_save_and_nothing_after_is_stored() -> None:
    store = FakeStore(fail_on="c1")
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "async")
    await writer.checkpoint("c1")
    await writer.drain()  # the failure is kept, not raised, by drain
    with pytest.raises(OSError, match="disk full at c1"):
        await writer.writes("w1")
    await writer.close()  # raised once: close has nothing left to report
    assert store.stored == []


async def test_async_flush_raises_a_kept_failure() -> None:
    store = FakeStore(fail_on="w1")
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "async")
    await writer.checkpoint("c1")
    await writer.writes("w1")
    with pytest.raises(OSError, match="disk full at w1"):
        await writer.flush()
    assert store.stored == ["c1"]


async def test_async_memory_is_bounded_a_run_waits_for_its_store() -> None:
    store = BatchingFakeStore(gated=True)
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "async", max_queued=3)
    saved: list[str] = []

    async def run() -> None:
        for i in range(10):
            await writer.checkpoint(f"c{i}")
            saved.append(f"c{i}")

    running = asyncio.ensure_future(run())
    await settle()
    # Three items held (c0 to c2): the save that filled the queue waits for the store.
    assert not running.done()
    assert saved == ["c0", "c1"]
    store.gate.set()  # type: ignore[union-attr]
    await running
    await writer.close()
    assert store.stored == [f"c{i}" for i in range(10)]
    assert max(len(entry) - 1 for entry in store.log) <= 3


async def test_close_stops_the_background_task_even_when_cancelled() -> None:
    store = FakeStore(gated=True)
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "async")
    await writer.checkpoint("c1")
    closing = asyncio.ensure_future(writer.close())
    await settle()
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    # No task of the writer is left behind.
    assert all(t is asyncio.current_task() for t in asyncio.all_tasks())
    assert store.stored == []


# ---------------------------------------------------------------------- exit


async def test_exit_stores_nothing_until_close_then_the_newest_checkpoint_and_its_writes() -> None:
    store = BatchingFakeStore()
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "exit")
    await writer.checkpoint("c1")
    await writer.writes("w1", key="a")  # against c1: replaced by c2
    await writer.checkpoint("c2")
    await writer.writes("w2", key="a")
    await writer.writes("w3", key="b")
    await writer.writes("w2'", key="a")  # the same task again: its newest writes are kept
    assert store.stored == []
    assert writer.holds_checkpoint
    await writer.close(last=lambda head: f"{head}+merged")
    assert store.log == [("one", "c2+merged"), ("one", "w2'"), ("one", "w3")]
    assert not writer.holds_checkpoint


async def test_exit_without_a_new_checkpoint_stores_the_writes_alone() -> None:
    # A resumed run that stopped before its next checkpoint: its finished tasks' writes
    # are still stored, against the checkpoint it resumed from.
    store = FakeStore()
    writer: DurabilityWriter[str, str] = DurabilityWriter(store, "exit")
    await writer.writes("w1")
    await writer.writes("w2")
    await writer.close()
    assert store.stored == ["w1", "w2"]


def test_an_unknown_mode_is_refused_with_the_modes_named() -> None:
    with pytest.raises(ValueError, match="'sync', 'async' or 'exit', not 'later'"):
        DurabilityWriter(FakeStore(), "later")  # type: ignore[arg-type]


# ------------------------------------------------- both graph kinds save through it


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Any]]:
    """Every checkpoint a DurabilityWriter is handed: (mode, item type, item)."""
    calls: list[tuple[str, str, Any]] = []
    original = durability.DurabilityWriter.checkpoint

    async def checkpoint(self: DurabilityWriter[Any, Any], item: Any) -> None:
        calls.append((self.mode, type(item).__name__, item))
        await original(self, item)

    monkeypatch.setattr(durability.DurabilityWriter, "checkpoint", checkpoint)
    return calls


class Count(TypedDict):
    i: int
    log: Annotated[list[str], append]


@pytest.mark.parametrize("mode", ["sync", "async", "exit"])
async def test_a_native_run_saves_its_checkpoints_through_the_runtime_writer(
    mode: Literal["sync", "async", "exit"], seen: list[tuple[str, str, Any]]
) -> None:
    async def step(state: Any) -> dict[str, Any]:
        return {"i": state["i"] + 1, "log": [str(state["i"])]}

    def route(state: Any) -> Literal["step", "__end__"]:
        return "step" if state["i"] < 3 else END

    graph = Graph(Count).add_node("step", step).add_edge(START, "step")
    graph.add_conditional_edges("step", route)
    store = InMemoryCheckpointer()
    app = graph.compile(checkpointer=store)
    out = await app.run({"i": 0, "log": []}, thread_id="t", durability=mode)
    assert out.state["i"] == 3
    assert seen
    assert {m for m, _, _ in seen} == {mode}
    assert {kind for _, kind, _ in seen} == {"Checkpoint"}
    newest: Checkpoint = seen[-1][2]
    stored = await store.get("t")
    assert stored is not None
    assert stored.checkpoint_id == newest.checkpoint_id


class Log(TypedDict):
    n: int
    log: Annotated[list[int], operator.add]


@pytest.mark.parametrize(
    ("mode", "item"),
    [("sync", "Checkpoint"), ("async", "Checkpoint"), ("exit", "CheckpointCall")],
)
async def test_a_langgraph_run_saves_its_checkpoints_through_the_runtime_writer(
    mode: str, item: str, seen: list[tuple[str, str, Any]], tmp_path: Path
) -> None:
    def step(state: Log) -> dict[str, Any]:
        return {"n": state["n"] + 1, "log": [state["n"]]}

    def route(state: Log) -> str:
        return "step" if state["n"] < 3 else END

    builder = StateGraph(Log)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", route)
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "t.db")) as saver:
        app = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}}
        out = await app.ainvoke({"n": 0, "log": []}, config, durability=mode)
        assert out["n"] == 3
        # flowcore's saver under sync/async: its prepared store records (SaveBatch);
        # under exit: the aput call it makes when the run ends (held until then).
        assert seen
        assert {m for m, _, _ in seen} == {mode}
        assert {kind for _, kind, _ in seen} == {item}
        state = await app.aget_state(config)
        assert state.values["n"] == 3
