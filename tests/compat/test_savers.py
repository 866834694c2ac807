"""Spec: the LangGraph-shaped savers (InMemorySaver, SqliteSaver, AsyncSqliteSaver).

Every saver keeps LangGraph checkpoints per thread and namespace with their
pending writes, lists them newest first with LangGraph's filters, stores
values serialized (as deltas: an unchanged channel is not stored again),
and offers the sync and async API. The SQLite savers keep everything in a
flowcore database file, next to flowcore's own threads.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from flowcore.checkpoint import Checkpoint, SqliteCheckpointer
from flowcore.compat.langgraph import (
    AsyncSqliteSaver,
    HumanMessage,
    InMemorySaver,
    MemorySaver,
    SqliteSaver,
)
from flowcore.errors import (
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointStoreError,
    InvalidInputError,
    SerializationError,
)

from .conftest import Saver, stored

_ids = itertools.count(1)


def new_id() -> str:
    """A checkpoint id that sorts after every earlier one, like LangGraph's uuid6 ids."""
    return f"1f000000-0000-6000-8000-{next(_ids):012x}"


def ckpt(values: dict[str, Any] | None = None, versions: dict[str, Any] | None = None) -> dict:
    values = values or {}
    return {
        "v": 4,
        "id": new_id(),
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": versions if versions is not None else dict.fromkeys(values, 1),
        "versions_seen": {"node": {"x": 1}},
        "updated_channels": None,
    }


def cfg(thread: str, ns: str | None = "", checkpoint_id: str | None = None) -> dict:
    conf: dict[str, Any] = {"thread_id": thread}
    if ns is not None:
        conf["checkpoint_ns"] = ns
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def md(step: int = 0, source: str = "loop", **extra: Any) -> dict:
    return {"source": source, "step": step, "parents": {}, **extra}


async def chain(saver: Saver, thread: str, n: int, ns: str = "") -> list[dict]:
    """``n`` checkpoints, each the child of the one before; returns their configs."""
    configs: list[dict] = []
    parent = cfg(thread, ns)
    for step in range(n):
        parent = await saver.aput(parent, ckpt(), md(step, "input" if step % 2 else "loop"), {})
        configs.append(parent)
    return configs


async def ids(saver: Saver, config: dict | None, **kw: Any) -> list[str]:
    return [t.checkpoint["id"] async for t in saver.alist(config, **kw)]


@pytest.fixture(params=["memory", "sqlite"])
def sync_saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Saver]:
    """The savers whose sync API works from plain sync code."""
    if request.param == "memory":
        yield InMemorySaver()
    else:
        with SqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as sqlite_saver:
            yield sqlite_saver


# ---------------------------------------------------------------------- put / get_tuple


async def test_put_returns_the_config_of_the_saved_checkpoint(saver: Saver) -> None:
    c = ckpt({"x": 1})
    assert await saver.aput(cfg("t"), c, md(), {"x": 1}) == cfg("t", "", c["id"])


async def test_get_tuple_gives_back_checkpoint_metadata_and_parent(saver: Saver) -> None:
    first = await saver.aput(cfg("t"), ckpt({"x": 1}), md(0), {"x": 1})
    c = ckpt({"x": 2}, {"x": 2})
    second = await saver.aput(first, c, md(1, user="ann"), {"x": 2})
    got = await saver.aget_tuple(second)
    assert got is not None
    assert got.checkpoint == c
    assert got.metadata == md(1, user="ann")
    assert got.parent_config == first
    assert got.pending_writes == []


async def test_without_checkpoint_id_get_tuple_gives_the_latest(saver: Saver) -> None:
    configs = await chain(saver, "t", 3)
    latest = await saver.aget_tuple(cfg("t"))
    assert latest is not None
    assert latest.config == configs[-1]
    assert latest.metadata["step"] == 2


async def test_unknown_threads_and_ids_give_none(saver: Saver) -> None:
    await chain(saver, "t", 1)
    assert await saver.aget_tuple(cfg("other")) is None
    assert await saver.aget_tuple(cfg("t", "", new_id())) is None
    assert await saver.aget_tuple(cfg("t", "child:1")) is None


