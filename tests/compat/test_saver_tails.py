"""Spec: a list that grows is stored as what it gained (a tail), so storage grows linearly.

A saver stores a changed list channel whole only when it does not extend
the list stored at the parent (or when the tails since the last whole copy
outnumber its items); otherwise it stores the appended items and where the
rest is. Whatever is stored, every checkpoint reads back exactly the values
that were saved, through every saver, SaveBatch, maintenance, and a
reopened SQLite file.
"""

from __future__ import annotations

import copy
import datetime as dt
import enum
import itertools
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.checkpoint import Checkpoint, JsonSerializer
from flowcore.compat.langgraph import (
    END,
    START,
    AIMessage,
    AsyncSqliteSaver,
    HumanMessage,
    InMemorySaver,
    RemoveMessage,
    SqliteSaver,
    StateGraph,
    _savers_layout,
    add_messages,
)
from flowcore.compat.langgraph._savers_layout import tails
from flowcore.errors import CheckpointStoreError

from .conftest import Saver, Stored, stored

_ids = itertools.count(1)
KEY = "langgraph/t/"  # thread "t", namespace ""


def new_id() -> str:
    return f"1f000000-0000-6000-8000-{next(_ids):012x}"


def cfg(thread: str = "t", checkpoint_id: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


class Recorder:
    """Puts checkpoints one after another, keeping a copy of what each one saved."""

    def __init__(self, saver: Saver, thread: str = "t") -> None:
        self.saver = saver
        self.parent = cfg(thread)
        self.saved: dict[str, dict[str, Any]] = {}
        self.version = 0

    async def put(self, values: dict[str, Any], run_id: str = "run") -> str:
        self.version += 1
        cid = new_id()
        checkpoint = {
            "v": 4,
            "id": cid,
            "ts": "2026-01-01T00:00:00+00:00",
            "channel_values": values,
            "channel_versions": dict.fromkeys(values, self.version),
            "versions_seen": {},
            "updated_channels": sorted(values),
        }
        metadata = {"source": "loop", "step": self.version, "parents": {}, "run_id": run_id}
        versions = dict.fromkeys(values, self.version)
        self.saved[cid] = copy.deepcopy(values)
        self.parent = await self.saver.aput(self.parent, checkpoint, metadata, versions)
        return cid

    async def check(self, thread: str = "t", ids: list[str] | None = None) -> None:
        """Every checkpoint (or those of ``ids``) reads back what was saved."""
        for cid in ids if ids is not None else list(self.saved):
            got = await self.saver.aget_tuple(cfg(thread, cid))
            assert got is not None, cid
            assert got.checkpoint["channel_values"] == self.saved[cid], cid
            for channel, value in self.saved[cid].items():
                assert type(got.checkpoint["channel_values"][channel]) is type(value)


def how_stored(s: Stored, channel: str) -> str:
    if channel in s.whole:
        return "whole"
    if channel in s.tails:
        return "tail"
    return "elsewhere"


def stored_items(history: list[Stored], channel: str) -> int:
    """List items of ``channel`` the checkpoints hold, whole copies and tails together."""
    total = 0
    for s in history:
        if channel in s.whole:
            total += len(s.whole[channel])
        piece = s.tails.get(channel)
        if piece is not None:
            total += len(piece["items"])
    return total


# ---------------------------------------------------------------------- a growing list


class Chat(TypedDict):
    i: int
    messages: Annotated[list[Any], add_messages]


def chat_graph(steps: int) -> StateGraph:
    async def step(state: Chat) -> dict[str, Any]:
        n = state["i"] + 1
        return {"i": n, "messages": [AIMessage(content=f"message {n:04d}: " + "lorem " * 40)]}

    builder = StateGraph(Chat)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda s: END if s["i"] >= steps else "step")
    return builder


def stored_bytes(history: list[Stored]) -> int:
    """Bytes of the values the checkpoints hold, as JSON: the same figure for every saver."""
    serializer = JsonSerializer()
    return sum(len(serializer.dumps([dict(s.whole), dict(s.tails)])) for s in history)


