"""Spec: the v3 building blocks on their own (StreamChannel, StreamMux, transformers).

A channel keeps items only for its one subscriber and forwards named pushes
into the mux's log; the mux runs its transformers in order (``before_builtins``
first) and closes or fails every projection when the run ends.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flowcore.compat.langgraph import (
    GraphInterrupt,
    LifecycleTransformer,
    ProtocolEvent,
    StreamChannel,
    StreamTransformer,
    ValuesTransformer,
)
from flowcore.compat.langgraph._stream_v3_mux import StreamMux
from flowcore.compat.langgraph._stream_v3_types import convert_to_protocol_event


def _event(method: str, data: Any, ns: tuple[str, ...] = ()) -> ProtocolEvent:
    return convert_to_protocol_event({"type": method, "ns": ns, "data": data})


def test_a_channel_keeps_items_only_once_subscribed_and_raises_its_failure_last() -> None:
    channel: StreamChannel[int] = StreamChannel()
    channel._bind(is_async=False)
    channel.push(0)
    reader = iter(channel)
    channel.push(1)
    channel.push(2)
    channel.fail(RuntimeError("end"))
    assert next(reader) == 1
    assert next(reader) == 2
    with pytest.raises(RuntimeError, match="end"):
        next(reader)


def test_a_channel_has_one_subscriber_and_one_lane() -> None:
    channel: StreamChannel[int] = StreamChannel()
    with pytest.raises(TypeError, match="not been bound"):
        iter(channel)
    channel._bind(is_async=True)
    with pytest.raises(TypeError, match="async"):
        iter(channel)
    channel.__aiter__()
    with pytest.raises(RuntimeError, match="subscriber"):
        channel.__aiter__()


def test_tee_gives_every_reader_every_item() -> None:
    channel: StreamChannel[int] = StreamChannel()
    channel._bind(is_async=False)
    left, right = channel.tee(2)
    for i in range(3):
        channel.push(i)
    channel.close()
    assert list(left) == [0, 1, 2]
    assert list(right) == [0, 1, 2]


class _Drop(StreamTransformer):
    before_builtins = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self.named: StreamChannel[str] = StreamChannel("notes")

    def init(self) -> dict[str, Any]:
        return {"notes": self.named}

    def process(self, event: ProtocolEvent) -> bool:
        if event["method"] == "custom":
            self.named.push("saw custom")
            return False
        return True


def test_the_mux_logs_kept_events_and_named_channel_pushes_in_order() -> None:
    mux = StreamMux([ValuesTransformer(), _Drop()])
    assert isinstance(mux._transformers[0], _Drop)  # before_builtins goes first
    log = iter(mux._events)
    mux.push(_event("values", {"n": 1}))
    mux.push(_event("custom", "x"))
    mux.close()
    events = list(log)
    assert [(e["method"], e["seq"]) for e in events] == [("values", 1), ("custom:notes", 2)]
    assert events[1]["params"]["data"] == "saw custom"


def test_conflicting_projection_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="conflict"):
        StreamMux([ValuesTransformer(), ValuesTransformer()])


def test_an_async_only_transformer_is_refused_on_the_sync_lane() -> None:
    class Slow(StreamTransformer):
        def init(self) -> dict[str, Any]:
            return {}

        async def aprocess(self, event: ProtocolEvent) -> bool:
            return True

    with pytest.raises(RuntimeError, match="async"):
        StreamMux([Slow()])
    StreamMux([Slow()], is_async=True)


def test_scheduled_work_finishes_before_the_async_mux_closes() -> None:
    done: list[str] = []

    class Later(StreamTransformer):
        requires_async = True

        def init(self) -> dict[str, Any]:
            return {}

        def process(self, event: ProtocolEvent) -> bool:
            async def work() -> None:
                await asyncio.sleep(0)
                done.append(event["method"])

            self.schedule(work())
            return True

    async def main() -> None:
        mux = StreamMux([Later()], is_async=True)
        await mux.apush(_event("values", {}))
        await mux.aclose()

    asyncio.run(main())
    assert done == ["values"]


def test_lifecycle_reads_a_subgraph_from_tasks_events_and_ends_it_on_interrupt() -> None:
    mux = StreamMux([LifecycleTransformer()])
    lifecycle = iter(mux.extensions["lifecycle"])
    mux.push(_event("tasks", {"id": "t1", "name": "inner", "input": {}}, ("inner:t1",)))
    mux.fail(GraphInterrupt(()))
    assert [next(lifecycle)["event"], next(lifecycle)["event"]] == ["started", "interrupted"]
    with pytest.raises(GraphInterrupt):
        next(lifecycle)  # the channel then ends with the run's error
