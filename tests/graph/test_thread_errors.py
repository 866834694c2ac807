"""Spec: a thread asked to do something it cannot fails clearly and keeps its data.

Each case raises a typed error naming what is wrong and how to go on, and
the stored history is the same afterwards.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest

from flowcore import (
    START,
    Checkpointer,
    CheckpointNotFoundError,
    Graph,
    InMemoryCheckpointer,
    InvalidInputError,
    Resume,
    ResumeError,
    SerializationError,
    SqliteCheckpointer,
    append,
    interrupt,
)


class State(TypedDict):
    log: Annotated[list[str], append]
    blob: Any


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    if request.param == "memory":
        yield InMemoryCheckpointer()
        return
    async with SqliteCheckpointer(tmp_path / "threads.db") as opened:
        yield opened


def build(store: Checkpointer, *, ask: bool = False, bad_value: bool = False) -> Any:
    def first(state: Any) -> dict[str, Any]:
        return {"log": ["first"]}

    def second(state: Any) -> dict[str, Any]:
        if ask:
            interrupt("ok?")
        if bad_value:
            return {"blob": object()}
        return {"log": ["second"]}

    graph = Graph(State).add_node("first", first).add_node("second", second)
    graph.add_edge(START, "first").add_edge("first", "second")
    return graph.compile(checkpointer=store)


async def history_ids(app: Any, thread: str) -> list[str]:
    return [s.checkpoint_id for s in await app.get_state_history(thread)]


async def test_resuming_an_unknown_thread(store: Checkpointer) -> None:
    app = build(store)

    with pytest.raises(ResumeError, match="no checkpoints") as info:
        await app.run(None, thread_id="nobody")

    assert info.value.thread_id == "nobody"
    assert "run(input, thread_id=...)" in str(info.value)
    assert await store.history("nobody") == []


async def test_resuming_a_completed_run(store: Checkpointer) -> None:
    app = build(store)
    await app.run({"log": []}, thread_id="t")
    before = await history_ids(app, "t")

    with pytest.raises(ResumeError, match="finished its run"):
        await app.run(None, thread_id="t")

    assert await history_ids(app, "t") == before


async def test_answering_when_nothing_is_interrupted(store: Checkpointer) -> None:
    app = build(store)
    await app.run({"log": []}, thread_id="t")
    before = await history_ids(app, "t")

    with pytest.raises(ResumeError, match="not waiting for an answer"):
        await app.run(Resume("yes"), thread_id="t")

    assert await history_ids(app, "t") == before


async def test_continuing_an_interrupted_thread_without_an_answer(store: Checkpointer) -> None:
    app = build(store, ask=True)
    paused = await app.run({"log": []}, thread_id="t")
    assert paused.status == "interrupted"
    before = await history_ids(app, "t")

    with pytest.raises(ResumeError, match=r"Resume\(value\)"):
        await app.run(None, thread_id="t")
    with pytest.raises(ResumeError, match="has not finished"):
        await app.run({"log": ["new"]}, thread_id="t")

    assert await history_ids(app, "t") == before
    done = await app.run(Resume("yes"), thread_id="t")
    assert done.state["log"] == ["first", "second"]


async def test_a_checkpoint_id_from_another_thread(store: Checkpointer) -> None:
    app = build(store)
    await app.run({"log": []}, thread_id="a")
    await app.run({"log": []}, thread_id="b")
    foreign = (await app.get_state("a")).checkpoint_id
    before = await history_ids(app, "b")

    with pytest.raises(CheckpointNotFoundError) as info:
        await app.run(None, thread_id="b", checkpoint_id=foreign)

    assert info.value.thread_id == "b"
    assert info.value.checkpoint_id == foreign
    assert await history_ids(app, "b") == before


async def test_an_unserialisable_value_fails_the_run_and_keeps_the_thread(
    store: Checkpointer,
) -> None:
    # The write of a step's last node is stored with the checkpoint after it
    # (one commit per step), so storing that checkpoint is what fails.
    app = build(store, bad_value=True)

    result = await app.run({"log": []}, thread_id="t")

    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, SerializationError)
    assert "blob" in str(error)
    snap = await app.get_state("t")
    assert snap.values["log"] == ["first"]  # the step before the failure is intact
    assert snap.next == ("second",)


async def test_thread_options_that_cannot_work_are_invalid_input(store: Checkpointer) -> None:
    plain = Graph(State).add_node("n", lambda s: None).add_edge(START, "n").compile()
    app = build(store)

    with pytest.raises(InvalidInputError, match="no checkpointer"):
        await plain.run({}, thread_id="t")
    with pytest.raises(InvalidInputError, match="supersteps"):
        await app.run({}, thread_id="t", mode="dataflow")
    with pytest.raises(InvalidInputError, match="durability"):
        await app.run({}, thread_id="t", durability="later")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="thread_id"):
        await app.run(Resume("x"))
    assert await store.history("t") == []