@pytest.mark.parametrize("durability", ["async", "sync"])
async def test_a_growing_message_list_takes_linear_space(saver: Saver, durability: str) -> None:
    steps = 80
    graph = chat_graph(steps).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 1000}
    out = await graph.ainvoke({"i": 0, "messages": []}, config, durability=durability)
    assert len(out["messages"]) == steps
    history = await stored(saver)
    # Stored whole at every step, the list would take steps * (steps + 1) / 2 = 3240 items.
    assert stored_items(history, "messages") <= 3 * steps
    half = len(history) // 2
    first, second = stored_bytes(history[:half]), stored_bytes(history[half:])
    assert second / first < 1.5
    # Every checkpoint reads back the list it had, message for message.
    async for listed in saver.alist(cfg()):
        step = listed.metadata["step"]
        messages = listed.checkpoint["channel_values"].get("messages", [])
        assert [m.content[:12] for m in messages] == [
            f"message {n:04d}" for n in range(1, max(step, 0) + 1)
        ]


async def test_a_thread_run_in_many_invocations_stays_linear(saver: Saver) -> None:
    graph = chat_graph(1).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"i": 0, "messages": []}, config)
    turns = 40
    for turn in range(turns):
        # One user turn per invocation, as a chat app does.
        await graph.ainvoke({"i": 0, "messages": [HumanMessage(f"turn {turn}")]}, config)
    state = await graph.aget_state(config)
    assert len(state.values["messages"]) == 2 * turns + 1
    assert stored_items(await stored(saver), "messages") <= 3 * (2 * turns + 1)


async def test_a_tail_chain_is_cut_after_max_tails(
    saver: Saver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_savers_layout, "MAX_TAILS", 3)
    rec = Recorder(saver)
    xs: list[int] = list(range(100))
    for n in range(12):
        xs = [*xs, n]
        await rec.put({"xs": xs})
    history = await stored(saver)
    kinds = [how_stored(s, "xs") for s in history]
    assert kinds == ["whole", "tail", "tail", "tail"] * 3
    assert max(s.tails["xs"]["links"] for s in history if s.tails) == 3
    await rec.check()


# ---------------------------------------------------------------------- what is not an append


def _mutations() -> dict[str, Callable[[list[Any]], list[Any]]]:
    def in_place(xs: list[Any]) -> list[Any]:
        xs[0] = "changed"
        return xs

    def nested(xs: list[Any]) -> list[Any]:
        xs[0]["k"].append("more")  # the same dict, changed inside
        return [*xs, {"k": []}]

    return {
        "item replaced in place": in_place,
        "reordered": lambda xs: [*reversed(xs), "new"],
        "item removed": lambda xs: [*xs[1:], "new"],
        "shorter": lambda xs: xs[:-1],
        "int becomes float": lambda xs: [float(xs[0]) if type(xs[0]) is int else 1.0, *xs[1:]],
        "int becomes bool": lambda xs: [True, *xs[1:], "new"],
        "zero becomes minus zero": lambda xs: [-0.0, *xs[1:], "new"],
        "nested dict changed in place": nested,
    }


@pytest.mark.parametrize("change", list(_mutations()))
async def test_a_list_changed_other_than_by_appending_is_stored_whole(
    saver: Saver, change: str
) -> None:
    first: dict[str, list[Any]] = {
        "item replaced in place": ["a", "b"],
        "reordered": ["a", "b", "c"],
        "item removed": ["a", "b"],
        "shorter": ["a", "b", "c"],
        "int becomes float": [1, 2],
        "int becomes bool": [1, 2],
        "zero becomes minus zero": [0.0, 1.0],
        "nested dict changed in place": [{"k": ["v"]}],
    }
    rec = Recorder(saver)
    # Long enough that the tails so far never outnumber it: only the change stores it whole.
    xs = [*first[change], "p1", "p2", "p3", "p4"]
    await rec.put({"xs": xs})
    xs = [*xs, "appended"]
    await rec.put({"xs": xs})
    xs = _mutations()[change](xs)
    await rec.put({"xs": xs})
    xs = [*xs, "appended again"]
    await rec.put({"xs": xs})
    kinds = [how_stored(s, "xs") for s in await stored(saver)]
    assert kinds[:3] == ["whole", "tail", "whole"]
    await rec.check()


