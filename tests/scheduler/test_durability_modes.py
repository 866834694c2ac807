"""Spec: when checkpoints reach the store, per durability mode, and update_state as a node.

A recording store wraps the in-memory one: it logs every call, and in
"slow" mode holds each put until the test lets it through, to see how far
the run gets ahead of its store.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal, TypedDict

from flowcore import (
    END,
    START,
    Checkpoint,
    Graph,
    InMemoryCheckpointer,
    PendingWrite,
    append,
)
from flowcore.checkpoint import BatchCheckpointer, WriteAt
from flowcore.scheduler.persistence import MAX_QUEUED_ITEMS


class State(TypedDict):
    i: int
    log: Annotated[list[str], append]


class RecordingStore:
    def __init__(self, *, slow: bool = False) -> None:
        self.inner = InMemoryCheckpointer()
        self.calls: list[str] = []
        self.slow = slow
        self.in_flight = 0
        self.max_in_flight = 0
        self.node_calls_at_first_put: int | None = None
        self.steps_run = 0
        self.lags: list[int] = []
        self.ran: list[str] = []

    async def put(self, checkpoint: Checkpoint) -> None:
        self.calls.append("put")
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        if self.node_calls_at_first_put is None:
            self.node_calls_at_first_put = self.steps_run
        if self.slow:
            for _ in range(5):  # let the run race ahead if it can
                await asyncio.sleep(0)
        await self.inner.put(checkpoint)
        # How many steps the run has started beyond this checkpoint, now that it is stored.
        self.lags.append(self.steps_run - checkpoint.step)
        self.in_flight -= 1

    async def put_write(self, thread_id: str, checkpoint_id: str, write: PendingWrite) -> None:
        self.calls.append("write")
        await self.inner.put_write(thread_id, checkpoint_id, write)

    async def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        return await self.inner.get(thread_id, checkpoint_id)

    async def get_writes(self, thread_id: str, checkpoint_id: str) -> tuple[PendingWrite, ...]:
        return await self.inner.get_writes(thread_id, checkpoint_id)

    async def history(self, thread_id: str, **kw: Any) -> list[Checkpoint]:
        return await self.inner.history(thread_id, **kw)

    async def delete_thread(self, thread_id: str) -> None:
        await self.inner.delete_thread(thread_id)

    async def aclose(self) -> None:
        await self.inner.aclose()


def loop(store: RecordingStore, steps: int = 10) -> Any:
    async def step(state: Any) -> dict[str, Any]:
        store.steps_run += 1
        return {"i": state["i"] + 1, "log": [str(state["i"])]}

    def route(state: Any) -> Literal["step", "__end__"]:
        return "step" if state["i"] < steps else END

    graph = Graph(State).add_node("step", step).add_edge(START, "step")
    graph.add_conditional_edges("step", route)
    return graph.compile(checkpointer=store)


async def test_sync_stores_every_checkpoint_before_the_next_step() -> None:
    store = RecordingStore()

    result = await loop(store).run({"i": 0}, thread_id="t", durability="sync")

    assert result.state["i"] == 10
    # One checkpoint before each of the 10 steps and one at the end. A step's
    # only node leaves its write to the checkpoint that follows (it is in that
    # checkpoint's write group), so each step is one commit, not two.
    assert store.calls == ["put"] * 11
    assert store.node_calls_at_first_put == 0


def fan(store: RecordingStore, fail_join: list[bool]) -> Any:
    """START -> a, b, c (one superstep) -> join; join fails while ``fail_join[0]``."""
    ran = store.ran

    def node(name: str) -> Any:
        async def run(state: Any) -> dict[str, Any]:
            ran.append(name)
            if name == "join" and fail_join[0]:
                raise RuntimeError("join is down")
            return {"log": [name]}

        return run

    graph = Graph(State)
    for name in ("a", "b", "c", "join"):
        graph.add_node(name, node(name))
        if name != "join":
            graph.add_edge(START, name).add_edge(name, "join")
    graph.add_edge("join", END)
    return graph.compile(checkpointer=store)


async def test_sync_stores_the_writes_of_a_parallel_step_but_its_last_alone() -> None:
    store = RecordingStore()

    result = await fan(store, [False]).run({"i": 0, "log": []}, thread_id="t", durability="sync")

    assert sorted(result.state["log"][:3]) == ["a", "b", "c"]
    # Two of a, b, c commit their writes as they finish (a failure or a crash of a
    # sibling must not re-run them); the last one's rides with the next checkpoint.
    assert store.calls.count("write") == 2
    assert store.calls.count("put") == 3


async def test_a_failure_after_a_one_commit_step_reruns_nothing_saved() -> None:
    store = RecordingStore()
    fail_join = [True]
    app = fan(store, fail_join)

    first = await app.run({"i": 0, "log": []}, thread_id="t", durability="sync")
    fail_join[0] = False
    second = await app.run(None, thread_id="t", durability="sync")

    assert first.status == "failed"
    assert second.status == "completed"
    assert sorted(second.state["log"]) == ["a", "b", "c", "join"]
    # a, b and c ran once each (their writes were saved: two alone, one in the
    # checkpoint before join); only the failed join ran again.
    assert sorted(store.ran) == ["a", "b", "c", "join", "join"]


async def test_async_runs_ahead_of_a_slow_store_but_only_so_far() -> None:
    store = RecordingStore(slow=True)
    steps = 3 * MAX_QUEUED_ITEMS

    result = await loop(store, steps).run({"i": 0}, thread_id="t", durability="async")

    assert result.state["i"] == steps
    assert store.max_in_flight == 1  # the store is never called concurrently
    # The run went on while its checkpoints were stored (it is asynchronous) ...
    assert max(store.lags) > 1
    # ... but a queue of at most MAX_QUEUED_ITEMS items (a checkpoint and a node
    # write per step), plus the batch being stored, bounds how far ahead it gets.
    assert max(store.lags) <= MAX_QUEUED_ITEMS + 1, max(store.lags)
    assert store.calls.count("put") == steps + 1
    assert len(await store.history("t")) == steps + 1


class BatchRecordingStore(RecordingStore):
    """Also takes batches, as the built-in stores do, and records their sizes."""

    def __init__(self) -> None:
        super().__init__(slow=True)
        self.batches: list[list[str]] = []

    async def put_many(self, items: Any) -> None:
        self.batches.append(["write" if isinstance(i, WriteAt) else "put" for i in items])
        for _ in range(5):
            await asyncio.sleep(0)
        await self.inner.put_many(items)


async def test_async_hands_a_batching_store_what_queued_up_in_order() -> None:
    store = BatchRecordingStore()
    assert isinstance(store, BatchCheckpointer)

    result = await loop(store, 50).run({"i": 0}, thread_id="t", durability="async")

    assert result.state["i"] == 50
    assert store.calls == []  # everything went through put_many
    # Checkpoints made while a batch was being stored went together in the next.
    assert len(store.batches) < 51
    assert max(len(b) for b in store.batches) > 2
    flat = [kind for batch in store.batches for kind in batch]
    assert flat == ["put", "write"] * 50 + ["put"]
    history = await store.history("t")
    assert [c.step for c in history] == list(reversed(range(len(history))))
    assert len(history) == 51


async def test_exit_stores_one_checkpoint_when_the_run_ends() -> None:
    store = RecordingStore()

    result = await loop(store).run({"i": 0}, thread_id="t", durability="exit")

    assert result.status == "completed"
    assert store.node_calls_at_first_put == 10  # nothing was stored while it ran
    assert store.calls == ["put"]
    (only,) = await store.history("t")
    assert only.snapshot is not None
    assert only.snapshot["values"]["i"] == 10


async def test_all_modes_end_in_the_same_state_and_resume_alike() -> None:
    finals = []
    for durability in ("sync", "async", "exit"):
        store = RecordingStore()
        app = loop(store)
        result = await app.run({"i": 0}, thread_id="t", durability=durability)
        snap = await app.get_state("t")
        finals.append((dict(result.state), dict(snap.values), snap.next))
    assert finals[0] == finals[1] == finals[2]
    assert finals[0][0]["log"] == [str(i) for i in range(10)]


async def test_update_state_as_a_node_continues_from_that_nodes_successors() -> None:
    ran: list[str] = []

    def node(name: str) -> Any:
        def run(state: Any) -> dict[str, Any]:
            ran.append(name)
            return {"log": [name]}

        return run

    graph = Graph(State)
    for name in ("draft", "review", "publish"):
        graph.add_node(name, node(name))
    graph.add_edge(START, "draft").add_edge("draft", "review").add_edge("review", "publish")
    app = graph.compile(checkpointer=InMemoryCheckpointer(), interrupt_before=["review"])
    await app.run({"i": 0}, thread_id="t")
    assert (await app.get_state("t")).next == ("review",)

    # A human does the review instead of the node.
    await app.update_state("t", {"log": ["human review"]}, as_node="review")
    assert (await app.get_state("t")).next == ("publish",)
    done = await app.run(None, thread_id="t")

    assert done.state["log"] == ["draft", "human review", "publish"]
    assert ran == ["draft", "publish"]
