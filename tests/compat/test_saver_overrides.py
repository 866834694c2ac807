"""Savers that override one method, and serdes that fail: what a run calls and raises.

LangGraph lets a saver subclass change a single method (a faulty or counting
test saver, a custom version scheme) and lets code catch what its own serde
raised. Runs on the compat layer call those methods as LangGraph's loop
does, and a builder changed after ``compile()`` warns instead of refusing.
"""

from __future__ import annotations

import logging
import operator
import pickle
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import END, START, InMemorySaver, StateGraph
from flowcore.errors import SerializationError


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _step(name: str) -> Any:
    def node(state: State) -> dict[str, Any]:
        return {"log": [name]}

    return node


def _chain(*names: str) -> StateGraph[Any, Any, Any, Any]:
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(State)
    previous = START
    for name in names:
        builder.add_node(name, _step(name))
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder


def _cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


async def test_an_async_run_reads_through_a_get_tuple_the_subclass_overrides() -> None:
    class CountingSaver(InMemorySaver):
        reads = 0

        def get_tuple(self, config: Any) -> Any:
            type(self).reads += 1
            return super().get_tuple(config)

    app = _chain("a").compile(checkpointer=CountingSaver())
    assert await app.ainvoke({"log": []}, _cfg("t")) == {"log": ["a"]}
    assert CountingSaver.reads >= 1

    class FaultySaver(InMemorySaver):
        def get_tuple(self, config: Any) -> Any:
            raise ValueError("no reads today")

    app = _chain("a").compile(checkpointer=FaultySaver())
    with pytest.raises(ValueError, match="no reads today"):
        await app.ainvoke({"log": []}, _cfg("t"))


def test_a_saver_with_its_own_get_next_version_numbers_every_channel_version() -> None:
    class LabelledSaver(InMemorySaver):
        def get_next_version(self, current: Any, channel: Any = None) -> str:
            count = 0 if current is None else int(str(current).removeprefix("v"))
            return f"v{count + 1:04d}"

    saver = LabelledSaver()
    app = _chain("a", "b").compile(checkpointer=saver)
    app.invoke({"log": []}, _cfg("t"))
    versions = saver.get_tuple(_cfg("t")).checkpoint["channel_versions"]
    assert versions
    assert all(str(v).startswith("v") for v in versions.values())
    assert versions["log"] == max(versions.values())

    class FaultyVersions(InMemorySaver):
        def get_next_version(self, current: Any, channel: Any = None) -> Any:
            raise ValueError("no versions today")

    app = _chain("a").compile(checkpointer=FaultyVersions())
    with pytest.raises(ValueError, match="no versions today"):
        app.invoke({"log": []}, _cfg("t"))


def test_a_put_writes_written_before_task_path_existed_gets_three_arguments() -> None:
    calls: list[tuple[Any, ...]] = []

    class OldSaver(InMemorySaver):
        def put_writes(self, config: Any, writes: Any, task_id: str) -> None:  # type: ignore[override]
            calls.append((task_id, list(writes)))
            super().put_writes(config, writes, task_id)

    builder = _chain("a")
    builder.add_node("b", _step("b"))
    builder.add_edge(START, "b")
    app = builder.compile(checkpointer=OldSaver())
    out = app.invoke({"log": []}, _cfg("t"), durability="async")
    assert sorted(out["log"]) == ["a", "b"]
    assert {w[0] for _, writes in calls for w in writes} >= {"log"}


class RefusingSerde:
    """A LangGraph-style serde that refuses every value with a ValueError."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        raise ValueError("this serde refuses everything")

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return pickle.loads(data[1])


def test_a_serdes_own_error_is_both_its_type_and_a_serialization_error() -> None:
    saver = InMemorySaver(serde=RefusingSerde())
    app = _chain("a").compile(checkpointer=saver)
    with pytest.raises(ValueError, match="this serde refuses everything") as caught:
        app.invoke({"log": []}, _cfg("t"))
    assert isinstance(caught.value, SerializationError)
    assert "RefusingSerde" in str(caught.value)
    assert saver.get_tuple(_cfg("t")) is None


def test_changing_a_builder_after_compile_warns_and_only_a_new_compile_sees_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    builder = _chain("a")
    first = builder.compile()
    with caplog.at_level(logging.WARNING, logger="flowcore.compat.langgraph"):
        builder.add_node("b", _step("b"))
        builder.add_edge(START, "b")
    warned = [r.getMessage() for r in caplog.records]
    assert any("add_node() on a StateGraph that was already compiled" in m for m in warned)
    assert any("add_edge()" in m for m in warned)
    assert first.invoke({"log": []}) == {"log": ["a"]}
    assert sorted(builder.compile().invoke({"log": []})["log"]) == ["a", "b"]