async def test_messages_removed_replaced_or_changed_in_place_are_stored_whole(
    saver: Saver,
) -> None:
    rec = Recorder(saver)
    chat = add_messages([HumanMessage("hi", id="1")], [AIMessage("hello", id="2")])
    steps = [
        ("whole", chat),
        ("tail", add_messages(chat, [HumanMessage("how are you?", id="3")])),
    ]
    chat = steps[-1][1]
    steps.append(("whole", add_messages(chat, [RemoveMessage(id="2")])))
    chat = steps[-1][1]
    steps.append(("tail", add_messages(chat, [AIMessage("fine", id="4")])))
    chat = steps[-1][1]
    steps.append(("whole", add_messages(chat, [AIMessage("fine, thanks", id="4")])))
    chat = steps[-1][1]
    for _, messages in steps:
        await rec.put({"messages": messages})
    # The same message objects, one of them edited in place, plus a new one.
    edited = add_messages(chat, [AIMessage("bye", id="5")])
    edited[0].content = "hi (edited)"
    await rec.put({"messages": edited})
    steps.append(("whole", edited))
    kinds = [how_stored(s, "messages") for s in await stored(saver)]
    assert kinds == [expected for expected, _ in steps]
    await rec.check()


async def test_an_unchanged_list_under_a_new_version_is_not_stored_again(saver: Saver) -> None:
    rec = Recorder(saver)
    await rec.put({"xs": ["a", "b"]})
    await rec.put({"xs": ["a", "b"]})
    history = await stored(saver)
    assert [how_stored(s, "xs") for s in history] == ["whole", "elsewhere"]
    await rec.check()


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


async def test_items_of_tagged_types_are_stored_in_tails_and_read_back_typed(
    saver: Saver,
) -> None:
    rec = Recorder(saver)
    xs: list[Any] = [Color.RED, ("a", 1), dt.datetime(2026, 1, 1, tzinfo=dt.UTC)]
    await rec.put({"xs": xs})
    for extra in ([Color.BLUE, b"raw"], [uuid.UUID(int=7), {"set"}, HumanMessage("m", id="1")]):
        xs = [*xs, *extra]
        await rec.put({"xs": xs})
    assert [how_stored(s, "xs") for s in await stored(saver)] == ["whole", "tail", "whole"]
    await rec.check()


# ---------------------------------------------------------------------- maintenance


async def tail_history(saver: Saver, thread: str = "t") -> tuple[Recorder, list[str]]:
    """Twelve checkpoints of three runs, the list stored whole and in tails across them."""
    rec = Recorder(saver, thread)
    ids = []
    xs: list[Any] = []
    for n in range(12):
        xs = [*xs, {"n": n}]
        ids.append(await rec.put({"xs": xs, "n": n}, run_id=f"r{n // 4}"))
    kinds = [how_stored(s, "xs") for s in await stored(saver, thread)]
    assert all("tail" in kinds[run : run + 4] for run in (0, 4, 8))
    return rec, ids


async def test_deleting_a_run_keeps_every_value_later_checkpoints_read(saver: Saver) -> None:
    rec, ids = await tail_history(saver)
    await saver.adelete_for_runs(["r1"])
    await rec.check(ids=ids[:4] + ids[8:])
    assert len(await stored(saver)) == 8
    await saver.adelete_for_runs(["r0"])
    await rec.check(ids=ids[8:])
    # The thread goes on from what is left.
    await rec.put({"xs": [*rec.saved[ids[-1]]["xs"], {"n": 12}], "n": 12})
    await rec.check(ids=[*ids[8:], list(rec.saved)[-1]])


