"""A process the crash tests start, kill with SIGKILL, and start again.

It runs (or resumes) one thread of a 30-superstep graph with a 4-way fan-out
in the middle, on a SqliteCheckpointer. Every node first records its
execution in a side table (a separate SQLite file, committed at once), then
returns its write. The process kills itself at a named crash point when told
to; the test kills it from outside at random moments.

Usage: python crash_worker.py CONFIG_JSON
CONFIG: {"db", "side", "thread", "durability", "crash": null | {"point", "node"}}
Prints ``node NAME`` when a node has recorded its execution, then, at the
end, one JSON line: {"status", "load_ms", "interrupted"}.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import sys
import time
from typing import Annotated, Any, TypedDict

from flowcore import (
    END,
    START,
    Checkpoint,
    Graph,
    PendingWrite,
    Resume,
    ResumeError,
    append,
    interrupt,
)
from flowcore.checkpoint import SqliteCheckpointer

CHAIN_BEFORE = 12  # s01..s12: supersteps 1-12
FAN = 4  # f1..f4: superstep 13
CHAIN_AFTER = 17  # join + t01..t16: supersteps 14-30
ASKS = "s06"  # this node calls interrupt() once
POINTS = (
    "after_side_effect",
    "between_write_and_checkpoint",
    "inside_checkpoint_commit",
    "saving_interrupt",
    "during_resume",
)


class State(TypedDict):
    log: Annotated[list[str], append]
    total: Annotated[int, lambda a, b: a + b]
    answer: str


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def die_on_commit(n: int) -> Any:
    """A before-commit hook that kills the process inside its n-th write transaction."""
    seen = [0]

    def hook() -> None:
        seen[0] += 1
        if seen[0] >= n:
            die()

    return hook


def node_names() -> list[list[str]]:
    """The supersteps, in order: lists of node names that run together."""
    steps = [[f"s{i:02d}"] for i in range(1, CHAIN_BEFORE + 1)]
    steps.append([f"f{i}" for i in range(1, FAN + 1)])
    steps.append(["join"])
    steps.extend([f"t{i:02d}"] for i in range(1, CHAIN_AFTER))
    return steps


def build(store: Any, side: str, crash: dict[str, Any] | None) -> Any:
    def make(name: str, weight: int) -> Any:
        def node(state: Any) -> dict[str, Any]:
            # The side effect: one row per execution, committed before the write.
            with sqlite3.connect(side, timeout=30) as con:
                con.execute(
                    "INSERT INTO runs(node, pid, at) VALUES (?, ?, ?)",
                    (name, os.getpid(), time.time()),
                )
            if crash and crash["point"] == "after_side_effect" and crash["node"] == name:
                die()
            # Tell the test a node is running: its random kills are timed from
            # these lines, not from process start, so they land on a busy machine too.
            print(f"node {name}", flush=True)
            update: dict[str, Any] = {"log": [name], "total": weight}
            if name == ASKS:
                update["answer"] = interrupt({"node": name, "step": len(state["log"])})
            time.sleep(random.uniform(0.001, 0.006))
            return update

        node.__name__ = name
        return node

    graph = Graph(State, name="crashy")
    prev: list[str] = [START]
    weight = 1
    for step in node_names():
        for name in step:
            graph.add_node(name, make(name, weight))
            weight += 1
        if len(prev) > 1:
            graph.add_edge(prev, step[0])
        else:
            for name in step:
                graph.add_edge(prev[0], name)
        prev = step
    graph.add_edge(prev[0], END)
    return graph.compile(checkpointer=store)


class CrashingStore:
    """Wraps the SQLite store; kills the process at the named crash points."""

    def __init__(self, inner: SqliteCheckpointer, crash: dict[str, Any] | None) -> None:
        self.inner = inner
        self.crash = crash or {}
        self.writes_since_put = 0

    def _at(self, point: str) -> bool:
        return self.crash.get("point") == point

    async def put(self, checkpoint: Checkpoint) -> None:
        if self._at("between_write_and_checkpoint") and self.writes_since_put:
            die()
        self.writes_since_put = 0
        await self.inner.put(checkpoint)

    async def put_write(self, thread_id: str, checkpoint_id: str, write: PendingWrite) -> None:
        if self._at("saving_interrupt") and write.payload.get("status") == "interrupted":
            self.inner.before_commit = lambda: die()
        await self.inner.put_write(thread_id, checkpoint_id, write)
        self.writes_since_put += 1

    async def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        found = await self.inner.get(thread_id, checkpoint_id)
        if self._at("during_resume") and found is not None:
            die()
        return found

    async def get_writes(self, thread_id: str, checkpoint_id: str) -> tuple[PendingWrite, ...]:
        return await self.inner.get_writes(thread_id, checkpoint_id)

    async def history(self, thread_id: str, **kw: Any) -> list[Checkpoint]:
        return await self.inner.history(thread_id, **kw)

    async def delete_thread(self, thread_id: str) -> None:
        await self.inner.delete_thread(thread_id)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def main(config: dict[str, Any]) -> None:
    t0 = time.perf_counter()
    crash = config.get("crash")
    inner = await SqliteCheckpointer.open(config["db"])
    if crash and crash["point"] == "inside_checkpoint_commit":
        inner.before_commit = die_on_commit(int(crash.get("after", 1)))
    store = CrashingStore(inner, crash)
    try:
        app = build(store, config["side"], crash)
        thread = config["thread"]
        try:
            state = await app.get_state(thread)
        except ResumeError:
            state = None  # a new thread
        load_ms = (time.perf_counter() - t0) * 1e3
        if state is not None and not state.next and not state.interrupts:
            # Killed after the run's last commit: the thread is already done.
            print(json.dumps({"status": "completed", "load_ms": load_ms, "interrupted": False}))
            return
        if state is None:
            run_input: Any = {"log": [], "total": 0, "answer": ""}
        elif state.interrupts:
            run_input = Resume("yes")
        else:
            run_input = None
        result = await app.run(run_input, thread_id=thread, durability=config["durability"])
    finally:
        await store.aclose()
    if result.status not in ("completed", "interrupted"):
        raise SystemExit(f"run ended {result.status}: {result.errors!r}")
    print(
        json.dumps(
            {"status": result.status, "load_ms": load_ms, "interrupted": bool(result.interrupts)}
        )
    )


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
