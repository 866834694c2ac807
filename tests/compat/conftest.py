"""Fixtures shared by the compat saver specs, and a view of what a saver stored."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flowcore.compat.langgraph import (
    START,
    AsyncSqliteSaver,
    InMemorySaver,
    SqliteSaver,
    StateGraph,
)
from flowcore.compat.langgraph._savers_layout import full_values, holders, tails
from flowcore.compat.langgraph._savers_records import _thread_key

Saver = InMemorySaver | SqliteSaver | AsyncSqliteSaver


@pytest.fixture(params=["memory", "sqlite", "async-sqlite"])
async def saver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Saver]:
    """Each LangGraph-shaped saver, fresh; the SQLite ones on a real file."""
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as sync_saver:
            yield sync_saver
    else:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as async_saver:
            yield async_saver


@pytest.fixture(params=["sqlite", "async-sqlite"])
async def file_saver(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[SqliteSaver | AsyncSqliteSaver]:
    """Each saver that keeps its threads in a SQLite file, as flowcore records."""
    if request.param == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as sync_saver:
            yield sync_saver
    else:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as async_saver:
            yield async_saver


@dataclass(frozen=True)
class Stored:
    """What one stored checkpoint holds itself: values whole, list tails, and where each
    channel's value is held (``blob_at``)."""

    checkpoint_id: str
    whole: Mapping[str, Any]
    tails: Mapping[str, Mapping[str, Any]]
    blob_at: Mapping[str, str]


async def stored(saver: Saver, thread: str = "t", ns: str = "") -> list[Stored]:
    """The checkpoints a saver holds for one thread and namespace, oldest first.

    Read around the saver: from an ``InMemorySaver``'s dicts, or from the
    flowcore records of a SQLite saver's store.
    """
    key = _thread_key(thread, ns)
    if isinstance(saver, InMemorySaver):
        core = saver._core
        out = []
        for cid, saved in core.spaces.get(key, {}).items():
            parts = core.codec.loads(saved.data)
            out.append(Stored(cid, parts["channels"], parts.get("tails", {}), saved.blob_at))
        return out
    history = await saver.store.history(key)
    return [
        Stored(r.checkpoint_id, full_values(r), tails(r), holders(r)) for r in reversed(history)
    ]


@pytest.fixture
def failing_beside_a_slow_sibling() -> Callable[[type[Any]], StateGraph]:
    """A graph (on the given state schema) whose node ``broken`` fails while ``slow`` waits.

    ``broken`` raises ``ValueError("broken on purpose")`` only once ``slow`` has
    started, so the failure always finds its sibling running.
    """

    def build(schema: type[Any]) -> StateGraph:
        sibling_started = asyncio.Event()

        async def slow(state: Any) -> dict[str, Any]:
            sibling_started.set()
            await asyncio.Event().wait()
            return {}

        async def broken(state: Any) -> dict[str, Any]:
            await sibling_started.wait()
            raise ValueError("broken on purpose")

        graph = StateGraph(schema)
        graph.add_node("slow", slow)
        graph.add_node("broken", broken)
        graph.add_edge(START, "slow")
        graph.add_edge(START, "broken")
        return graph

    return build


def patch_checkpoint_ids(monkeypatch: pytest.MonkeyPatch, make_id: Any) -> None:
    """Make every compat module that mints checkpoint ids use ``make_id`` (deterministic ids)."""
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith("flowcore.compat.langgraph") and hasattr(module, "new_checkpoint_id"):
            monkeypatch.setattr(module, "new_checkpoint_id", make_id)