async def test_values_come_back_equal_but_never_the_saved_objects(saver: Saver) -> None:
    values = {"log": ["a"], "pair": (1, 2), "msgs": [HumanMessage("hi", id="m1")]}
    saved = await saver.aput(cfg("t"), ckpt(values), md(), dict.fromkeys(values, 1))
    got = await saver.aget_tuple(saved)
    assert got is not None
    assert got.checkpoint["channel_values"] == values
    assert got.checkpoint["channel_values"]["log"] is not values["log"]


async def test_a_value_that_cannot_be_stored_fails_and_stores_nothing(saver: Saver) -> None:
    with pytest.raises(SerializationError):
        await saver.aput(cfg("t"), ckpt({"x": object()}), md(), {"x": 1})
    assert await saver.aget_tuple(cfg("t")) is None


async def test_an_unchanged_channel_is_read_from_where_it_was_stored(saver: Saver) -> None:
    first = await saver.aput(cfg("t"), ckpt({"a": "a1", "b": "b1"}), md(0), {"a": 1, "b": 1})
    second = await saver.aput(
        first, ckpt({"a": "a2", "b": "b1"}, {"a": 2, "b": 1}), md(1), {"a": 2}
    )
    third = await saver.aput(second, ckpt({"a": "a2"}, {"a": 2}), md(2), {})
    values = [await saver.aget_tuple(c) for c in (first, second, third)]
    assert [v.checkpoint["channel_values"] for v in values if v] == [
        {"a": "a1", "b": "b1"},
        {"a": "a2", "b": "b1"},
        {"a": "a2"},
    ]


@pytest.mark.parametrize("kind", ["memory", "async-sqlite"])
async def test_an_unchanged_channel_is_stored_once(kind: str, tmp_path: Path) -> None:
    saver = InMemorySaver() if kind == "memory" else AsyncSqliteSaver(str(tmp_path / "lg.db"))
    big = ["x" * 100] * 100
    async with saver:
        parent = await saver.aput(cfg("t"), ckpt({"big": big, "n": 0}), md(0), {"big": 1, "n": 1})
        for step in (1, 2, 3):
            values, versions = {"big": big, "n": step}, {"big": 1, "n": step + 1}
            parent = await saver.aput(parent, ckpt(values, versions), md(step), {"n": step + 1})
        history = await stored(saver)
        got = await saver.aget_tuple(parent)
    first = history[0].checkpoint_id
    assert [dict(s.whole) for s in history] == [
        {"big": big, "n": 0},
        {"n": 1},
        {"n": 2},
        {"n": 3},
    ]
    assert all(not s.tails for s in history)
    # Every later checkpoint reads "big" from the first, which alone holds it.
    assert [s.blob_at["big"] for s in history] == [first] * 4
    assert got is not None
    assert got.checkpoint["channel_values"] == {"big": big, "n": 3}


async def test_a_parent_that_is_not_stored_is_still_named_as_parent(saver: Saver) -> None:
    missing = new_id()
    saved = await saver.aput(cfg("t", "", missing), ckpt({"x": 1}), md(), {"x": 1})
    got = await saver.aget_tuple(saved)
    assert got is not None
    assert got.parent_config == cfg("t", "", missing)
    assert got.checkpoint["channel_values"] == {"x": 1}


async def test_putting_the_same_id_again_replaces_the_checkpoint(saver: Saver) -> None:
    c = ckpt({"x": 1})
    await saver.aput(cfg("t"), c, md(0), {"x": 1})
    await saver.aput(cfg("t"), {**c, "channel_values": {"x": 2}}, md(5), {"x": 1})
    got = await saver.aget_tuple(cfg("t"))
    assert got is not None
    assert (got.checkpoint["channel_values"], got.metadata["step"]) == ({"x": 2}, 5)
    assert await ids(saver, cfg("t")) == [c["id"]]