async def test_pruning_keeps_the_latest_value_whole(saver: Saver) -> None:
    rec, ids = await tail_history(saver)
    await saver.aprune(["t"])
    history = await stored(saver)
    assert [s.checkpoint_id for s in history] == [ids[-1]]
    assert how_stored(history[0], "xs") == "whole"
    await rec.check(ids=[ids[-1]])


async def test_a_copied_thread_reads_back_every_value(saver: Saver) -> None:
    rec, ids = await tail_history(saver)
    await saver.acopy_thread("t", "copy")
    await rec.check("copy", ids)
    await saver.adelete_thread("t")
    await rec.check("copy", ids)


# ---------------------------------------------------------------------- SQLite files


async def test_an_sqlite_file_reads_back_after_reopening_and_the_thread_goes_on(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "lg.db")
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 100}
    async with AsyncSqliteSaver.from_conn_string(path) as first:
        graph = chat_graph(20).compile(checkpointer=first)
        await graph.ainvoke({"i": 0, "messages": []}, config)
        before = [(t.config, t.checkpoint) async for t in first.alist(cfg())]
    async with AsyncSqliteSaver.from_conn_string(path) as reopened:
        assert [(t.config, t.checkpoint) async for t in reopened.alist(cfg())] == before
        graph = chat_graph(30).compile(checkpointer=reopened)
        out = await graph.ainvoke({"messages": [HumanMessage("go on")]}, config)
        assert [m.content[:12] for m in out["messages"]] == [
            *(f"message {n:04d}" for n in range(1, 21)),
            "go on",
            *(f"message {n:04d}" for n in range(21, 31)),
        ]
        history = await stored(reopened)
        # The reopened saver knows nothing of the stored list: one whole copy, then tails.
        assert [how_stored(s, "messages") for s in history[-10:]].count("whole") <= 2
        assert stored_items(history, "messages") <= 3 * 31


async def put_records(saver: SqliteSaver | AsyncSqliteSaver, *records: Checkpoint) -> None:
    """Write flowcore records straight into a SQLite saver's store, around the saver."""

    async def put_all() -> None:
        for record in records:
            await saver.store.put(record)

    if isinstance(saver, SqliteSaver):
        # Its store lives on the saver's private event loop: run the puts there.
        saver._run_sync(lambda core: put_all())
    else:
        await put_all()


async def test_records_of_the_layout_before_tails_are_still_read(
    file_saver: SqliteSaver | AsyncSqliteSaver,
) -> None:
    """Files written before tails existed: whole values only, ``blob_at`` naming each holder."""
    saver = file_saver
    first, second = new_id(), new_id()

    def old_record(cid: str, parent: str | None, delta: dict[str, Any], n: int) -> Checkpoint:
        blob_at = {"xs": first, "n": cid}
        return Checkpoint(
            thread_id=KEY,
            checkpoint_id=cid,
            parent_id=parent,
            step=n,
            created_at=0.0,
            writes=((("channels", delta),),),
            cursor={
                "checkpoint": {
                    "v": 4,
                    "id": cid,
                    "ts": "2026-01-01T00:00:00+00:00",
                    "channel_versions": {"xs": 1, "n": n + 1},
                    "versions_seen": {},
                    "updated_channels": None,
                },
                "parent": parent,
                "blob_at": blob_at,
            },
            metadata={"source": "loop", "step": n, "parents": {}},
        )

    await put_records(
        saver,
        old_record(first, None, {"xs": ["a", "b"], "n": 0}, 0),
        old_record(second, first, {"n": 1}, 1),
    )
    got = await saver.aget_tuple(cfg())
    assert got is not None
    assert got.checkpoint["channel_values"] == {"xs": ["a", "b"], "n": 1}
    # A new checkpoint on top: the saver has no shadow of the old list, so it stores it whole.
    rec = Recorder(saver)
    rec.parent = got.config
    rec.version = 5
    await rec.put({"xs": ["a", "b", "c"], "n": 2})
    await rec.put({"xs": ["a", "b", "c", "d"], "n": 3})
    assert [how_stored(s, "xs") for s in await stored(saver)] == [
        "whole",
        "elsewhere",
        "whole",
        "tail",
    ]
    await rec.check()


