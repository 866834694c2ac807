"""Spec: cancelling a run stops its nodes and leaves nothing running.

Cancelling the task that awaits ``run()`` cancels every in-flight node and
re-raises ``CancelledError`` to the caller. ``RunStream.cancel()`` and
leaving ``async with compiled.stream(...)`` early cancel the run too; the
stream still ends with exactly one ``done`` event, status ``cancelled``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any, TypedDict

import pytest

from flowcore import START, DoneEvent, Graph, NodeContext, NodeStartEvent, RetryPolicy, append

from .helpers import GUARD, MODES, guarded, guarded_events, wait


class State(TypedDict):
    log: Annotated[list[str], append]


class Hanging:
    """Async nodes that block until cancelled, recording what they observe."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.started: list[str] = []
        self.observed: list[str] = []
        self.all_started = asyncio.Event()

    def node(self, name: str) -> Any:
        async def hang(state: Any) -> dict[str, Any]:
            self.started.append(name)
            if len(self.started) == self.count:
                self.all_started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.observed.append(f"{name}:cancelled")
                raise
            finally:
                self.observed.append(f"{name}:finally")
            return {"log": [name]}

        return hang

    def graph(self) -> Graph:
        graph = Graph(State)
        graph.add_node("after", lambda s: {"log": ["after"]})
        for i in range(self.count):
            name = f"h{i}"
            graph.add_node(name, self.node(name))
            graph.add_edge(START, name).add_edge(name, "after")
        return graph


async def settle() -> None:
    """Let callbacks of finished tasks run."""
    for _ in range(3):
        await asyncio.sleep(0)


def other_tasks() -> set[asyncio.Task[Any]]:
    return asyncio.all_tasks() - {asyncio.current_task()}


@pytest.mark.parametrize("width", [1, 3])
@pytest.mark.parametrize("mode", MODES)
async def test_cancelling_the_caller_cancels_in_flight_nodes(mode: str, width: int) -> None:
    h = Hanging(width)
    compiled = h.graph().compile()
    task = asyncio.create_task(compiled.run({}, mode=mode))  # type: ignore[arg-type]
    await wait(h.all_started, "every node to start")

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await guarded(task, "the cancelled run to finish")
    await settle()

    assert sorted(h.observed) == sorted(
        f"h{i}:{what}" for i in range(width) for what in ("cancelled", "finally")
    )
    assert other_tasks() == set()


async def test_run_can_be_cancelled_with_a_timeout_around_it() -> None:
    h = Hanging(2)
    compiled = h.graph().compile()

    async def expire_once_both_nodes_run(scope: asyncio.Timeout) -> None:
        # A fixed 50 ms timeout could fire before h1 started on a busy machine.
        await wait(h.all_started, "both nodes to start")
        scope.reschedule(asyncio.get_running_loop().time())

    scope = asyncio.timeout(None)
    expiring = asyncio.create_task(expire_once_both_nodes_run(scope))
    with pytest.raises(TimeoutError):
        async with scope:
            await compiled.run({})
    await guarded(expiring, "the timeout to be set")
    await settle()

    assert sorted(h.observed) == ["h0:cancelled", "h0:finally", "h1:cancelled", "h1:finally"]
    assert other_tasks() == set()


@pytest.mark.parametrize("mode", MODES)
async def test_stream_cancel_still_ends_with_one_cancelled_done_event(mode: str) -> None:
    h = Hanging(2)
    compiled = h.graph().compile()
    events = []

    async with compiled.stream({}, mode=mode) as stream:  # type: ignore[arg-type]
        async for event in guarded_events(stream):
            events.append(event)
            if isinstance(event, NodeStartEvent) and event.node == "h0":
                await wait(h.all_started, "both node bodies to start")
                stream.cancel()
        result = await guarded(stream.result(), "the result of a cancelled stream")

    done = [e for e in events if isinstance(e, DoneEvent)]
    assert len(done) == 1
    assert events[-1] is done[0]
    assert done[0].status == "cancelled"
    assert result.status == "cancelled"
    assert result.state == done[0].state
    assert sorted(h.observed) == ["h0:cancelled", "h0:finally", "h1:cancelled", "h1:finally"]
    await settle()
    assert other_tasks() == set()


@pytest.mark.parametrize("mode", MODES)
async def test_leaving_the_stream_block_early_cancels_the_run(mode: str) -> None:
    h = Hanging(1)
    compiled = h.graph().compile()

    async with compiled.stream({}, mode=mode) as stream:  # type: ignore[arg-type]
        async for event in guarded_events(stream):
            if isinstance(event, NodeStartEvent):
                await wait(h.all_started, "the node body to start")
                break
    await settle()

    assert h.observed == ["h0:cancelled", "h0:finally"]
    assert "after" not in h.started
    assert other_tasks() == set()
    result = await stream.result()
    assert result.status == "cancelled"