async def test_metadata_takes_plain_user_keys_from_the_config(saver: Saver) -> None:
    config = {
        "configurable": {"thread_id": "t", "checkpoint_ns": "", "user": "ann", "__secret": "s"},
        "metadata": {"score": 3, "obj": {"not": "plain"}, "langgraph_node": "n"},
    }
    saved = await saver.aput(config, ckpt(), {"source": "input", "step": -1, "note": "a\x00b"}, {})
    got = await saver.aget_tuple(saved)
    assert got is not None
    assert got.metadata == {"source": "input", "step": -1, "note": "ab", "user": "ann", "score": 3}


async def test_a_config_without_thread_id_is_refused_with_the_fix(saver: Saver) -> None:
    with pytest.raises(InvalidInputError, match="thread_id"):
        await saver.aput({"configurable": {}}, ckpt(), md(), {})


# ---------------------------------------------------------------------- namespaces


async def test_namespaces_of_a_thread_are_separate_histories(saver: Saver) -> None:
    root = await saver.aput(cfg("t"), ckpt({"x": "root"}), md(), {"x": 1})
    child = await saver.aput(cfg("t", "sub:1"), ckpt({"x": "child"}), md(), {"x": 1})
    for config, value in ((root, "root"), (child, "child")):
        got = await saver.aget_tuple(config)
        assert got is not None
        assert got.checkpoint["channel_values"] == {"x": value}
    assert await ids(saver, cfg("t", "sub:1")) == [child["configurable"]["checkpoint_id"]]


async def test_a_config_without_namespace_lists_every_namespace(saver: Saver) -> None:
    root = await chain(saver, "t", 1)
    child = await chain(saver, "t", 1, ns="sub:1")
    listed = [t.config async for t in saver.alist(cfg("t", ns=None))]
    assert listed == [child[0], root[0]]


async def test_thread_ids_and_namespaces_may_hold_any_characters(saver: Saver) -> None:
    odd = ["a", "a/b", "a%2Fb", "ä b|c"]
    for thread in odd:
        await saver.aput(cfg(thread, "sub:1|x/y"), ckpt({"who": thread}), md(), {"who": 1})
    await saver.adelete_thread("a")
    listed = [t async for t in saver.alist(None)]
    assert sorted(t.config["configurable"]["thread_id"] for t in listed) == sorted(odd[1:])
    for t in listed:
        assert t.config["configurable"]["checkpoint_ns"] == "sub:1|x/y"
        assert t.checkpoint["channel_values"] == {"who": t.config["configurable"]["thread_id"]}


# ---------------------------------------------------------------------- list


async def test_list_is_newest_first(saver: Saver) -> None:
    configs = await chain(saver, "t", 4)
    expected = [c["configurable"]["checkpoint_id"] for c in reversed(configs)]
    assert await ids(saver, cfg("t")) == expected


async def test_list_before_and_limit_page_through_the_history(saver: Saver) -> None:
    configs = await chain(saver, "t", 5)
    all_ids = [c["configurable"]["checkpoint_id"] for c in configs]
    assert await ids(saver, cfg("t"), before=configs[3], limit=2) == [all_ids[2], all_ids[1]]
    assert await ids(saver, cfg("t"), before=configs[0]) == []
    assert await ids(saver, cfg("t"), limit=0) == []


async def test_list_filter_keeps_checkpoints_whose_metadata_matches(saver: Saver) -> None:
    configs = await chain(saver, "t", 4)
    steps = [t.metadata["step"] async for t in saver.alist(cfg("t"), filter={"source": "input"})]
    assert steps == [3, 1]
    assert await ids(saver, cfg("t"), filter={"source": "input", "step": 3}) == [
        configs[3]["configurable"]["checkpoint_id"]
    ]
    assert await ids(saver, cfg("t"), filter={"source": "update"}) == []


async def test_list_without_config_lists_every_thread(saver: Saver) -> None:
    a = await chain(saver, "a", 1)
    b = await chain(saver, "b", 1)
    assert [t.config async for t in saver.alist(None)] == [b[0], a[0]]


async def test_list_with_a_checkpoint_id_lists_only_that_checkpoint(saver: Saver) -> None:
    configs = await chain(saver, "t", 3)
    assert await ids(saver, configs[1]) == [configs[1]["configurable"]["checkpoint_id"]]


