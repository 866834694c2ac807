"""Checkpoint benchmark: what durability costs per superstep, and how storage grows.

Run from the repository root::

    python bench/checkpoints.py            # full run, well under a minute on 2 cores
    python bench/checkpoints.py --smoke    # tiny sizes, for the test suite

Two figures, both through the public API:

1. **Overhead per superstep** on the 200-iteration loop (one node that bumps a
   counter and loops back): wall time per superstep without a checkpointer,
   and with the in-memory and SQLite stores in each durability mode; the
   difference to "no thread" is what checkpointing costs.
2. **Bytes stored** for a state that gains one message per step: the size
   of each stored checkpoint record (as serialized) at step 10 and at step
   200, the total after 200 steps, and, for comparison, what storing the full
   state at every step would have cost.

A benchmark, not a test: nothing asserts a time. It does check every run
completed with the right final state, so the figures measure real work.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from flowcore import (
    END,
    START,
    Checkpoint,
    Checkpointer,
    Graph,
    InMemoryCheckpointer,
    PendingWrite,
    append,
)
from flowcore.checkpoint import JsonSerializer, SqliteCheckpointer
from flowcore.checkpoint.records import checkpoint_to_record


class LoopState(TypedDict):
    i: int


class ChatState(TypedDict):
    i: int
    messages: Annotated[list[dict[str, Any]], append]


def loop_graph(iterations: int, store: Checkpointer | None) -> Any:
    async def step(state: Any) -> dict[str, Any]:
        return {"i": state["i"] + 1}

    def route(state: Any) -> str:
        return "done" if state["i"] >= iterations else "again"

    g = Graph(LoopState, name=f"loop-{iterations}")
    g.add_node("step", step).add_edge(START, "step")
    g.add_conditional_edges("step", route, {"again": "step", "done": END})
    return g.compile(checkpointer=store)


def chat_graph(iterations: int, store: Checkpointer) -> Any:
    async def step(state: Any) -> dict[str, Any]:
        n = state["i"] + 1
        message = {"role": "assistant", "content": f"message {n}: " + "lorem ipsum " * 8}
        return {"i": n, "messages": [message]}

    def route(state: Any) -> str:
        return "done" if state["i"] >= iterations else "again"

    g = Graph(ChatState, name=f"chat-{iterations}")
    g.add_node("step", step).add_edge(START, "step")
    g.add_conditional_edges("step", route, {"again": "step", "done": END})
    return g.compile(checkpointer=store)


class MeasuringStore:
    """Wraps a store and records the serialized size of every checkpoint it is given."""

    def __init__(self, inner: Checkpointer) -> None:
        self.inner = inner
        self.sizes: list[tuple[int, int, bool]] = []  # (step, bytes, is_snapshot)
        self._serde = JsonSerializer()

    async def put(self, checkpoint: Checkpoint) -> None:
        size = len(self._serde.dumps(checkpoint_to_record(checkpoint)))
        self.sizes.append((checkpoint.step, size, checkpoint.snapshot is not None))
        await self.inner.put(checkpoint)

    async def put_write(self, thread_id: str, checkpoint_id: str, write: PendingWrite) -> None:
        await self.inner.put_write(thread_id, checkpoint_id, write)

    async def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        return await self.inner.get(thread_id, checkpoint_id)

    async def get_writes(self, thread_id: str, checkpoint_id: str) -> tuple[PendingWrite, ...]:
        return await self.inner.get_writes(thread_id, checkpoint_id)

    async def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> list[Checkpoint]:
        return await self.inner.history(thread_id, limit=limit, before=before)

    async def delete_thread(self, thread_id: str) -> None:
        await self.inner.delete_thread(thread_id)

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class Row:
    label: str
    rounds: int
    median_ms: float
    per_step_us: float
    overhead_us: float | None = None


async def time_loop(
    label: str, iterations: int, rounds: int, store_factory: Any, durability: str | None
) -> Row:
    times: list[float] = []
    for r in range(rounds + 1):  # the first round warms up
        store = await store_factory()
        app = loop_graph(iterations, store)
        kwargs: dict[str, Any] = {}
        if durability is not None:
            kwargs = {"thread_id": f"t{r}", "durability": durability}
        t0 = time.perf_counter()
        result = await app.run({"i": 0}, **kwargs)
        elapsed = time.perf_counter() - t0
        if result.status != "completed" or result.state["i"] != iterations:
            raise SystemExit(f"{label}: run ended {result.status} with {result.state}")
        if store is not None:
            await store.aclose()
        if r:
            times.append(elapsed)
    median = statistics.median(times)
    return Row(label, rounds, median * 1e3, median / iterations * 1e6)


async def overhead_table(iterations: int, rounds: int, tmp: Path) -> list[Row]:
    counter = iter(range(10**6))

    async def none() -> None:
        return None

    async def memory() -> Checkpointer:
        return InMemoryCheckpointer()

    async def sqlite() -> Checkpointer:
        return await SqliteCheckpointer.open(str(tmp / f"bench-{next(counter)}.db"))

    rows = [await time_loop("no thread", iterations, rounds, none, None)]
    for name, factory in (("in-memory", memory), ("sqlite", sqlite)):
        for durability in ("sync", "async", "exit"):
            label = f"{name}, durability={durability}"
            rows.append(await time_loop(label, iterations, rounds, factory, durability))
    base = rows[0].per_step_us
    for row in rows[1:]:
        row.overhead_us = row.per_step_us - base
    return rows


async def growth(iterations: int, tmp: Path) -> dict[str, Any]:
    db = tmp / "growth.db"
    store = MeasuringStore(await SqliteCheckpointer.open(str(db)))
    app = chat_graph(iterations, store)
    result = await app.run({"i": 0}, thread_id="chat")
    if result.status != "completed" or len(result.state["messages"]) != iterations:
        raise SystemExit(f"growth run ended {result.status}")
    await store.aclose()
    by_step = {step: (size, snap) for step, size, snap in store.sizes}
    total = sum(size for _, size, _ in store.sizes)
    serde = JsonSerializer()
    # What one full-state snapshot per step would cost, for comparison.
    message = {"role": "assistant", "content": "message 000: " + "lorem ipsum " * 8}
    one = len(serde.dumps(message))
    full = sum(one * step for step, _, _ in store.sizes)
    return {
        "checkpoints": len(store.sizes),
        "snapshots": sum(1 for _, _, snap in store.sizes if snap),
        "at_10": by_step.get(10),
        "at_200": by_step.get(iterations),
        "total": total,
        "total_at_10": sum(size for step, size, _ in store.sizes if step <= 10),
        "full_state_each_step": full,
        "file_bytes": db.stat().st_size + _size(Path(f"{db}-wal")),
    }


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


async def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="flowcore checkpoint benchmark")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    args = parser.parse_args(argv)
    iterations, rounds = (20, 1) if args.smoke else (200, 7)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        rows = await overhead_table(iterations, rounds, tmp)
        grown = await growth(iterations, tmp)
    cpus = os.cpu_count()
    print("# flowcore checkpoint benchmark\n")
    print(f"Python {sys.version.split()[0]} · {cpus} CPUs · loop of {iterations} supersteps\n")
    print("## Overhead per superstep (loop, trivial node)\n")
    print("| store | rounds | median ms | µs/superstep | checkpoint overhead µs/superstep |")
    print("|---|--:|--:|--:|--:|")
    for row in rows:
        extra = "-" if row.overhead_us is None else f"{row.overhead_us:.1f}"
        print(
            f"| {row.label} | {row.rounds} | {row.median_ms:.2f} | {row.per_step_us:.1f} "
            f"| {extra} |"
        )
    print(f"\n## Storage of a state growing by one message per step ({iterations} steps)\n")
    print("| figure | value |")
    print("|---|--:|")
    for key in ("at_10", "at_200"):
        found = grown[key]
        if found is not None:
            size, snap = found
            kind = "snapshot" if snap else "delta"
            step = 10 if key == "at_10" else iterations
            print(f"| bytes of the checkpoint at step {step} ({kind}) | {size} |")
    print(f"| checkpoints stored | {grown['checkpoints']} |")
    print(f"| of which full snapshots | {grown['snapshots']} |")
    print(f"| bytes stored up to step 10 | {grown['total_at_10']} |")
    print(f"| bytes stored after {iterations} steps | {grown['total']} |")
    print(f"| mean bytes per checkpoint | {grown['total'] / grown['checkpoints']:.0f} |")
    print(f"| full state at every step would be | {grown['full_state_each_step']} |")
    print(f"| SQLite file + WAL on disk | {grown['file_bytes']} |")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