async def test_an_exception_inside_the_stream_block_cancels_the_run_and_propagates() -> None:
    h = Hanging(1)
    compiled = h.graph().compile()

    async def consume() -> None:
        async with compiled.stream({}) as stream:
            async for event in guarded_events(stream):
                if isinstance(event, NodeStartEvent):
                    await wait(h.all_started, "the node body to start")
                    raise LookupError("consumer broke")

    with pytest.raises(LookupError, match="consumer broke"):
        await consume()
    await settle()

    assert h.observed == ["h0:cancelled", "h0:finally"]
    assert other_tasks() == set()


async def test_cancelling_a_run_with_a_blocked_sync_node_does_not_hang() -> None:
    # A thread cannot be cancelled; the run must still stop waiting for it.
    loop = asyncio.get_running_loop()
    in_thread = asyncio.Event()
    release = threading.Event()
    finished = threading.Event()

    def blocking(state: Any) -> dict[str, Any]:
        loop.call_soon_threadsafe(in_thread.set)
        release.wait(GUARD)
        finished.set()
        return {"log": ["blocking"]}

    graph = Graph(State).add_node("blocking", blocking).add_edge(START, "blocking")
    task = asyncio.create_task(graph.compile().run({}))
    try:
        await wait(in_thread, "the sync node to start")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await guarded(task, "the cancelled run to finish")
        # The run gave up on the thread while it was still blocked.
        assert not finished.is_set()
    finally:
        release.set()
        # Let the worker thread finish so the loop's executor can shut down.
        assert await asyncio.to_thread(finished.wait, GUARD)


async def test_leaving_a_stream_with_a_blocked_sync_node_does_not_hang() -> None:
    loop = asyncio.get_running_loop()
    in_thread = asyncio.Event()
    release = threading.Event()
    finished = threading.Event()

    def blocking(state: Any) -> dict[str, Any]:
        loop.call_soon_threadsafe(in_thread.set)
        release.wait(GUARD)
        finished.set()
        return {"log": ["blocking"]}

    graph = Graph(State).add_node("blocking", blocking).add_edge(START, "blocking")
    try:
        async with graph.compile().stream({}) as stream:
            async for event in guarded_events(stream):
                if isinstance(event, NodeStartEvent):
                    await wait(in_thread, "the sync node to start")
                    break
        result = await guarded(stream.result(), "the cancelled stream's result")
        assert result.status == "cancelled"
        assert not finished.is_set()
    finally:
        release.set()
        assert await asyncio.to_thread(finished.wait, GUARD)


@pytest.mark.parametrize("phase", ["attempt", "backoff"])
async def test_cancellation_is_not_retried_by_a_retry_policy(phase: str) -> None:
    # Cancelling must stop a node during an attempt and during the wait
    # between attempts, and never count as a failure to retry.
    attempts: list[int] = []
    in_phase = asyncio.Event()

    async def node(state: Any, ctx: NodeContext) -> dict[str, Any]:
        attempts.append(ctx.attempt)
        if phase == "backoff":
            in_phase.set()
            raise ConnectionError("fail, then wait 10 s before the retry")
        in_phase.set()
        await asyncio.Event().wait()
        return {"log": ["never"]}

    policy = RetryPolicy(max_attempts=3, initial_interval=10.0, retry_on=Exception)
    graph = Graph(State).add_node("node", node, retry=policy).add_edge(START, "node")
    task = asyncio.create_task(graph.compile().run({}))
    await wait(in_phase, f"the node to reach its {phase}")
    await settle()

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await guarded(task, "the cancelled run to finish")
    await settle()

    assert attempts == [1]
    assert other_tasks() == set()


async def test_cancel_before_the_stream_starts_runs_no_node() -> None:
    # cancel() is a request to stop the run; asked before the first event
    # is read, it must not be forgotten when the run starts.
    ran: list[str] = []

    def node(state: Any) -> dict[str, Any]:
        ran.append("node")
        return {"log": ["node"]}

    stream = Graph(State).add_node("node", node).add_edge(START, "node").compile().stream({})
    stream.cancel()

    events = [event async for event in guarded_events(stream)]
    result = await guarded(stream.result(), "the result of a stream cancelled before it began")

    assert ran == []
    assert not any(isinstance(e, NodeStartEvent) for e in events)
    assert isinstance(events[-1], DoneEvent)
    assert events[-1].status == "cancelled"
    assert result.status == "cancelled"