async def test_listed_tuples_carry_their_values_and_writes(saver: Saver) -> None:
    first = await saver.aput(cfg("t"), ckpt({"x": 1}), md(0), {"x": 1})
    await saver.aput(first, ckpt({"x": 1}), md(1), {})
    await saver.aput_writes(first, [("x", 2)], "task-1")
    listed = [t async for t in saver.alist(cfg("t"))]
    assert [t.checkpoint["channel_values"] for t in listed] == [{"x": 1}, {"x": 1}]
    assert [t.pending_writes for t in listed] == [[], [("task-1", "x", 2)]]


# ---------------------------------------------------------------------- pending writes


async def test_pending_writes_are_ordered_by_task_path_task_and_index(saver: Saver) -> None:
    saved = await saver.aput(cfg("t"), ckpt(), md(), {})
    await saver.aput_writes(saved, [("a", 1), ("b", 2)], "task-z", task_path="~1")
    await saver.aput_writes(saved, [("c", 3)], "task-y", task_path="~2")
    await saver.aput_writes(saved, [("d", 4)], "task-x", task_path="~1")
    got = await saver.aget_tuple(saved)
    assert got is not None
    assert got.pending_writes == [
        ("task-x", "d", 4),
        ("task-z", "a", 1),
        ("task-z", "b", 2),
        ("task-y", "c", 3),
    ]


async def test_a_regular_write_is_saved_once_and_the_first_value_stays(saver: Saver) -> None:
    saved = await saver.aput(cfg("t"), ckpt(), md(), {})
    await saver.aput_writes(saved, [("x", "first")], "task")
    await saver.aput_writes(saved, [("x", "second"), ("y", "new")], "task")
    got = await saver.aget_tuple(saved)
    assert got is not None
    assert got.pending_writes == [("task", "x", "first"), ("task", "y", "new")]


async def test_a_write_to_a_special_channel_replaces_the_earlier_one(saver: Saver) -> None:
    saved = await saver.aput(cfg("t"), ckpt(), md(), {})
    await saver.aput_writes(saved, [("x", 1), ("__error__", "boom")], "task")
    await saver.aput_writes(
        saved, [("__error__", "boom again"), ("__interrupt__", ["ask"])], "task"
    )
    got = await saver.aget_tuple(saved)
    assert got is not None
    assert got.pending_writes == [
        ("task", "__interrupt__", ["ask"]),
        ("task", "__error__", "boom again"),
        ("task", "x", 1),
    ]


async def test_writes_need_a_stored_checkpoint(saver: Saver) -> None:
    with pytest.raises(CheckpointNotFoundError):
        await saver.aput_writes(cfg("t", "", new_id()), [("x", 1)], "task")
    with pytest.raises(InvalidInputError, match="checkpoint_id"):
        await saver.aput_writes(cfg("t"), [("x", 1)], "task")


async def test_a_new_checkpoint_starts_without_pending_writes(saver: Saver) -> None:
    first = await saver.aput(cfg("t"), ckpt(), md(0), {})
    await saver.aput_writes(first, [("x", 1)], "task")
    second = await saver.aput(first, ckpt(), md(1), {})
    got = await saver.aget_tuple(second)
    assert got is not None
    assert got.pending_writes == []


# ---------------------------------------------------------------------- maintenance


async def test_delete_thread_removes_every_namespace_and_only_that_thread(saver: Saver) -> None:
    await chain(saver, "t", 2)
    await chain(saver, "t", 1, ns="sub:1")
    kept = await chain(saver, "t2", 1)
    await saver.adelete_thread("t")
    await saver.adelete_thread("never-existed")
    assert await ids(saver, cfg("t", ns=None)) == []
    assert await ids(saver, None) == [kept[0]["configurable"]["checkpoint_id"]]


