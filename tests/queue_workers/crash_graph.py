"""A graph for the crash specs: ``a -> (b, c) -> d``, every execution logged to a file.

``c`` holds on its first execution (for ``HOLD_SECONDS``) so a spec can kill
the worker while ``b``'s result is saved and ``c`` is still running.
Loaded by ``flowcore worker --graphs tests.queue_workers.crash_graph:build``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from typing import Any, TypedDict

from flowcore import END, START, Graph
from flowcore.checkpoint.protocol import Checkpointer
from flowcore.graph.compiled import CompiledGraph

NAME = "crash.chain"
HOLD_SECONDS = 20.0


class CrashState(TypedDict, total=False):
    x: int
    a: int
    b: int
    c: int
    d: int


def _log(node: str) -> int:
    """Append one line for this execution; returns how many executions of ``node`` came before."""
    path = os.environ["FLOWCORE_CRASH_LOG"]
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"node": node, "pid": os.getpid()}) + "\n")
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if json.loads(line)["node"] == node) - 1


def _node(name: str, value: Any) -> Any:
    async def node(state: Mapping[str, Any]) -> dict[str, Any]:
        before = await asyncio.to_thread(_log, name)
        if name == "c" and before == 0:
            await asyncio.sleep(HOLD_SECONDS)  # the spec kills the worker meanwhile
        return {name: value(state)}

    return node


def build(checkpointer: Checkpointer) -> dict[str, CompiledGraph]:
    """The crash spec's graph on the worker's checkpointer."""
    graph = Graph(CrashState)
    graph.add_node("a", _node("a", lambda s: s["x"] + 1))
    graph.add_node("b", _node("b", lambda s: s["a"] * 2))
    graph.add_node("c", _node("c", lambda s: s["a"] * 3))
    graph.add_node("d", _node("d", lambda s: s["b"] + s["c"]))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("a", "c")
    graph.add_edge("b", "d").add_edge("c", "d").add_edge("d", END)
    return {NAME: graph.compile(name=NAME, version="1", checkpointer=checkpointer)}
