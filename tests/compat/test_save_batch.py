"""Saves under durability="async" are queued and stored in batches (SaveBatch).

The batched path must store exactly what one ``aput``/``aput_writes`` per save
stores, and a run returns, pauses or fails only once its saves are stored.
Each test runs a graph both ways (the per-call path by refusing the batch)
with the same checkpoint ids, and compares what the store holds.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.checkpoint import Checkpoint
from flowcore.compat.langgraph import (
    END,
    START,
    AsyncSqliteSaver,
    Command,
    StateGraph,
    interrupt,
)
from flowcore.errors import SerializationError

from .conftest import patch_checkpoint_ids


class State(TypedDict):
    n: int
    log: Annotated[list[Any], operator.add]


STEPS = 12


async def stored(saver: AsyncSqliteSaver) -> dict[str, list[Any]]:
    """Every LangGraph record the store holds, read around the saver, without times."""
    store = saver.store
    held: dict[str, list[Any]] = {}
    for key in await store.threads("langgraph/"):
        rows: list[Any] = []
        for cp in reversed(await store.history(key)):
            cursor = dict(cp.cursor or {})
            cursor["checkpoint"] = {k: v for k, v in cursor["checkpoint"].items() if k != "ts"}
            plain = Checkpoint(
                thread_id=cp.thread_id,
                checkpoint_id=cp.checkpoint_id,
                parent_id=cp.parent_id,
                step=cp.step,
                created_at=0.0,
                writes=cp.writes,
                cursor=cursor,
                metadata=cp.metadata,
            )
            writes = sorted(
                (w.node, w.payload) for w in await store.get_writes(key, cp.checkpoint_id)
            )
            rows.append((plain, writes))
        held[key] = rows
    return held


@pytest.fixture
async def savers(tmp_path: Path) -> AsyncIterator[tuple[AsyncSqliteSaver, AsyncSqliteSaver]]:
    """A saver that batches and one held to a save per call."""
    async with (
        AsyncSqliteSaver.from_conn_string(str(tmp_path / "batched.db")) as batched,
        AsyncSqliteSaver.from_conn_string(str(tmp_path / "single.db")) as single,
    ):
        single._open_batch = lambda: None  # type: ignore[method-assign]
        yield batched, single


def loop_graph(node: Callable[..., Any] | None = None) -> Any:
    def step(state: State) -> dict[str, Any]:
        return {"n": state["n"] + 1, "log": [state["n"]]}

    builder = StateGraph(State)
    builder.add_node("step", node or step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda s: "step" if s["n"] < STEPS else END)
    return builder


async def test_a_batched_run_stores_what_a_save_per_call_stores(
    savers: tuple[AsyncSqliteSaver, AsyncSqliteSaver], monkeypatch: pytest.MonkeyPatch
) -> None:
    batched, single = savers
    calls: list[int] = []
    put_many = batched.store.put_many

    async def counting(items: Any) -> None:
        calls.append(len(items))
        await put_many(items)

    put_many_and_release = batched.store.put_many_and_release
    released: list[int] = []

    async def counting_last(items: Any, thread_id: str, holder: str) -> None:
        calls.append(len(items))
        released.append(len(items))
        await put_many_and_release(items, thread_id, holder)

    monkeypatch.setattr(batched.store, "put_many", counting)
    # A run's last batch also gives its thread lease back, in the same transaction.
    monkeypatch.setattr(batched.store, "put_many_and_release", counting_last)
    for saver in savers:
        patch_checkpoint_ids(monkeypatch, _counter())
        graph = loop_graph().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}}
        out = await graph.ainvoke({"n": 0, "log": []}, config, durability="async")
        assert out["n"] == STEPS
        await graph.ainvoke({"n": 0, "log": []}, config, durability="async")
    assert await stored(batched) == await stored(single)
    # every save of the batched runs went through put_many, a checkpoint and a write a step
    assert sum(calls) == 2 * ((STEPS + 2) + (STEPS + 1))
    assert len(released) == 2  # one last batch per run


def _counter() -> Callable[[str | None], str]:
    counter = itertools.count(1)

    def fixed(after: str | None = None) -> str:
        text = f"{next(counter):032x}"
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"

    return fixed


async def test_an_interrupted_run_has_stored_its_checkpoints_when_it_returns(
    savers: tuple[AsyncSqliteSaver, AsyncSqliteSaver], monkeypatch: pytest.MonkeyPatch
) -> None:
    def step(state: State) -> dict[str, Any]:
        if state["n"] == 5:
            answer = interrupt("go on?")
            return {"n": state["n"] + 1, "log": [answer]}
        return {"n": state["n"] + 1, "log": [state["n"]]}

    held = []
    for saver in savers:
        patch_checkpoint_ids(monkeypatch, _counter())
        graph = loop_graph(step).compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}}
        paused = await graph.ainvoke({"n": 0, "log": []}, config, durability="async")
        assert "__interrupt__" in paused
        at_pause = await stored(saver)  # read from the store itself, not through the saver
        assert [cp.step for cp, _ in at_pause["langgraph/t/"]] == list(range(-1, 6))
        done = await graph.ainvoke(Command(resume="yes"), config, durability="async")
        assert "yes" in done["log"]
        held.append((at_pause, await stored(saver)))
    assert held[0] == held[1]


async def test_a_value_the_store_refuses_fails_the_run_after_storing_what_came_before(
    savers: tuple[AsyncSqliteSaver, AsyncSqliteSaver], monkeypatch: pytest.MonkeyPatch
) -> None:
    def step(state: State) -> dict[str, Any]:
        bad = object() if state["n"] == 4 else state["n"]
        return {"n": state["n"] + 1, "log": [bad]}

    for saver in savers:
        patch_checkpoint_ids(monkeypatch, _counter())
        graph = loop_graph(step).compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}}
        with pytest.raises(SerializationError):
            await graph.ainvoke({"n": 0, "log": []}, config, durability="async")
    batched, single = savers
    held = await stored(batched)
    assert held == await stored(single)
    assert held["langgraph/t/"][-1][0].step == 4  # the last checkpoint before the bad value


async def test_a_node_reading_the_thread_sees_every_earlier_checkpoint(
    savers: tuple[AsyncSqliteSaver, AsyncSqliteSaver], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[Any]] = []
    for saver in savers:
        patch_checkpoint_ids(monkeypatch, _counter())
        reads: list[Any] = []
        seen.append(reads)

        async def step(
            state: State, saver: AsyncSqliteSaver = saver, reads: list[Any] = reads
        ) -> dict[str, Any]:
            history = [t async for t in saver.alist({"configurable": {"thread_id": "t"}})]
            reads.append([(t.metadata["step"], t.checkpoint["channel_values"]) for t in history])
            return {"n": state["n"] + 1, "log": [state["n"]]}

        graph = loop_graph(step).compile(checkpointer=saver)
        await graph.ainvoke(
            {"n": 0, "log": []}, {"configurable": {"thread_id": "t"}}, durability="async"
        )
    assert seen[0] == seen[1]
    assert len(seen[0][-1]) == STEPS + 1  # steps -1 to STEPS - 1, before the last step ran


async def test_a_saver_that_changes_aput_sees_every_save(tmp_path: Path) -> None:
    puts: list[str] = []

    class Counting(AsyncSqliteSaver):
        async def aput(self, config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
            puts.append(checkpoint["id"])
            return await super().aput(config, checkpoint, metadata, versions)

    async with Counting(str(tmp_path / "c.db")) as saver:
        graph = loop_graph().compile(checkpointer=saver)
        await graph.ainvoke(
            {"n": 0, "log": []}, {"configurable": {"thread_id": "t"}}, durability="async"
        )
    assert len(puts) == STEPS + 2  # the input checkpoint, one per step, and the empty one