async def test_prune_keep_latest_keeps_the_latest_checkpoint_with_all_its_values(
    saver: Saver,
) -> None:
    first = await saver.aput(cfg("t"), ckpt({"a": 1, "b": 1}), md(0), {"a": 1, "b": 1})
    second = await saver.aput(first, ckpt({"a": 2, "b": 1}, {"a": 2, "b": 1}), md(1), {"a": 2})
    await saver.aput_writes(second, [("a", 3)], "task")
    await saver.aprune(["t"], strategy="keep_latest")
    got = await saver.aget_tuple(cfg("t"))
    assert got is not None
    assert got.config == second
    assert got.checkpoint["channel_values"] == {"a": 2, "b": 1}
    assert got.pending_writes == [("task", "a", 3)]
    assert await ids(saver, cfg("t")) == [second["configurable"]["checkpoint_id"]]


async def test_prune_refuses_an_unknown_strategy(saver: Saver) -> None:
    with pytest.raises(InvalidInputError, match="keep_latest"):
        await saver.aprune(["t"], strategy="keep_oldest")


async def test_delete_for_runs_keeps_the_values_later_checkpoints_read(saver: Saver) -> None:
    first = await saver.aput(cfg("t"), ckpt({"a": 1, "b": 1}), md(0, run_id="r1"), {"a": 1, "b": 1})
    second = await saver.aput(
        first, ckpt({"a": 2, "b": 1}, {"a": 2, "b": 1}), md(1, run_id="r2"), {"a": 2}
    )
    await saver.adelete_for_runs(["r1"])
    got = await saver.aget_tuple(cfg("t"))
    assert got is not None
    assert got.config == second
    assert got.checkpoint["channel_values"] == {"a": 2, "b": 1}
    assert await ids(saver, cfg("t")) == [second["configurable"]["checkpoint_id"]]


async def test_copy_thread_copies_history_values_and_writes(saver: Saver) -> None:
    first = await saver.aput(cfg("src"), ckpt({"x": 1}), md(0), {"x": 1})
    second = await saver.aput(first, ckpt({"x": 1}), md(1), {})
    await saver.aput_writes(second, [("x", 2)], "task")
    await saver.acopy_thread("src", "dst")
    copied = [t async for t in saver.alist(cfg("dst"))]
    assert [t.checkpoint["id"] for t in copied] == await ids(saver, cfg("src"))
    assert copied[0].checkpoint["channel_values"] == {"x": 1}
    assert copied[0].pending_writes == [("task", "x", 2)]
    assert copied[0].parent_config == cfg("dst", "", first["configurable"]["checkpoint_id"])
    with pytest.raises(CheckpointError, match="already has checkpoints"):
        await saver.acopy_thread("src", "dst")


async def test_next_versions_increase_as_strings(saver: Saver) -> None:
    versions = [saver.get_next_version(None, None)]
    for _ in range(11):
        versions.append(saver.get_next_version(versions[-1], None))
    assert versions == sorted(versions)
    assert len(set(versions)) == 12
    assert saver.get_next_version(3, None).startswith("0" * 31 + "4.")


# ---------------------------------------------------------------------- sync API


def test_the_sync_api_mirrors_the_async_one(sync_saver: Saver) -> None:
    first = sync_saver.put(cfg("t"), ckpt({"x": 1}), md(0), {"x": 1})
    second = sync_saver.put(first, ckpt({"x": 2}, {"x": 2}), md(1), {"x": 2})
    sync_saver.put_writes(second, [("x", 3)], "task")
    latest = sync_saver.get_tuple(cfg("t"))
    assert latest is not None
    assert latest.pending_writes == [("task", "x", 3)]
    assert [t.config for t in sync_saver.list(cfg("t"))] == [second, first]
    assert [t.config for t in sync_saver.list(cfg("t"), limit=1)] == [second]
    assert (sync_saver.get(first) or {}).get("channel_values") == {"x": 1}
    sync_saver.delete_thread("t")
    assert sync_saver.get_tuple(cfg("t")) is None


def test_memory_saver_is_in_memory_saver_and_a_context_manager() -> None:
    assert MemorySaver is InMemorySaver
    with InMemorySaver() as saver:
        saver.put(cfg("t"), ckpt(), md(), {})
        assert saver.get_tuple(cfg("t")) is not None


