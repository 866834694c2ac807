"""Spec: InMemorySaver keeps its own dicts, laid out and read back as the SQLite savers do.

``InMemorySaver`` does not go through flowcore's record mapping: it keeps
LangGraph's shape in dicts of its own. The same calls must leave the same
layout (which checkpoint stores which value whole, which as a list tail,
where each channel's value is held) and read back the same tuples as an
``AsyncSqliteSaver`` on a real file, through puts, writes, forks, a
checkpoint saved again under its id, several namespaces and threads, and
every maintenance operation.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from flowcore.compat.langgraph import AsyncSqliteSaver, InMemorySaver
from flowcore.errors import SerializationError

from .conftest import Saver, stored

_ids = itertools.count(1)


def new_id() -> str:
    return f"1f000000-0000-6000-8000-{next(_ids):012x}"


def ckpt(values: dict[str, Any], versions: dict[str, Any], cid: str) -> dict[str, Any]:
    return {
        "v": 4,
        "id": cid,
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": versions,
        "versions_seen": {"node": {"a": 1}},
        "updated_channels": None,
    }


def cfg(thread: str, checkpoint_id: str | None = None, ns: str = "") -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def md(step: int, run: str = "r1") -> dict[str, Any]:
    return {"source": "loop", "step": step, "parents": {}, "run_id": run}


async def everything(saver: Saver) -> dict[str, Any]:
    """What the saver holds and reads back: layouts, every tuple, and some listings."""
    threads = ("t", "u", "copy")
    layout = {
        (thread, ns): await stored(saver, thread, ns) for thread in threads for ns in ("", "child")
    }
    listed = [tuple(t) async for t in saver.alist(None)]
    tuples = [await saver.aget_tuple(t[0]) for t in listed]
    latest = [await saver.aget_tuple(cfg(thread)) for thread in threads]
    some = [
        [t.config async for t in saver.alist(cfg("t"), limit=2)],
        [t.config async for t in saver.alist(cfg("t", ns="child"))],
        [t.config async for t in saver.alist(None, filter={"run_id": "r2"})],
        [t.config async for t in saver.alist(cfg("t"), before=listed[len(listed) // 2][0])],
    ]
    return {"layout": layout, "listed": listed, "tuples": tuples, "latest": latest, "some": some}


async def scenario(saver: Saver, ids: list[str]) -> list[dict[str, Any]]:
    """Calls that take every path of put, put_writes and maintenance; snapshots between."""
    seen = []
    xs = ["m0", "m1", "m2", "m3"]
    c1 = await saver.aput(
        cfg("t"), ckpt({"a": "a1", "b": "b1", "xs": xs}, {"a": 1, "b": 1, "xs": 1}, ids[0]),
        md(0), {"a": 1, "b": 1, "xs": 1},
    )  # fmt: skip
    await saver.aput_writes(c1, [("a", "w1"), ("b", "w2")], "task-1", "~p")
    # A regular write is saved once: the second call keeps the first value.
    await saver.aput_writes(c1, [("a", "w3")], "task-1", "~p")
    xs = [*xs, "m4"]
    c2 = await saver.aput(
        c1, ckpt({"a": "a2", "b": "b1", "xs": xs}, {"a": 2, "b": 1, "xs": 2}, ids[1]),
        md(1), {"a": 2, "xs": 2},
    )  # fmt: skip
    await saver.aput_writes(c2, [("__interrupt__", ["q"])], "task-2", "~p")
    await saver.aput_writes(c2, [("__resume__", ["r"])], "task-2", "~p")
    seen.append(await everything(saver))
    # Writes against an older checkpoint, then the same id stored again (writes stay).
    await saver.aput_writes(c1, [("b", "late")], "task-3", "~q")
    xs = [*xs, "m5"]
    c2 = await saver.aput(
        c1, ckpt({"a": "a9", "b": "b1", "xs": xs}, {"a": 9, "b": 1, "xs": 3}, ids[1]),
        md(1), {"a": 9, "xs": 3},
    )  # fmt: skip
    await saver.aput_writes(c2, [("a", "after-replace")], "task-2", "~p")
    # Versions of other types; a channel whose version did not change is not stored again.
    c3 = await saver.aput(
        c2, ckpt({"a": "a9", "b": ("b", 3), "xs": xs}, {"a": (9,), "b": 3, "xs": 3}, ids[2]),
        md(2, "r2"), {"b": 3},
    )  # fmt: skip
    xs3 = [*xs, "m6"]
    c4 = await saver.aput(
        c3, ckpt({"a": "a9", "b": ("b", 3), "xs": xs3}, {"a": (9,), "b": 3, "xs": 4}, ids[3]),
        md(3, "r2"), {"xs": 4},
    )  # fmt: skip
    # A fork from c2, a parent that is not stored, a namespace, another thread.
    await saver.aput(
        c2, ckpt({"a": "fork", "b": "b1", "xs": [*xs, "f"]}, {"a": 10, "b": 1, "xs": 4}, ids[4]),
        md(2, "r3"), {"a": 10, "xs": 4},
    )  # fmt: skip
    await saver.aput(cfg("u", ids[9]), ckpt({"z": 0}, {"z": 1}, ids[5]), md(0), {"z": 1})
    child = await saver.aput(
        cfg("t", ns="child"), ckpt({"k": [1]}, {"k": 1}, ids[6]), md(0, "r2"), {"k": 1}
    )
    await saver.aput(child, ckpt({"k": [1, 2]}, {"k": 2}, ids[7]), md(1, "r2"), {"k": 2})
    await saver.aput_writes(child, [("k", [9])], "task-c", "~c")
    seen.append(await everything(saver))
    # Maintenance through the saver, the thread going on after each.
    await saver.acopy_thread("t", "copy")
    await saver.adelete_for_runs(["r1"])
    seen.append(await everything(saver))
    await saver.aput(
        c4, ckpt({"a": "a9", "b": 5, "xs": [*xs3, "m7"]}, {"a": (9,), "b": 5, "xs": 5}, ids[8]),
        md(4, "r4"), {"b": 5, "xs": 5},
    )  # fmt: skip
    await saver.aprune(["t"])
    seen.append(await everything(saver))
    await saver.adelete_thread("copy")
    await saver.aprune(["u"], strategy="delete")
    seen.append(await everything(saver))
    return seen


@pytest.fixture
async def file_twin(tmp_path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "twin.db")) as saver:
        yield saver


async def test_the_same_calls_leave_what_the_sqlite_saver_leaves(
    file_twin: AsyncSqliteSaver,
) -> None:
    ids = [new_id() for _ in range(10)]
    in_memory = await scenario(InMemorySaver(), ids)
    on_file = await scenario(file_twin, ids)
    assert len(in_memory) == len(on_file) == 5
    for phase, (mine, theirs) in enumerate(zip(in_memory, on_file, strict=True)):
        assert mine == theirs, f"phase {phase}"
    # The scenario stores tails, and maintenance keeps values readable: not a vacuous match.
    first = in_memory[0]["layout"]["t", ""]
    assert [sorted(s.tails) for s in first] == [[], ["xs"]]
    assert in_memory[-1]["latest"][0].checkpoint["channel_values"]["xs"][-1] == "m7"


async def test_a_value_that_cannot_be_stored_stores_nothing() -> None:
    saver = InMemorySaver()
    first = await saver.aput(cfg("t"), ckpt({"x": 1}, {"x": 1}, new_id()), md(0), {"x": 1})
    before = await stored(saver)
    with pytest.raises(SerializationError):
        await saver.aput(first, ckpt({"x": object()}, {"x": 2}, new_id()), md(1), {"x": 2})
    with pytest.raises(SerializationError):
        await saver.aput_writes(first, [("x", object())], "task")
    assert await stored(saver) == before
    got = await saver.aget_tuple(cfg("t"))
    assert got is not None
    assert got.checkpoint["channel_values"] == {"x": 1}
    assert got.pending_writes == []


class Counting:
    """A serializer that counts its calls (``repr`` and ``literal_eval`` of builtin data)."""

    def __init__(self) -> None:
        self.dumped = 0
        self.loaded = 0

    def dumps(self, value: Any, *, path: str = "") -> bytes:
        self.dumped += 1
        return repr(value).encode()

    def loads(self, data: bytes) -> Any:
        self.loaded += 1
        return ast.literal_eval(data.decode())


async def test_values_go_through_the_serializer_given() -> None:
    serializer = Counting()
    saver = InMemorySaver(serializer=serializer)
    first = await saver.aput(cfg("t"), ckpt({"x": [1]}, {"x": 1}, new_id()), md(0), {"x": 1})
    await saver.aput_writes(first, [("x", [2])], "task")
    assert serializer.dumped == 2
    got = await saver.aget_tuple(first)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"x": [1]}
    assert got.pending_writes == [("task", "x", [2])]
    assert serializer.loaded == 2


def test_a_listing_goes_on_while_the_caller_saves_and_deletes() -> None:
    saver = InMemorySaver()
    parent = cfg("t")
    ids = [new_id() for _ in range(4)]
    for step, cid in enumerate(ids):
        parent = saver.put(parent, ckpt({"n": step}, {"n": step + 1}, cid), md(step), {"n": 1})
    seen = []
    for listed in saver.list(cfg("t")):
        seen.append(listed.config["configurable"]["checkpoint_id"])
        if len(seen) == 1:
            # Saved after the listing started: not part of it.
            saver.put(parent, ckpt({"n": 9}, {"n": 9}, new_id()), md(9), {"n": 9})
            saver.delete_for_runs(["gone"])
        if len(seen) == 2:
            saver.prune(["t"], strategy="delete")
    assert seen == [ids[3], ids[2]]
