"""Spec: ``InMemorySaver`` takes LangGraph's constructor surface, and a subclass shaped like
LangGraph's own test fixture runs graphs on it.

LangGraph's users (and its test suite's ``memory`` checkpointer) build
``InMemorySaver(serde=..., factory=partial(PersistentDict, filename=...))``,
register cleanups on ``saver.stack``, read and set ``saver.serde``, and
override ``put`` around ``super().get``/``super().put``. Here: values go
through the given serde, the storage comes from the factory (a
``PersistentDict`` writes its file when the saver's context ends), the stack
is closed then, and a fixture-shaped subclass survives interrupts and resumes.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import uuid
from functools import partial
from pathlib import Path
from typing import Any, TypedDict

import pytest

from flowcore.checkpoint import JsonSerializer
from flowcore.compat.langgraph import (
    END,
    START,
    Command,
    InMemorySaver,
    PersistentDict,
    StateGraph,
    interrupt,
)
from flowcore.errors import InvalidInputError, SerializationError


class PickleSerde:
    """A LangGraph-style serde that counts its calls and refuses one marked value."""

    def __init__(self) -> None:
        self.dumped = 0
        self.loaded = 0

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if "refuse me" in repr(obj):
            raise ValueError("this serde refuses the marked value")
        self.dumped += 1
        return "pickle", pickle.dumps(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, blob = data
        assert kind == "pickle"
        self.loaded += 1
        return pickle.loads(blob)


class State(TypedDict):
    answers: list[str]


def ask(topic: str) -> Any:
    def node(state: State) -> dict[str, list[str]]:
        answer = interrupt(f"what about {topic}?")
        return {"answers": [*state["answers"], f"{topic}={answer}"]}

    return node


def build(saver: Any) -> Any:
    graph = StateGraph(State)
    graph.add_node("first", ask("a"))
    graph.add_node("second", ask("b"))
    graph.add_edge(START, "first")
    graph.add_edge("first", "second")
    graph.add_edge("second", END)
    return graph.compile(checkpointer=saver)


def cfg(thread: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


class CheckedSaver(InMemorySaver):
    """Shaped like LangGraph's fixture: a file-backed store, and ``put`` checks that no
    saved checkpoint changed since it was stored (through ``self.serde``)."""

    def __init__(self, *, serde: Any = None) -> None:
        handle, filename = tempfile.mkstemp()
        os.close(handle)
        super().__init__(serde=serde, factory=partial(PersistentDict, filename=filename))
        self.filename = filename
        self.copies: dict[tuple[str, str, str], Any] = {}
        self.checked = 0
        self.cleaned = False
        self.stack.callback(self._clean)

    def _clean(self) -> None:
        # Runs before the PersistentDict's own close (the stack unwinds last in, first out),
        # which writes the file again, as with LangGraph's saver: only the call is checked.
        self.cleaned = True

    def put(
        self,
        config: dict[str, Any],
        checkpoint: Any,
        metadata: Any,
        new_versions: Any,
    ) -> dict[str, Any]:
        conf = config["configurable"]
        thread, ns = conf["thread_id"], conf["checkpoint_ns"]
        before = super().get(config)
        if before is not None:
            assert self.serde.loads_typed(self.copies[thread, ns, before["id"]]) == before
            self.checked += 1
        saved = super().put(config, checkpoint, metadata, new_versions)
        self.copies[thread, ns, checkpoint["id"]] = self.serde.dumps_typed(super().get(saved))
        return saved


# ---------------------------------------------------------------------- serde


def test_values_go_through_the_serde_given() -> None:
    serde = PickleSerde()
    app = build(InMemorySaver(serde=serde))
    app.invoke({"answers": []}, cfg("t"))
    assert serde.dumped > 0
    loaded = serde.loaded
    assert app.get_state(cfg("t")).values == {"answers": []}
    assert serde.loaded > loaded


def test_a_value_the_serde_refuses_is_a_serialization_error_and_nothing_is_saved() -> None:
    saver = InMemorySaver(serde=PickleSerde())
    app = build(saver)
    with pytest.raises(SerializationError, match="PickleSerde"):
        app.invoke({"answers": ["refuse me"]}, cfg("t"))
    assert saver.get_tuple(cfg("t")) is None


def test_the_serde_attribute_is_the_one_given_and_can_be_set_before_use() -> None:
    given = PickleSerde()
    assert InMemorySaver(serde=given).serde is given
    saver = InMemorySaver()
    later = PickleSerde()
    saver.serde = later
    assert saver.serde is later
    build(saver).invoke({"answers": []}, cfg("t"))
    assert later.dumped > 0


@pytest.mark.parametrize("saver", [InMemorySaver(), InMemorySaver(serializer=JsonSerializer())])
def test_flowcore_serializers_show_a_typed_serde(saver: InMemorySaver) -> None:
    value = {"pair": (1, 2), "nested": {"x": [1.5, None]}}
    kind, blob = saver.serde.dumps_typed(value)
    assert (kind, type(blob)) == ("flowcore", bytes)
    assert saver.serde.loads_typed((kind, blob)) == value
    with pytest.raises(SerializationError, match="'msgpack'"):
        saver.serde.loads_typed(("msgpack", blob))
    # Setting the view back keeps the flowcore serializer (and its errors).
    saver.serde = saver.serde
    with pytest.raises(SerializationError):
        build(saver).invoke({"answers": [object()]}, cfg("t"))  # type: ignore[list-item]


def test_the_constructor_refuses_two_serializers_and_a_serde_without_its_methods() -> None:
    with pytest.raises(InvalidInputError, match="not both"):
        InMemorySaver(serde=PickleSerde(), serializer=JsonSerializer())
    with pytest.raises(InvalidInputError, match="dumps_typed"):
        InMemorySaver(serde=JsonSerializer())


def test_langgraphs_own_serde_round_trips_a_run() -> None:
    jsonplus = pytest.importorskip("langgraph.checkpoint.serde.jsonplus")
    app = build(InMemorySaver(serde=jsonplus.JsonPlusSerializer()))
    app.invoke({"answers": []}, cfg("t"))
    app.invoke(Command(resume="yes"), cfg("t"))
    assert app.get_state(cfg("t")).values == {"answers": ["a=yes"]}


# ---------------------------------------------------------------------- factory and stack


def test_a_persistent_dict_factory_writes_the_threads_when_the_saver_closes(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "threads.pickle")
    closed: list[str] = []
    with InMemorySaver(factory=partial(PersistentDict, filename=path)) as saver:
        saver.stack.callback(closed.append, "stack")
        build(saver).invoke({"answers": []}, cfg("t"))
        assert not os.path.exists(path)  # written on close, not on every put
    assert closed == ["stack"]
    stored = PersistentDict(filename=path)
    stored.load()
    reopened = InMemorySaver(factory=lambda: stored)
    app = build(reopened)
    assert app.get_state(cfg("t")).next == ("first",)
    app.invoke(Command(resume="yes"), cfg("t"))
    assert app.get_state(cfg("t")).values == {"answers": ["a=yes"]}


async def test_the_stack_closes_when_an_async_with_block_ends(tmp_path: Path) -> None:
    store = PersistentDict(filename=str(tmp_path / "threads.pickle"))
    async with InMemorySaver(factory=lambda: store) as saver:
        await build(saver).ainvoke({"answers": []}, cfg("t"))
        assert store
    assert not store  # closed: written to its file, then emptied
    written = PersistentDict(filename=store.filename)
    written.load()
    assert written.keys() == {"langgraph/t/"}


def test_a_plain_mapping_factory_holds_the_threads() -> None:
    store: dict[str, Any] = {}
    saver = InMemorySaver(factory=lambda: store)
    build(saver).invoke({"answers": []}, cfg("t"))
    assert store  # what the saver holds lives in the mapping the factory built
    assert InMemorySaver(factory=lambda: store).get_tuple(cfg("t")) is not None


# ---------------------------------------------------------------------- the fixture's shape


@pytest.mark.parametrize("serde", [None, PickleSerde()], ids=["default", "serde"])
def test_a_fixture_shaped_subclass_runs_interrupts_and_resumes(serde: Any) -> None:
    with CheckedSaver(serde=serde) as saver:
        app = build(saver)
        first = app.invoke({"answers": []}, cfg("t"))
        assert [i.value for i in first["__interrupt__"]] == ["what about a?"]
        app.invoke(Command(resume="1"), cfg("t"))
        app.invoke(Command(resume="2"), cfg("t"))
        assert app.get_state(cfg("t")).values == {"answers": ["a=1", "b=2"]}
        assert saver.checked > 0
        assert not saver.cleaned
    assert saver.cleaned  # the subclass's cleanup ran with the stack
    assert os.path.getsize(saver.filename) > 0  # and the store was written on close
    os.remove(saver.filename)


async def test_a_fixture_shaped_subclass_runs_async() -> None:
    async with CheckedSaver() as saver:
        app = build(saver)
        await app.ainvoke({"answers": []}, cfg("t"))
        await app.ainvoke(Command(resume="1"), cfg("t"))
        await app.ainvoke(Command(resume="2"), cfg("t"))
        assert (await app.aget_state(cfg("t"))).values == {"answers": ["a=1", "b=2"]}
        assert saver.checked > 0
    assert saver.cleaned
    os.remove(saver.filename)


@pytest.mark.parametrize("thread", [7, uuid.UUID(int=7)], ids=["int", "uuid"])
def test_the_thread_id_comes_back_as_given(thread: Any) -> None:
    with CheckedSaver() as saver:  # keys its copies by the thread id of each put's config
        app = build(saver)
        app.invoke({"answers": []}, cfg(thread))
        app.invoke(Command(resume="1"), cfg(thread))
        assert saver.checked > 0
        latest = saver.get_tuple(cfg(thread))
        assert latest is not None
        assert latest.config["configurable"]["thread_id"] == thread
        assert saver.get_tuple(cfg(str(thread))) is not None  # stored under its string
    os.remove(saver.filename)


# ---------------------------------------------------------------------- PersistentDict


def test_persistent_dict_writes_on_sync_and_close_and_loads_back(tmp_path: Path) -> None:
    path = str(tmp_path / "d.pickle")
    data = PersistentDict(list, filename=path)
    data["a"].append(1)
    assert not os.path.exists(path)
    data.sync()
    assert data == {"a": [1]}
    data["b"].append(2)
    data.close()
    assert data == {}
    again = PersistentDict(filename=path)
    again.load()
    assert again == {"a": [1], "b": [2]}


def test_persistent_dict_loads_an_empty_file_as_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.touch()
    data = PersistentDict(filename=str(path))
    data.load()
    assert data == {}


def test_a_failed_sync_keeps_the_previous_file(tmp_path: Path) -> None:
    path = str(tmp_path / "d.pickle")
    data = PersistentDict(filename=path)
    data["ok"] = 1
    data.sync()
    data["bad"] = lambda: None
    with pytest.raises((pickle.PicklingError, AttributeError)):
        data.sync()
    assert os.listdir(tmp_path) == ["d.pickle"]
    kept = PersistentDict(filename=path)
    kept.load()
    assert kept == {"ok": 1}