async def test_in_memory_saver_is_safe_from_many_threads() -> None:
    saver = InMemorySaver()
    saved = saver.put(cfg("t"), ckpt(), md(), {})
    tasks = [f"task-{i:02}" for i in range(40)]
    await asyncio.gather(
        *(asyncio.to_thread(saver.put_writes, saved, [("x", t)], t) for t in tasks)
    )
    got = saver.get_tuple(saved)
    assert got is not None
    assert got.pending_writes == [(t, "x", t) for t in tasks]


# ---------------------------------------------------------------------- SQLite specifics


async def test_sqlite_threads_survive_closing_and_reopening(tmp_path: Path) -> None:
    path = str(tmp_path / "lg.db")
    with SqliteSaver.from_conn_string(path) as saver:
        saved = saver.put(cfg("t"), ckpt({"x": [1, 2]}), md(), {"x": 1})
        saver.put_writes(saved, [("x", 3)], "task")
    async with AsyncSqliteSaver.from_conn_string(path) as async_saver:
        got = await async_saver.aget_tuple(cfg("t"))
    assert got is not None
    assert got.config == saved
    assert got.checkpoint["channel_values"] == {"x": [1, 2]}
    assert got.pending_writes == [("task", "x", 3)]


async def test_one_database_holds_flowcore_threads_and_langgraph_threads(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    async with SqliteCheckpointer(path) as store:
        await store.put(Checkpoint("native", "c1", None, step=0, created_at=0.0))
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        await chain(saver, "native", 2)
        await saver.adelete_thread("native")
        assert await ids(saver, None) == []
    async with SqliteCheckpointer(path) as store:
        native = await store.get("native")
        assert native is not None
        assert native.checkpoint_id == "c1"


async def test_a_langgraph_sqlite_file_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "langgraph.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE checkpoints (thread_id TEXT, checkpoint BLOB)")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(CheckpointStoreError, match="something else"):
        SqliteSaver(str(path))
    assert path.read_bytes() == before


def test_sqlite_saver_accepts_a_sqlite3_connection_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "lg.db"
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    try:
        saver.put(cfg("t"), ckpt(), md(), {})
    finally:
        saver.close()
        conn.close()
    with SqliteSaver.from_conn_string(str(path)) as reopened:
        assert reopened.get_tuple(cfg("t")) is not None


async def test_async_sqlite_saver_accepts_an_aiosqlite_connection(tmp_path: Path) -> None:
    path = tmp_path / "lg.db"
    async with aiosqlite.connect(path) as conn, AsyncSqliteSaver(conn) as saver:
        await saver.aput(cfg("t"), ckpt(), md(), {})
        assert saver.store.path == path


def test_memory_conn_string_is_a_temporary_file_removed_on_close() -> None:
    with SqliteSaver.from_conn_string(":memory:") as saver:
        saver.put(cfg("t"), ckpt(), md(), {})
        file = saver.store.path
        assert saver.get_tuple(cfg("t")) is not None
        assert file.exists()
    assert not file.parent.exists()


def test_a_closed_sqlite_saver_refuses_work(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as saver:
        pass
    with pytest.raises(CheckpointError, match="closed"):
        saver.get_tuple(cfg("t"))


async def test_sqlite_saver_sync_calls_work_inside_a_running_event_loop(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as saver:
        saved = saver.put(cfg("t"), ckpt({"x": 1}), md(), {"x": 1})
        got = await saver.aget_tuple(saved)
        assert got is not None
        assert got.checkpoint["channel_values"] == {"x": 1}


async def test_stopping_a_listing_early_leaves_the_saver_usable(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as saver:
        await chain(saver, "t", 3)
        first = next(iter(saver.list(cfg("t"))))
        assert len(await ids(saver, cfg("t"))) == 3
        assert first.metadata["step"] == 2


async def test_async_sqlite_saver_sync_calls_need_another_thread(tmp_path: Path) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as saver:
        saved = await saver.aput(cfg("t"), ckpt(), md(), {})
        with pytest.raises(asyncio.InvalidStateError, match="another thread"):
            saver.get_tuple(saved)
        got = await asyncio.to_thread(saver.get_tuple, saved)
        assert got is not None
        assert got.config == saved
