"""Spec: durability="sync" on flowcore's savers stores each superstep in one commit.

LangGraph's saver commits a task's writes, then the checkpoint after them:
two commits a step. flowcore's savers store the same records, but the last
task of a step whose other tasks all succeeded has its writes queued and
stored with the checkpoint that follows, in one transaction; the other
tasks' writes are committed as they finish, as before.
"""

from __future__ import annotations

import operator
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import END, START, AsyncSqliteSaver, StateGraph

from .conftest import patch_checkpoint_ids
from .test_save_batch import _counter, loop_graph, stored


class FanState(TypedDict):
    log: Annotated[list[str], operator.add]


@pytest.fixture
async def savers(tmp_path: Path) -> AsyncIterator[tuple[AsyncSqliteSaver, AsyncSqliteSaver]]:
    """One saver as flowcore runs it, one held to a commit per save as LangGraph's does."""
    async with (
        AsyncSqliteSaver.from_conn_string(str(tmp_path / "fused.db")) as fused,
        AsyncSqliteSaver.from_conn_string(str(tmp_path / "single.db")) as single,
    ):
        single._open_batch = lambda: None  # type: ignore[method-assign]
        yield fused, single


def count_commits(saver: AsyncSqliteSaver) -> list[int]:
    commits = [0]

    def counted() -> None:
        commits[0] += 1

    saver.store.before_commit = counted
    return commits


async def run_on_both(
    savers: tuple[AsyncSqliteSaver, AsyncSqliteSaver],
    monkeypatch: pytest.MonkeyPatch,
    builder: Any,
    payload: dict[str, Any],
) -> tuple[list[Any], list[int]]:
    """Run ``builder`` per-step durable on each saver, with the same checkpoint ids.

    Returns each run's output and the commits each made.
    """
    outputs, counts = [], []
    for saver in savers:
        commits = count_commits(saver)
        patch_checkpoint_ids(monkeypatch, _counter())
        graph = builder.compile(checkpointer=saver)
        before = commits[0]
        config = {"configurable": {"thread_id": "t"}}
        outputs.append(await graph.ainvoke(payload, config, durability="sync"))
        counts.append(commits[0] - before)
    return outputs, counts


async def test_a_loop_commits_once_per_step_and_stores_the_same_records(
    savers: tuple[AsyncSqliteSaver, AsyncSqliteSaver], monkeypatch: pytest.MonkeyPatch
) -> None:
    fused, single = savers
    outputs, counts = await run_on_both(savers, monkeypatch, loop_graph(), {"n": 0, "log": []})
    assert [out["n"] for out in outputs] == [12, 12]
    assert await stored(fused) == await stored(single)
    # Both commit 13 checkpoints (the input's and one a step); the single path also
    # commits the writes of each step's only task alone: the input's __start__ and 12 steps.
    fused_commits, single_commits = counts
    assert single_commits - fused_commits == 13


def fan_graph() -> Any:
    def node(name: str) -> Any:
        def run(state: FanState) -> dict[str, Any]:
            return {"log": [name]}

        return run

    builder = StateGraph(FanState)
    for name in ("a", "b", "c"):
        builder.add_node(name, node(name))
        builder.add_edge(START, name)
        builder.add_edge(name, END)
    return builder


async def test_in_a_parallel_step_only_the_last_tasks_writes_wait_for_the_checkpoint(
    savers: tuple[AsyncSqliteSaver, AsyncSqliteSaver], monkeypatch: pytest.MonkeyPatch
) -> None:
    fused, single = savers
    outputs, counts = await run_on_both(savers, monkeypatch, fan_graph(), {"log": []})
    assert [sorted(out["log"]) for out in outputs] == [["a", "b", "c"]] * 2
    assert await stored(fused) == await stored(single)
    fused_commits, single_commits = counts
    # The __start__ task's writes and those of whichever of a, b, c ends last ride with
    # the next checkpoint; the first two are stored before their tasks end (in one
    # commit or two, as they happen to finish).
    assert single_commits - fused_commits in (2, 3)
