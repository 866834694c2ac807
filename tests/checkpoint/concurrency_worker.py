"""Runs N graph runs on distinct threads at once against one SQLite file.

Usage: python concurrency_worker.py DB PREFIX N
Prints one JSON line: {"completed": k, "errors": [...]}.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Annotated, Any, TypedDict

from flowcore import START, Graph, SqliteCheckpointer, append

STEPS = 5  # supersteps per run: a, fan-out b1..b3, join c, d, e


class State(TypedDict):
    who: str
    log: Annotated[list[str], append]


def build(store: Any) -> Any:
    def make(name: str) -> Any:
        async def node(state: Any) -> dict[str, Any]:
            await asyncio.sleep(0)
            return {"log": [f"{state['who']}:{name}"]}

        return node

    g = Graph(State, name="busy")
    for name in ("a", "b1", "b2", "b3", "c", "d", "e"):
        g.add_node(name, make(name))
    g.add_edge(START, "a")
    for b in ("b1", "b2", "b3"):
        g.add_edge("a", b)
    g.add_edge(["b1", "b2", "b3"], "c").add_edge("c", "d").add_edge("d", "e")
    return g.compile(checkpointer=store)


def expected_log(who: str) -> list[str]:
    return [f"{who}:{n}" for n in ("a", "b1", "b2", "b3", "c", "d", "e")]


async def run_many(db: str, prefix: str, count: int) -> dict[str, Any]:
    async with SqliteCheckpointer(db) as store:
        app = build(store)
        results = await asyncio.gather(
            *(app.run({"who": f"{prefix}{i}"}, thread_id=f"{prefix}{i}") for i in range(count)),
            return_exceptions=True,
        )
    errors = [repr(r) for r in results if isinstance(r, BaseException)]
    errors += [repr(r.errors) for r in results if not isinstance(r, BaseException) and not r.ok]
    completed = sum(1 for r in results if not isinstance(r, BaseException) and r.ok)
    return {"completed": completed, "errors": errors}


if __name__ == "__main__":
    db, prefix, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    print(json.dumps(asyncio.run(run_many(db, prefix, n))))
