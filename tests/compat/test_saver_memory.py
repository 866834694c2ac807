"""Spec: InMemorySaver remembers what it just stored, and that never changes what it stores.

The saver is the only writer of its own store, so on the next ``put`` it uses
the checkpoint it just stored instead of reading the parent back, and it
knows a checkpoint it just created has no writes yet. Every sequence of
calls must leave exactly the records a saver that reads everything back
leaves, including when the store was changed behind the saver's back.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from flowcore.compat.langgraph import InMemorySaver
from flowcore.compat.langgraph._savers_core import SaverCore

_ids = itertools.count(1)


def new_id() -> str:
    return f"1f000000-0000-6000-8000-{next(_ids):012x}"


def ckpt(values: dict[str, Any], versions: dict[str, Any], cid: str | None = None) -> dict:
    return {
        "v": 4,
        "id": cid or new_id(),
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": versions,
        "versions_seen": {"node": {"a": 1}},
        "updated_channels": None,
    }


def cfg(thread: str, checkpoint_id: str | None = None) -> dict:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


class PlainJson:
    """A serializer that hands tuples back as lists, as plain JSON does."""

    def dumps(self, value: Any, *, path: str = "") -> bytes:
        return json.dumps(value).encode()

    def loads(self, data: bytes) -> Any:
        return json.loads(data)


def make(serializer: str, *, remembering: bool) -> InMemorySaver:
    saver = InMemorySaver(serializer=PlainJson() if serializer == "plain" else None)
    if not remembering:
        # Reads every parent and every write back from its store.
        saver._core = SaverCore(saver.store)
    return saver


async def stored(saver: InMemorySaver) -> list[Any]:
    everything: list[Any] = []
    for key in await saver.store.threads():
        for cp in await saver.store.history(key):
            everything.append((cp, await saver.store.get_writes(key, cp.checkpoint_id)))
    return everything


async def scenario(saver: InMemorySaver, ids: list[str]) -> list[Any]:
    """Calls that take every path of put and put_writes; what was stored at a few points."""
    seen: list[Any] = []
    md = {"source": "loop", "step": 0, "parents": {}}
    c1 = await saver.aput(cfg("t"), ckpt({"a": "a1", "b": "b1"}, {"a": 1, "b": 1}, ids[0]), md, {})
    await saver.aput_writes(c1, [("a", "w1"), ("b", "w2")], "task-1", "~p")
    # A regular write is saved once: the second call keeps the first value.
    await saver.aput_writes(c1, [("a", "w3")], "task-1", "~p")
    seen.append(await stored(saver))
    c2 = await saver.aput(c1, ckpt({"a": "a2", "b": "b1"}, {"a": 2, "b": 1}, ids[1]), md, {"a": 2})
    await saver.aput_writes(c2, [("__interrupt__", ["q"])], "task-2", "~p")
    await saver.aput_writes(c2, [("__resume__", ["r"])], "task-2", "~p")
    # Writes against an older checkpoint, then the same id stored again.
    await saver.aput_writes(c1, [("b", "late")], "task-3", "~q")
    c2 = await saver.aput(c1, ckpt({"a": "a9", "b": "b1"}, {"a": 9, "b": 1}, ids[1]), md, {"a": 9})
    await saver.aput_writes(c2, [("a", "after-replace")], "task-2", "~p")
    seen.append(await stored(saver))
    c3 = await saver.aput(c2, ckpt({"a": "a9", "b": "b3"}, {"a": 9, "b": 3}, ids[2]), md, {"b": 3})
    # Versions that a serializer may not hand back as they were (tuples) are never remembered.
    c4 = await saver.aput(c3, ckpt({"a": "a9", "b": "b3"}, {"a": (9,), "b": 3}, ids[3]), md, {})
    c5 = await saver.aput(c4, ckpt({"a": "a9", "b": "b3"}, {"a": (9,), "b": 3}, ids[4]), md, {})
    seen.append(await stored(saver))
    # The parent removed from the store itself, behind the saver's back.
    await saver.store.rewrite("langgraph/t/", delete={ids[4]})
    c6 = await saver.aput(c5, ckpt({"a": "a9", "b": "b3"}, {"a": (9,), "b": 3}, ids[5]), md, {})
    c7 = await saver.aput(c6, ckpt({"a": "a9", "b": "b7"}, {"a": 9, "b": 7}, ids[6]), md, {"b": 7})
    await saver.store.rewrite("langgraph/t/", delete={ids[6]})
    c8 = await saver.aput(c7, ckpt({"a": "a9", "b": "b7"}, {"a": 9, "b": 7}, ids[7]), md, {})
    c9 = await saver.aput(c8, ckpt({"a": "a9", "b": "b7"}, {"a": 9, "b": 7}, ids[8]), md, {})
    seen.append(await stored(saver))
    # Maintenance through the saver, then the thread goes on.
    await saver.aprune(["t"])
    await saver.aput(c9, ckpt({"a": "a9", "b": "b8"}, {"a": 9, "b": 8}, ids[9]), md, {"b": 8})
    seen.append(await stored(saver))
    return seen


@pytest.mark.parametrize("serializer", ["default", "plain"])
async def test_remembering_stores_exactly_what_reading_back_stores(serializer: str) -> None:
    ids = [new_id() for _ in range(10)]
    remembering = make(serializer, remembering=True)
    reference = make(serializer, remembering=False)
    assert await scenario(remembering, ids) == await scenario(reference, ids)
    got = await remembering.aget_tuple(cfg("t"))
    assert got is not None
    assert got.checkpoint["channel_values"] == {"a": "a9", "b": "b8"}


async def test_a_parent_removed_behind_the_savers_back_loses_no_value() -> None:
    saver = InMemorySaver()
    md = {"source": "loop", "step": 0, "parents": {}}
    first = await saver.aput(cfg("t"), ckpt({"a": "kept"}, {"a": 1}), md, {"a": 1})
    await saver.store.delete_thread("langgraph/t/")
    second = await saver.aput(first, ckpt({"a": "kept"}, {"a": 1}), md, {})
    got = await saver.aget_tuple(second)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"a": "kept"}
    assert got.parent_config == first


async def test_what_a_saver_remembers_of_a_checkpoint_is_not_carried_to_the_next() -> None:
    """The memory of one checkpoint is reused for the next: its tasks' writes start over."""

    async def calls(saver: InMemorySaver, ids: list[str]) -> list[Any]:
        md = {"source": "loop", "step": 0, "parents": {}}
        c1 = await saver.aput(cfg("t"), ckpt({"a": 1}, {"a": 1}, ids[0]), md, {"a": 1})
        await saver.aput_writes(c1, [("a", "w1")], "task", "~p")
        await saver.aput_writes(c1, [("a", "w1-again"), ("b", "w2")], "task", "~p")
        c2 = await saver.aput(c1, ckpt({"a": 2}, {"a": 2}, ids[1]), md, {"a": 2})
        # The same task id against the new checkpoint: nothing of c1's writes applies.
        await saver.aput_writes(c2, [("a", "x1")], "task", "~p")
        await saver.aput_writes(c2, [("a", "x1-again"), ("__interrupt__", ["q"])], "task", "~p")
        await saver.aput_writes(c1, [("a", "late"), ("b", "late"), ("c", "late")], "task", "~p")
        # Another thread in between, then the first thread again.
        o1 = await saver.aput(cfg("o"), ckpt({"a": 1}, {"a": 1}, ids[2]), md, {"a": 1})
        await saver.aput_writes(o1, [("a", "o")], "task", "~p")
        c3 = await saver.aput(c2, ckpt({"a": 3}, {"a": 3}, ids[3]), md, {"a": 3})
        await saver.aput_writes(c3, [("a", "y")], "task", "~p")
        return await stored(saver)

    ids = [new_id() for _ in range(4)]
    got = await calls(make("default", remembering=True), ids)
    assert got == await calls(make("default", remembering=False), ids)
    writes = {cp.checkpoint_id: [w.payload["writes"] for w in ws] for cp, ws in got}
    assert [e["value"] for e in writes[ids[0]][0]] == ["w1", "w2", "late"]  # idx 2 is new
    assert [e["value"] for e in writes[ids[1]][0]] == [["q"], "x1"]