async def test_a_chain_of_tails_that_never_reaches_a_whole_copy_is_reported(
    file_saver: SqliteSaver | AsyncSqliteSaver,
) -> None:
    cid = new_id()
    await put_records(
        file_saver,
        Checkpoint(
            thread_id=KEY,
            checkpoint_id=cid,
            parent_id=None,
            step=0,
            created_at=0.0,
            writes=((("tails", {"xs": {"base": cid, "links": 1, "items": [1]}}),),),
            cursor={"checkpoint": {"v": 4, "id": cid}, "parent": None, "blob_at": {"xs": cid}},
        ),
    )
    with pytest.raises(CheckpointStoreError, match="damaged"):
        await file_saver.aget_tuple(cfg())


async def test_a_chain_of_tails_that_never_reaches_a_whole_copy_is_reported_in_memory() -> None:
    """The same damage in an ``InMemorySaver``'s dicts: a tail whose base is itself."""
    saver = InMemorySaver()
    config = await saver.aput(cfg(), _checkpoint(["a"], 1), {"step": 0}, {"xs": 1})
    cid = config["configurable"]["checkpoint_id"]
    core = saver._core
    saved = core.spaces[KEY][cid]
    parts = core.codec.loads(saved.data)
    saved.data = core.codec.dumps(
        {
            "checkpoint": parts["checkpoint"],
            "metadata": parts["metadata"],
            "channels": {},
            "tails": {"xs": {"base": cid, "links": 1, "items": [1]}},
        }
    )
    saved.blob_at = {"xs": cid}
    with pytest.raises(CheckpointStoreError, match="damaged"):
        await saver.aget_tuple(cfg())


def test_the_stored_layout_is_plain_json(tmp_path: Path) -> None:
    """A tail is JSON data a reader of the file can follow: base, links, items."""
    with SqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as saver:
        first = saver.put(cfg(), _checkpoint(["a"], 1), {"step": 0}, {"xs": 1})
        saver.put(first, _checkpoint(["a", "b"], 2), {"step": 1}, {"xs": 2})
        newest = saver._run_sync(lambda core: saver.store.get(KEY))
    assert newest is not None
    assert json.loads(json.dumps(tails(newest))) == {
        "xs": {"base": first["configurable"]["checkpoint_id"], "links": 1, "items": ["b"]}
    }


def _checkpoint(xs: list[Any], version: int) -> dict[str, Any]:
    return {
        "v": 4,
        "id": new_id(),
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": {"xs": xs},
        "channel_versions": {"xs": version},
        "versions_seen": {},
        "updated_channels": ["xs"],
    }


# ---------------------------------------------------------------------- shadows


async def test_shadows_are_bounded_and_a_forgotten_thread_stores_whole_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_savers_layout, "SHADOWED_ITEMS", 10)
    saver = InMemorySaver()
    rec = {thread: Recorder(saver, thread) for thread in ("a", "b", "c")}
    for thread in ("a", "b", "c"):
        await rec[thread].put({"xs": list(range(6))})
    shadows = saver._core.shadows.by_thread
    # Six copies a thread: with a bound of ten, only the thread saved last keeps its own.
    assert list(shadows) == ["langgraph/c/"]
    for thread in ("c", "a"):
        await rec[thread].put({"xs": [*range(6), "more"]})
    assert list(shadows) == ["langgraph/a/"]
    assert [how_stored(s, "xs") for s in await stored(saver, "a")] == ["whole", "whole"]
    assert [how_stored(s, "xs") for s in await stored(saver, "c")] == ["whole", "tail"]
    for recorder in rec.values():
        await recorder.check(recorder.parent["configurable"]["thread_id"])


async def test_shadows_are_kept_for_the_64_threads_saved_last() -> None:
    saver = InMemorySaver()
    for n in range(70):
        await Recorder(saver, f"t{n}").put({"xs": [n]})
    assert list(saver._core.shadows.by_thread) == [f"langgraph/t{n}/" for n in range(6, 70)]
