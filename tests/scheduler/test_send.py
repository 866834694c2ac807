"""Spec: ``Send`` on a native graph, dynamic map-reduce with native write order.

A router returns ``Send(node, arg)`` (alone, or in a list mixed with node
names); each Send starts one task of ``node`` whose input is ``arg``, in the
next superstep. Writes of one superstep apply in node declaration order, and
between the Send tasks of one node in the order the Sends were returned,
whichever task finishes first. Saved writes are keyed per task, so a resumed
run re-runs only the tasks whose writes were not saved.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from flowcore import (
    END,
    START,
    Checkpoint,
    Graph,
    InMemoryCheckpointer,
    InvalidUpdateError,
    NodeEndEvent,
    NodeStartEvent,
    PendingWrite,
    Resume,
    RoutingError,
    Send,
    SqliteCheckpointer,
    append,
    interrupt,
)
from tests.scheduler.helpers import wait


class MapState(TypedDict):
    items: list[int]
    results: Annotated[list[int], append]
    total: int


def fan_out(state: MapState) -> list[Send]:
    return [Send("work", {"item": x}) for x in state["items"]]


def map_reduce(work: Any, **compile_kw: Any) -> Graph:
    """START -(one Send per item)-> work -> reduce -> END."""

    def reduce(state: MapState) -> dict[str, Any]:
        return {"total": sum(state["results"])}

    return (
        Graph(MapState)
        .add_node("work", work)
        .add_node("reduce", reduce)
        .add_conditional_edges(START, fan_out, ["work"])
        .add_edge("work", "reduce")
        .add_edge("reduce", END)
    )


# ----------------------------------------------------------------- map-reduce
async def test_map_reduce_runs_one_task_per_send_with_its_arg_as_input() -> None:
    seen: list[Any] = []

    def work(arg: dict[str, int]) -> dict[str, Any]:
        seen.append(arg)
        return {"results": [arg["item"] * 10]}

    result = await map_reduce(work).compile().run({"items": [1, 2, 3, 4], "results": []})

    assert result.status == "completed"
    assert sorted(seen, key=lambda a: a["item"]) == [{"item": i} for i in (1, 2, 3, 4)]
    assert result.state["results"] == [10, 20, 30, 40]
    assert result.state["total"] == 100
    # All Send tasks are one superstep; reduce is the next: the limit counts supersteps.
    assert result.supersteps == 2
    assert [r.node for r in result.node_runs] == ["work"] * 4 + ["reduce"]


async def test_send_writes_apply_in_the_order_returned_not_the_order_finished() -> None:
    items = [0, 1, 2, 3]
    finished: list[int] = []
    done = {i: asyncio.Event() for i in items}

    async def work(arg: dict[str, int]) -> dict[str, Any]:
        i = arg["item"]
        if i + 1 in done:  # each task waits for the next one: the last finishes first
            await wait(done[i + 1], f"task {i + 1}")
        finished.append(i)
        done[i].set()
        return {"results": [i]}

    result = await map_reduce(work).compile().run({"items": items, "results": []})

    assert finished == [3, 2, 1, 0]
    assert result.state["results"] == [0, 1, 2, 3]


async def test_sends_to_different_nodes_apply_in_declaration_order_then_send_order() -> None:
    class S(TypedDict):
        log: Annotated[list[str], append]

    def route(state: S) -> list[Any]:
        # b's Sends come first, but a is declared first.
        return [Send("b", "b1"), Send("a", "a1"), Send("b", "b2"), Send("a", "a2")]

    g = (
        Graph(S)
        .add_node("a", lambda arg: {"log": [arg]})
        .add_node("b", lambda arg: {"log": [arg]})
        .add_conditional_edges(START, route, ["a", "b"])
    )
    result = await g.compile().run({"log": []})
    assert result.state["log"] == ["a1", "a2", "b1", "b2"]


async def test_a_router_may_mix_node_names_and_sends() -> None:
    class S(TypedDict):
        log: Annotated[list[str], append]

    def route(state: S) -> list[Any]:
        return ["audit", Send("work", "x"), Send("work", "y")]

    def work(arg: Any) -> dict[str, Any]:
        # Routed by name the node gets the state; by Send, its arg.
        return {"log": [f"work:{arg if isinstance(arg, str) else 'state'}"]}

    g = (
        Graph(S)
        .add_node("plan", lambda s: {"log": ["plan"]})
        .add_node("audit", lambda s: {"log": ["audit"]})
        .add_node("work", work)
        .add_edge(START, "plan")
        .add_conditional_edges("plan", route, ["audit", "work"])
    )
    result = await g.compile().run({"log": []})
    assert result.state["log"] == ["plan", "audit", "work:x", "work:y"]


async def test_a_node_picked_by_name_and_by_send_runs_once_per_trigger() -> None:
    class S(TypedDict):
        log: Annotated[list[str], append]

    def work(arg: Any) -> dict[str, Any]:
        return {"log": [arg if isinstance(arg, str) else "state"]}

    g = (
        Graph(S)
        .add_node("work", work)
        .add_conditional_edges(START, lambda s: ["work", Send("work", "one")], ["work"])
    )
    result = await g.compile().run({"log": []})
    assert result.state["log"] == ["state", "one"]


async def test_no_sends_means_the_target_does_not_run() -> None:
    ran: list[Any] = []

    def work(arg: Any) -> dict[str, Any]:
        ran.append(arg)
        return {"results": [1]}

    result = await map_reduce(work).compile().run({"items": [], "results": []})
    assert result.status == "completed"
    assert ran == []
    assert result.node_runs == ()  # START picked nothing: nothing downstream runs either
    assert result.state["results"] == []


async def test_sends_along_a_loop_start_the_next_pass() -> None:
    class S(TypedDict):
        rounds: Annotated[list[list[int]], append]
        turn: int

    def work(arg: int) -> dict[str, Any]:
        return {"rounds": [[arg]]}

    def collect(state: S) -> dict[str, Any]:
        return {"turn": state["turn"] + 1}

    def again(state: S) -> Any:
        if state["turn"] >= 2:
            return END
        return [Send("work", 10 * state["turn"] + k) for k in range(2)]

    g = (
        Graph(S)
        .add_node("work", work)
        .add_node("collect", collect)
        .add_conditional_edges(START, lambda s: [Send("work", 0), Send("work", 1)], ["work"])
        .add_edge("work", "collect")
        .add_conditional_edges("collect", again, ["work", END])
    )
    result = await g.compile().run({"rounds": [], "turn": 0})
    assert result.status == "completed"
    assert result.state["rounds"] == [[0], [1], [10], [11]]
    assert result.state["turn"] == 2
    assert result.supersteps == 4


async def test_each_send_task_emits_its_own_start_and_end() -> None:
    def work(arg: dict[str, int]) -> dict[str, Any]:
        return {"results": [arg["item"]]}

    async with map_reduce(work).compile().stream({"items": [5, 6, 7], "results": []}) as events:
        seen = [e async for e in events]
    starts = [e.node for e in seen if isinstance(e, NodeStartEvent)]
    ends = [e for e in seen if isinstance(e, NodeEndEvent)]
    assert starts.count("work") == 3
    assert sorted(e.update["results"][0] for e in ends if e.node == "work") == [5, 6, 7]


# --------------------------------------------------------------------- errors
async def test_a_send_to_an_undeclared_target_is_a_routing_error() -> None:
    class S(TypedDict):
        x: int

    def route(state: S) -> Send:
        return Send("b", 1)

    g = (
        Graph(S)
        .add_node("a", lambda s: None)
        .add_node("b", lambda s: None)
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_conditional_edges("a", route, ["a"])
    )
    result = await g.compile().run({"x": 0})
    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, RoutingError)
    assert error.node == "a"
    assert "Send('b', ...)" in str(error)


async def test_two_send_tasks_writing_one_replace_key_name_both_tasks() -> None:
    def work(arg: dict[str, int]) -> dict[str, Any]:
        return {"total": arg["item"]}

    result = await map_reduce(work).compile().run({"items": [1, 2], "results": []})
    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, InvalidUpdateError)
    assert error.nodes == ("work#0", "work#1")
    assert "'work#0' and 'work#1'" in str(error)


async def test_dataflow_mode_refuses_send_with_a_typed_error() -> None:
    def work(arg: dict[str, int]) -> dict[str, Any]:
        return {"results": [arg["item"]]}

    result = await map_reduce(work).compile().run({"items": [1], "results": []}, mode="dataflow")
    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, RoutingError)
    assert "mode='supersteps'" in str(error)


# --------------------------------------------------------- threads and resume
async def test_a_send_task_that_interrupts_resumes_alone() -> None:
    runs: Counter[int] = Counter()

    def work(arg: dict[str, int]) -> dict[str, Any]:
        i = arg["item"]
        runs[i] += 1
        if i == 2:
            answer = interrupt(f"approve {i}?")
            return {"results": [100 + len(answer)]}
        return {"results": [i]}

    store = InMemoryCheckpointer()
    app = map_reduce(work).compile(checkpointer=store)
    first = await app.run({"items": [1, 2, 3], "results": []}, thread_id="t")
    assert first.status == "interrupted"
    (asked,) = first.interrupts
    assert (asked.node, asked.value) == ("work", "approve 2?")
    assert (await app.get_state("t")).next == ("work",)

    second = await app.run(Resume("yes"), thread_id="t")
    assert second.status == "completed"
    assert second.state["results"] == [1, 103, 3]
    assert runs == Counter({1: 1, 2: 2, 3: 1})


async def test_two_send_tasks_of_one_node_ask_apart_and_are_answered_by_id() -> None:
    def work(arg: dict[str, int]) -> dict[str, Any]:
        return {"results": [interrupt(arg["item"])]}

    store = InMemoryCheckpointer()
    app = map_reduce(work).compile(checkpointer=store)
    first = await app.run({"items": [7, 8], "results": []}, thread_id="t")
    assert first.status == "interrupted"
    asked = {i.value: i.id for i in first.interrupts}
    assert set(asked) == {7, 8}
    assert len(set(asked.values())) == 2

    done = await app.run(Resume(by_id={asked[7]: 70, asked[8]: 80}), thread_id="t")
    assert done.status == "completed"
    assert done.state["results"] == [70, 80]


async def test_a_failed_send_task_is_the_only_one_rerun_on_resume(tmp_path: Path) -> None:
    runs: Counter[int] = Counter()
    broken = {4}

    async def work(arg: dict[str, int]) -> dict[str, Any]:
        i = arg["item"]
        runs[i] += 1
        if i in broken:
            raise RuntimeError(f"item {i} is broken")
        return {"results": [i]}

    async with SqliteCheckpointer(tmp_path / "send.db") as store:
        app = map_reduce(work).compile(checkpointer=store)
        # One task at a time, in Send order: the failing last one runs after the others saved.
        first = await app.run(
            {"items": [1, 2, 3, 4], "results": []}, thread_id="t", max_concurrency=1
        )
        assert first.status == "failed"
        assert runs == Counter({1: 1, 2: 1, 3: 1, 4: 1})

        broken.clear()
        second = await app.run(None, thread_id="t")
    assert second.status == "completed"
    assert runs == Counter({1: 1, 2: 1, 3: 1, 4: 2})
    assert second.state["results"] == [1, 2, 3, 4]
    assert second.state["total"] == 10


async def test_update_state_as_the_router_source_keeps_its_sends() -> None:
    class S(TypedDict):
        items: list[int]
        results: Annotated[list[int], append]

    g = (
        Graph(S)
        .add_node("plan", lambda s: None)
        .add_node("work", lambda arg: {"results": [arg]})
        .add_edge(START, "plan")
        .add_conditional_edges("plan", lambda s: [Send("work", x) for x in s["items"]], ["work"])
    )
    store = InMemoryCheckpointer()
    app = g.compile(checkpointer=store, interrupt_before=["plan"])
    assert (await app.run({"items": [], "results": []}, thread_id="t")).status == "interrupted"
    await app.update_state("t", {"items": [4, 5]}, as_node="plan")
    done = await app.run(None, thread_id="t")
    assert done.status == "completed"
    assert done.state["results"] == [4, 5]


async def test_a_thread_saved_before_send_existed_still_resumes() -> None:
    """The pending-write and cursor shapes written before Send, captured from that code."""

    class S(TypedDict):
        log: Annotated[list[str], append]

    ran: list[str] = []

    def a(state: S) -> dict[str, Any]:
        ran.append("a")
        return {"log": ["a"]}

    def ask(state: S) -> dict[str, Any]:
        ran.append("ask")
        return {"log": [f"ask:{interrupt('q?')}"]}

    def c(state: S) -> dict[str, Any]:
        ran.append("c")
        return {"log": ["c"]}

    store = InMemoryCheckpointer()
    head = "18eb1f125170bbfa72245e1453d47cc3"
    await store.put(
        Checkpoint(
            thread_id="t",
            checkpoint_id=head,
            parent_id=None,
            step=0,
            created_at=1795563039.973502,
            writes=(),
            snapshot={"values": {"log": []}, "outputs": {}},
            cursor={
                "input_from": head,
                "pass": 1,
                "roots": ["a", "ask"],
                "base": 0,
                "next": ["a", "ask"],
                "pause": None,
                "res": {},
                "executed": [],
                "poisoned": {},
                "selected": {},
                "next_roots": [],
            },
            metadata={"run_id": "old", "step": 0, "source": "input", "input": {"log": []}},
        )
    )
    await store.put_write(
        "t",
        head,
        PendingWrite(
            "a", {"status": "completed", "update": {"log": ["a"]}, "routes": [], "attempts": 1}
        ),
    )
    await store.put_write(
        "t",
        head,
        PendingWrite(
            "ask",
            {
                "status": "interrupted",
                "interrupt": {"id": "48302d09c7023138", "value": "q?"},
                "resumes": [],
            },
        ),
    )
    app = (
        Graph(S)
        .add_node("a", a)
        .add_node("ask", ask)
        .add_node("c", c)
        .add_edge(START, "a")
        .add_edge(START, "ask")
        .add_edge(["a", "ask"], "c")
        .add_edge("c", END)
        .compile(checkpointer=store)
    )
    (waiting,) = (await app.get_state("t")).interrupts
    assert (waiting.id, waiting.node) == ("48302d09c7023138", "ask")

    done = await app.run(Resume("yes"), thread_id="t")
    assert done.status == "completed"
    assert done.state["log"] == ["a", "ask:yes", "c"]
    assert ran == ["ask", "c"]


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
async def test_send_runs_on_a_thread_in_every_durability_mode(durability: str) -> None:
    def work(arg: dict[str, int]) -> dict[str, Any]:
        return {"results": [arg["item"]]}

    app = map_reduce(work).compile(checkpointer=InMemoryCheckpointer())
    result = await app.run(
        {"items": [3, 1, 2], "results": []},
        thread_id="t",
        durability=durability,  # type: ignore[arg-type]
    )
    assert result.state["results"] == [3, 1, 2]
    assert (await app.get_state("t")).values["total"] == 6
