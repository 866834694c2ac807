"""The graph the queue fault test runs: five nodes with a parallel pair, each execution logged.

``start -> a -> (b, c in parallel) -> d -> end``. Every node appends one
JSON line ``{"run", "node", "pid", "t"}`` to the file ``FLOWCORE_FAULT_LOG``
names *when it starts* (an append of one short line is atomic), sleeps a
little (up to ``FLOWCORE_FAULT_SLEEP`` seconds, 0.25 by default; the
throughput bench sets 0), and returns a value the bench can recompute from the run's input
``x``. So the bench counts every execution of every node, by process, and
checks every result in the final state.

Loaded by ``flowcore worker --graphs bench.queue_fault_graph:build``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from flowcore import END, START, Graph
from flowcore.checkpoint.protocol import Checkpointer
from flowcore.graph.compiled import CompiledGraph

NAME = "faults.chain"
NODES = ("a", "b", "c", "d")


class FaultState(TypedDict, total=False):
    x: int
    run: str
    a: int
    b: int
    c: int
    d: int


def expected(x: int) -> dict[str, int]:
    """The values every node writes for input ``x`` (what a correct final state holds)."""
    a = x + 1
    b, c = a * 2, a * 3
    return {"a": a, "b": b, "c": c, "d": b + c}


def _log(run: str, node: str) -> None:
    path = os.environ.get("FLOWCORE_FAULT_LOG")
    if not path:
        return
    line = json.dumps({"run": run, "node": node, "pid": os.getpid(), "t": time.time()}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _node(name: str, compute: Callable[[Mapping[str, Any]], int]) -> Any:
    async def node(state: Mapping[str, Any]) -> dict[str, Any]:
        await asyncio.to_thread(_log, str(state.get("run", "")), name)
        top = float(os.environ.get("FLOWCORE_FAULT_SLEEP", "0.25"))
        if top > 0:  # the fault test: nodes long enough to be killed mid-way
            await asyncio.sleep(random.uniform(top / 5, top))
        return {name: compute(state)}

    node.__name__ = f"fault_{name}"
    return node


def build(checkpointer: Checkpointer) -> dict[str, CompiledGraph]:
    """The fault test's graph, on the worker's checkpointer."""
    graph = Graph(FaultState)
    graph.add_node("a", _node("a", lambda s: int(s["x"]) + 1))
    graph.add_node("b", _node("b", lambda s: int(s["a"]) * 2))
    graph.add_node("c", _node("c", lambda s: int(s["a"]) * 3))
    graph.add_node("d", _node("d", lambda s: int(s["b"]) + int(s["c"])))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("a", "c")
    graph.add_edge("b", "d").add_edge("c", "d").add_edge("d", END)
    return {NAME: graph.compile(name=NAME, version="1", checkpointer=checkpointer)}
