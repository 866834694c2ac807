"""Spec: resuming a thread re-runs only what has no saved result; pauses and forks.

Nodes count their executions in a list, so "ran once" is checked, not assumed.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, TypedDict

import pytest

from flowcore import (
    START,
    Graph,
    InMemoryCheckpointer,
    InterruptEvent,
    Resume,
    ResumeError,
    append,
    interrupt,
)


class State(TypedDict):
    log: Annotated[list[str], append]


DURABILITIES = ("sync", "async", "exit")


def fan(ran: list[str], *, fail_once: set[str] | None = None, gate: Any = None) -> Graph:
    """start -> (a, b, c) -> end; b fails once if asked; c may wait on a gate."""
    fail_once = set() if fail_once is None else fail_once

    siblings_done = asyncio.Event()

    def make(name: str) -> Any:
        async def node(state: Any) -> dict[str, Any]:
            ran.append(name)
            if name in fail_once:
                fail_once.discard(name)
                # Fail only once the other two have finished, so fail_fast has
                # nothing in flight to cancel.
                await asyncio.wait_for(siblings_done.wait(), 30)  # only hit on failure
                raise RuntimeError(f"{name} broke")
            if name in ("a", "c") and {"a", "c"} <= set(ran):
                asyncio.get_running_loop().call_soon(siblings_done.set)
            if gate is not None and name == "c":
                await gate.wait()
            return {"log": [name]}

        return node

    graph = Graph(State)
    for name in ("start", "a", "b", "c", "end"):
        graph.add_node(name, make(name))
    graph.add_edge(START, "start")
    for name in ("a", "b", "c"):
        graph.add_edge("start", name)
    graph.add_edge(["a", "b", "c"], "end")
    return graph


@pytest.mark.parametrize("durability", DURABILITIES)
async def test_after_a_failed_sibling_only_the_failed_node_runs_again(durability: str) -> None:
    ran: list[str] = []
    app = fan(ran, fail_once={"b"}).compile(checkpointer=InMemoryCheckpointer())

    failed = await app.run({}, thread_id="t", durability=durability)
    assert failed.status == "failed"
    assert sorted(ran) == ["a", "b", "c", "start"]
    ran.clear()

    done = await app.run(None, thread_id="t", durability=durability)

    assert done.status == "completed"
    assert ran == ["b", "end"]
    assert done.state["log"] == ["start", "a", "b", "c", "end"]


async def test_a_cancelled_run_resumes_without_rerunning_finished_siblings() -> None:
    ran: list[str] = []
    gate = asyncio.Event()
    store = InMemoryCheckpointer()
    app = fan(ran, gate=gate).compile(checkpointer=store)

    task = asyncio.create_task(app.run({}, thread_id="t"))
    # Wait until a's and b's results are saved while c is stuck at its gate.
    saved: set[str] = set()
    while saved != {"a", "b"}:
        await asyncio.sleep(0.005)
        head = await store.get("t")
        if head is not None:
            saved = {w.node for w in await store.get_writes("t", head.checkpoint_id)}
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    ran.clear()
    gate.set()

    done = await app.run(None, thread_id="t")

    assert ran == ["c", "end"]
    assert done.state["log"] == ["start", "a", "b", "c", "end"]


async def test_the_nth_interrupt_call_returns_the_nth_answer() -> None:
    entered: list[int] = []

    def ask(state: Any) -> dict[str, Any]:
        entered.append(1)  # runs again on every resume
        first = interrupt("name?")
        second = interrupt("age?")
        return {"log": [f"{first}:{second}"]}

    app = Graph(State).add_node("ask", ask).add_edge(START, "ask")
    compiled = app.compile(checkpointer=InMemoryCheckpointer())

    one = await compiled.run({}, thread_id="t")
    two = await compiled.run(Resume("ada"), thread_id="t")
    three = await compiled.run(Resume(36), thread_id="t")

    assert [i.value for i in one.interrupts] == ["name?"]
    assert [i.value for i in two.interrupts] == ["age?"]
    assert three.status == "completed"
    assert three.state["log"] == ["ada:36"]
    assert len(entered) == 3


async def test_several_interrupts_in_one_superstep_are_answered_by_id() -> None:
    def asker(name: str) -> Any:
        async def node(state: Any) -> dict[str, Any]:
            return {"log": [f"{name}={interrupt(name)}"]}

        return node

    graph = Graph(State).add_node("x", asker("x")).add_node("y", asker("y"))
    graph.add_edge(START, "x").add_edge(START, "y")
    app = graph.compile(checkpointer=InMemoryCheckpointer())
    events = []
    async with app.stream({}, thread_id="t") as stream:
        events = [e async for e in stream]
    paused = await stream.result()
    ids = {i.node: i.id for i in paused.interrupts}

    assert paused.status == "interrupted"
    assert sorted(e.node for e in events if isinstance(e, InterruptEvent)) == ["x", "y"]
    with pytest.raises(ResumeError, match="by_id"):
        await app.run(Resume("both?"), thread_id="t")
    done = await app.run(Resume(by_id={ids["x"]: 1, ids["y"]: 2}), thread_id="t")
    assert done.state["log"] == ["x=1", "y=2"]


async def test_an_except_exception_in_the_node_does_not_swallow_the_pause() -> None:
    def careful(state: Any) -> dict[str, Any]:
        try:
            answer = interrupt("go?")
        except Exception:
            answer = "swallowed"
        return {"log": [answer]}

    app = Graph(State).add_node("careful", careful).add_edge(START, "careful")
    compiled = app.compile(checkpointer=InMemoryCheckpointer())

    assert (await compiled.run({}, thread_id="t")).status == "interrupted"
    assert (await compiled.run(Resume("go"), thread_id="t")).state["log"] == ["go"]


@pytest.mark.parametrize("durability", DURABILITIES)
async def test_static_pauses_before_and_after_named_nodes(durability: str) -> None:
    ran: list[str] = []
    app = fan(ran).compile(
        checkpointer=InMemoryCheckpointer(), interrupt_before=["end"], interrupt_after=["start"]
    )

    first = await app.run({}, thread_id="t", durability=durability)
    assert (first.status, ran) == ("interrupted", ["start"])
    assert (await app.get_state("t")).next == ("a", "b", "c")
    second = await app.run(None, thread_id="t", durability=durability)
    assert second.status == "interrupted"
    assert (await app.get_state("t")).next == ("end",)
    assert "end" not in ran
    third = await app.run(None, thread_id="t", durability=durability)

    assert third.status == "completed"
    assert sorted(ran) == ["a", "b", "c", "end", "start"]


async def test_a_fork_starts_a_new_branch_and_leaves_the_old_history_intact() -> None:
    ran: list[str] = []
    app = fan(ran).compile(checkpointer=InMemoryCheckpointer())
    await app.run({}, thread_id="t")
    old = await app.get_state_history("t")
    before_fan = next(s for s in old if s.next == ("a", "b", "c"))

    await app.update_state("t", {"log": ["edited"]}, checkpoint_id=before_fan.checkpoint_id)
    forked = await app.run(None, thread_id="t")

    assert forked.state["log"] == ["start", "edited", "a", "b", "c", "end"]
    for snap in old:
        again = await app.get_state("t", snap.checkpoint_id)
        assert again.values == snap.values
    newest = await app.get_state_history("t")
    assert len(newest) > len(old)


async def test_update_state_goes_through_the_reducers_and_keeps_next() -> None:
    ran: list[str] = []
    app = fan(ran).compile(checkpointer=InMemoryCheckpointer(), interrupt_before=["end"])
    await app.run({}, thread_id="t")

    await app.update_state("t", {"log": ["note"]})
    snap = await app.get_state("t")

    assert snap.values["log"] == ["start", "a", "b", "c", "note"]
    assert snap.next == ("end",)


async def test_siblings_that_finished_beside_an_interrupt_keep_their_writes() -> None:
    ran: list[str] = []

    def ask(state: Any) -> dict[str, Any]:
        ran.append("ask")
        return {"log": [f"answer={interrupt('?')}"]}

    def sibling(state: Any) -> dict[str, Any]:
        ran.append("sibling")
        return {"log": ["sibling"]}

    graph = Graph(State).add_node("ask", ask).add_node("sibling", sibling)
    graph.add_edge(START, "ask").add_edge(START, "sibling")
    app = graph.compile(checkpointer=InMemoryCheckpointer())

    paused = await app.run({}, thread_id="t")
    saved = await app.get_state("t")
    done = await app.run(Resume(42), thread_id="t")

    assert paused.status == "interrupted"
    assert saved.values["log"] == []  # the step is applied when all of it has answered
    assert done.state["log"] == ["answer=42", "sibling"]
    assert ran.count("sibling") == 1
    assert ran.count("ask") == 2
