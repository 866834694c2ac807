"""Side-by-side benchmark: LangGraph vs flowcore.compat.langgraph vs flowcore's native API.

Run from the repository root (LangGraph must be installed: it is in the ``test`` extra)::

    python bench/compare.py                          # full run, 15 rounds per workload
    python bench/compare.py --rounds 3 --only a,b,c  # fewer rounds, some workloads
    python bench/compare.py --smoke                  # tiny sizes, one round (a few seconds)
    python bench/compare.py --json bench/results/compare.json

Every LangGraph workload is written ONCE, as a function taking a backend
namespace ``lg`` (``StateGraph``, ``START``, ``END``, ``Send``, savers,
``add_messages``, ``AIMessage``), and run on LangGraph's own modules and on
``flowcore.compat.langgraph``. The same workload is written a second time on
flowcore's native ``Graph`` where that API can express it. Node bodies are
trivial ``async def`` functions, so the figures are the engines' own cost.

The three backends, and a workload's bare-asyncio baselines, alternate within
every round (the order rotates from round to round), after one warm-up run
each. Every run is checked outside its timing: each node body counts itself,
and the count must equal the node executions the workload needs (a backend
that skipped work fails the benchmark, naming workload and backend), then the
final state is checked. Checkpointed workloads print their durability mode
and the SQLite ``synchronous`` and ``journal_mode`` read back from each open
store: (e) and (i) at each saver's defaults, (k) and (l) per-step durable
(``durability="sync"``) at LangGraph's ``synchronous=FULL`` on every backend.
Medians and minima are reported, with the ratios LangGraph/compat and
LangGraph/native (above 1 means flowcore is faster). Peak memory comes from
a separate, untimed run under ``tracemalloc``. A full run measures each
workload in a fresh interpreter of its own (``--in-process``: all in one), so
nothing one workload leaves behind (heap, caches, threads) can slow the next.

This is a benchmark, not a test: nothing here asserts a time. See
bench/README.md for what each workload is.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import operator
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import aiosqlite

import flowcore
from flowcore import END, START, Graph, InMemoryCheckpointer, RunResult, Send, append
from flowcore.checkpoint import SqliteCheckpointer

BACKENDS: tuple[str, ...] = ("langgraph", "compat", "native")
TABLE_HEADER = (
    "| workload | backend | rounds | median ms | min ms | peak memory KiB | LangGraph / this "
    "| node runs checked | durability, store |"
)
RECURSION = 100_000
LOREM = "lorem ipsum " * 8

Runner = Callable[[], Awaitable[Any]]


@dataclass(frozen=True)
class Prepared:
    """A runner ready to time, and the durability and store settings it runs with.

    ``store`` is read back from the open store (``PRAGMA journal_mode`` and
    ``synchronous`` on its own connection), not taken from a default.
    """

    run: Runner
    durability: str | None = None
    store: str | None = None


Setup = Callable[[AsyncExitStack, Path], Awaitable[Prepared]]


# ------------------------------------------------------------------ settings
@dataclass(frozen=True)
class Sizes:
    """Sizes of every workload, and how long a DAG run may take before it is given up."""

    label: str
    chain: int = 100
    fanout: int = 1_000
    loop: int = 200
    send: int = 1_000
    compile_chain: int = 1_000
    dag: int = 10_000
    dag_edges: int = 3
    grow: int = 100
    long_chain: int = 10_000
    deadline_s: float = 60.0


FULL = Sizes("full")
SMOKE = Sizes(
    "smoke",
    chain=10,
    fanout=20,
    loop=10,
    send=20,
    compile_chain=20,
    dag=200,
    grow=10,
    long_chain=100,
)


# --------------------------------------------------------------- backends
def langgraph_backend() -> SimpleNamespace:
    """LangGraph's own modules, under the names the workloads use."""
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import END as LG_END
    from langgraph.graph import START as LG_START
    from langgraph.graph import StateGraph, add_messages
    from langgraph.types import Send

    return SimpleNamespace(
        name="langgraph",
        StateGraph=StateGraph,
        START=LG_START,
        END=LG_END,
        Send=Send,
        InMemorySaver=InMemorySaver,
        AsyncSqliteSaver=AsyncSqliteSaver,
        add_messages=add_messages,
        AIMessage=AIMessage,
    )


def compat_backend() -> SimpleNamespace:
    """flowcore.compat.langgraph, under the same names."""
    from flowcore.compat import langgraph as c

    return SimpleNamespace(
        name="compat",
        StateGraph=c.StateGraph,
        START=c.START,
        END=c.END,
        Send=c.Send,
        InMemorySaver=c.InMemorySaver,
        AsyncSqliteSaver=c.AsyncSqliteSaver,
        add_messages=c.add_messages,
        AIMessage=c.AIMessage,
    )


# ----------------------------------------------------------- shared pieces
class ChainState(TypedDict):
    x: int


class LoopState(TypedDict):
    i: int


class SendState(TypedDict):
    items: list[int]
    results: Annotated[list[int], operator.add]


class NativeSendState(TypedDict):
    items: list[int]
    results: Annotated[list[int], append]


class NativeGrowState(TypedDict):
    i: int
    messages: Annotated[list[dict[str, Any]], append]


@dataclass
class Executions:
    """Node executions since the last reset: every node body counts itself.

    Each timed run resets it first and checks it after (outside the timing), so a
    backend that skipped nodes, or ran them twice, fails the benchmark loudly.
    Runs never overlap (the backends take turns), so one counter serves them all.
    """

    n: int = 0


EXECUTIONS = Executions()


async def _noop(state: Any) -> None:
    EXECUTIONS.n += 1


def dag_predecessors(size: int, per_node: int, seed: int = 8) -> list[list[int]]:
    """A seeded random DAG: node i>0 has min(i, per_node) distinct predecessors among 0..i-1."""
    rng = random.Random(seed)
    return [sorted(rng.sample(range(i), min(i, per_node))) for i in range(size)]


def _thread_ids() -> Callable[[], str]:
    counter = itertools.count()
    return lambda: f"t{next(counter)}"


def _loop_nodes(iterations: int, end: Any) -> tuple[Any, Any]:
    async def step(state: Any) -> dict[str, Any]:
        EXECUTIONS.n += 1
        return {"i": state["i"] + 1}

    def route(state: Any) -> Any:
        return end if state["i"] >= iterations else "step"

    return step, route


# --------------------------------------------- workloads on the LangGraph API
def lg_chain(lg: Any, size: int) -> Any:
    g = lg.StateGraph(ChainState)
    for i in range(size):
        g.add_node(f"n{i}", _noop)
    g.add_edge(lg.START, "n0")
    for i in range(size - 1):
        g.add_edge(f"n{i}", f"n{i + 1}")
    g.add_edge(f"n{size - 1}", lg.END)
    return g.compile()


def lg_fanout(lg: Any, width: int) -> Any:
    g = lg.StateGraph(ChainState)
    g.add_node("src", _noop)
    g.add_node("sink", _noop)
    g.add_edge(lg.START, "src")
    for i in range(width):
        g.add_node(f"w{i}", _noop)
        g.add_edge("src", f"w{i}")
        g.add_edge(f"w{i}", "sink")
    g.add_edge("sink", lg.END)
    return g.compile()


def lg_loop(lg: Any, iterations: int, checkpointer: Any = None) -> Any:
    step, route = _loop_nodes(iterations, lg.END)
    g = lg.StateGraph(LoopState)
    g.add_node("step", step)
    g.add_edge(lg.START, "step")
    g.add_conditional_edges("step", route, ["step", lg.END])
    return g.compile(checkpointer=checkpointer)


def lg_send(lg: Any, items: int) -> Any:
    def fan(state: Any) -> list[Any]:
        return [lg.Send("work", {"item": x}) for x in state["items"]]

    async def work(arg: Any) -> dict[str, Any]:
        EXECUTIONS.n += 1
        return {"results": [arg["item"]]}

    g = lg.StateGraph(SendState)
    g.add_node("work", work)
    g.add_node("reduce", _noop)
    g.add_conditional_edges(lg.START, fan, ["work"])
    g.add_edge("work", "reduce")
    g.add_edge("reduce", lg.END)
    return g.compile()


def lg_dag(lg: Any, preds: list[list[int]]) -> Any:
    g = lg.StateGraph(ChainState)
    has_succ = [False] * len(preds)
    for i in range(len(preds)):
        g.add_node(f"n{i}", _noop)
    g.add_edge(lg.START, "n0")
    for i, ps in enumerate(preds[1:], start=1):
        for p in ps:
            has_succ[p] = True
        g.add_edge(f"n{ps[0]}" if len(ps) == 1 else [f"n{p}" for p in ps], f"n{i}")
    for i, succ in enumerate(has_succ):
        if not succ:
            g.add_edge(f"n{i}", lg.END)
    return g.compile()


def lg_grow(lg: Any, iterations: int, checkpointer: Any) -> Any:
    # Functional syntax: the reducer comes from the backend, a local name that class syntax
    # (string annotations under `from __future__ import annotations`) could not resolve.
    state = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "GrowState", {"i": int, "messages": Annotated[list[Any], lg.add_messages]}
    )

    async def step(s: Any) -> dict[str, Any]:
        EXECUTIONS.n += 1
        n = s["i"] + 1
        return {"i": n, "messages": [lg.AIMessage(content=f"message {n}: {LOREM}")]}

    def route(s: Any) -> Any:
        return lg.END if s["i"] >= iterations else "step"

    g = lg.StateGraph(state)
    g.add_node("step", step)
    g.add_edge(lg.START, "step")
    g.add_conditional_edges("step", route, ["step", lg.END])
    return g.compile(checkpointer=checkpointer)


def _lg_runner(app: Any, payload: Any, durability: str | None = None) -> Runner:
    """Runs ``app``; with a ``durability``, each run on a new thread of its checkpointer."""
    new_thread = _thread_ids()

    async def run() -> Any:
        config: dict[str, Any] = {"recursion_limit": RECURSION}
        if durability is not None:
            config["configurable"] = {"thread_id": new_thread()}
            return await app.ainvoke(payload, config, durability=durability)
        return await app.ainvoke(payload, config)

    return run


# ------------------------------------------------- the same on flowcore.Graph
def native_chain(size: int) -> Any:
    g = Graph(ChainState, name=f"chain-{size}")
    for i in range(size):
        g.add_node(f"n{i}", _noop)
    g.add_edge(START, "n0")
    for i in range(size - 1):
        g.add_edge(f"n{i}", f"n{i + 1}")
    g.add_edge(f"n{size - 1}", END)
    return g.compile()


def native_fanout(width: int) -> Any:
    g = Graph(ChainState, name=f"fanout-{width}")
    g.add_node("src", _noop).add_node("sink", _noop)
    g.add_edge(START, "src")
    for i in range(width):
        g.add_node(f"w{i}", _noop)
        g.add_edge("src", f"w{i}")
        g.add_edge(f"w{i}", "sink")
    g.add_edge("sink", END)
    return g.compile()


def native_loop(iterations: int, checkpointer: Any = None) -> Any:
    step, route = _loop_nodes(iterations, "done")
    g = Graph(LoopState, name=f"loop-{iterations}")
    g.add_node("step", step).add_edge(START, "step")
    g.add_conditional_edges("step", route, {"step": "step", "done": END})
    return g.compile(checkpointer=checkpointer)


def native_send(items: int) -> Any:
    # The same map-reduce as lg_send: one Send per item, the results reduced by list append.
    def fan(state: Any) -> list[Send]:
        return [Send("work", {"item": x}) for x in state["items"]]

    async def work(arg: Any) -> dict[str, Any]:
        EXECUTIONS.n += 1
        return {"results": [arg["item"]]}

    g = Graph(NativeSendState, name=f"send-{items}")
    g.add_node("work", work).add_node("reduce", _noop)
    g.add_conditional_edges(START, fan, ["work"])
    g.add_edge("work", "reduce").add_edge("reduce", END)
    return g.compile()


def native_dag(preds: list[list[int]]) -> Any:
    g = Graph(ChainState, name=f"dag-{len(preds)}")
    has_succ = [False] * len(preds)
    for i in range(len(preds)):
        g.add_node(f"n{i}", _noop)
    g.add_edge(START, "n0")
    for i, ps in enumerate(preds[1:], start=1):
        for p in ps:
            has_succ[p] = True
        g.add_edge(f"n{ps[0]}" if len(ps) == 1 else [f"n{p}" for p in ps], f"n{i}")
    for i, succ in enumerate(has_succ):
        if not succ:
            g.add_edge(f"n{i}", END)
    return g.compile()


def native_grow(iterations: int, checkpointer: Any) -> Any:
    async def step(s: Any) -> dict[str, Any]:
        EXECUTIONS.n += 1
        n = s["i"] + 1
        message = {"type": "ai", "content": f"message {n}: {LOREM}"}
        return {"i": n, "messages": [message]}

    def route(s: Any) -> str:
        return "done" if s["i"] >= iterations else "again"

    g = Graph(NativeGrowState, name=f"grow-{iterations}")
    g.add_node("step", step).add_edge(START, "step")
    g.add_conditional_edges("step", route, {"again": "step", "done": END})
    return g.compile(checkpointer=checkpointer)


def _native_runner(app: Any, payload: Any, durability: str | None = None) -> Runner:
    """Runs ``app``; with a ``durability``, each run on a new thread of its checkpointer."""
    new_thread = _thread_ids()

    async def run() -> Any:
        if durability is not None:
            return await app.run(
                payload, recursion_limit=RECURSION, thread_id=new_thread(), durability=durability
            )
        return await app.run(payload, recursion_limit=RECURSION)

    return run


# ------------------------------------------------------------ workload table
@dataclass(frozen=True)
class Baseline:
    """A bare-asyncio floor timed in the same rounds as the backends of a workload."""

    name: str
    label: Callable[[Sizes], str]
    setup: Callable[[Sizes], Setup]
    executions: Callable[[Sizes], int]


@dataclass(frozen=True)
class Workload:
    """One workload: how to set it up on the LangGraph API and natively, and what to expect.

    ``executions`` is the number of node executions one run must count, on every
    backend; ``expect`` checks the final state on top of that.
    """

    key: str
    title: str
    lg: Callable[[Any, Sizes], Setup]
    native: Callable[[Sizes], Setup] | None
    expect: Callable[[Mapping[str, Any], Sizes], bool]
    executions: Callable[[Sizes], int]
    na_reason: str = ""
    max_rounds: int | None = None
    deadline: bool = False
    baselines: tuple[Baseline, ...] = ()


def _sync(build: Callable[[], Any], make_runner: Callable[[Any], Runner]) -> Setup:
    async def setup(stack: AsyncExitStack, tmp: Path) -> Prepared:
        return Prepared(make_runner(build()))

    return setup


def _memory_saver_setup(lg: Any, s: Sizes) -> Setup:
    async def setup(stack: AsyncExitStack, tmp: Path) -> Prepared:
        run = _lg_runner(lg_loop(lg, s.loop, lg.InMemorySaver()), {"i": 0}, "async")
        return Prepared(run, "async", "in memory")

    return setup


def _settings(pragmas: Mapping[str, object]) -> str:
    return f"SQLite synchronous={pragmas['synchronous']}, journal={pragmas['journal_mode']}"


async def _open_lg_sqlite(
    lg: Any, stack: AsyncExitStack, path: Path, synchronous: str | None
) -> tuple[Any, str]:
    """A LangGraph-API SQLite saver on ``path`` and the settings its connection really has.

    ``synchronous=None`` keeps the saver's default (LangGraph's: SQLite's own
    default, FULL in CPython's build; compat's: NORMAL); ``"FULL"`` asks for FULL
    the way each saver allows it.
    """
    if lg.name == "compat":
        saver = lg.AsyncSqliteSaver(str(path), synchronous=synchronous or "NORMAL")
        await stack.enter_async_context(saver)
        return saver, _settings((await saver.store.pragmas())["writer"])
    saver = await stack.enter_async_context(lg.AsyncSqliteSaver.from_conn_string(str(path)))
    await saver.setup()  # its journal_mode=WAL is set here, on first use otherwise
    if synchronous is not None:
        await saver.conn.execute(f"PRAGMA synchronous={synchronous}")
    pragmas: dict[str, object] = {}
    for name in ("synchronous", "journal_mode"):
        rows = list(await saver.conn.execute_fetchall(f"PRAGMA {name}"))
        pragmas[name] = rows[0][0]
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    pragmas["synchronous"] = names.get(int(str(pragmas["synchronous"])), "?")
    return saver, _settings(pragmas)


def _sqlite_saver_setup(durability: str, synchronous: str | None) -> Callable[[Any, Sizes], Setup]:
    def for_backend(lg: Any, s: Sizes) -> Setup:
        async def setup(stack: AsyncExitStack, tmp: Path) -> Prepared:
            path = tmp / f"{lg.name}-{time.perf_counter_ns()}.db"
            saver, settings = await _open_lg_sqlite(lg, stack, path, synchronous)
            run = _lg_runner(lg_loop(lg, s.loop, saver), {"i": 0}, durability)
            return Prepared(run, durability, settings)

        return setup

    return for_backend


def _native_memory_setup(s: Sizes) -> Setup:
    async def setup(stack: AsyncExitStack, tmp: Path) -> Prepared:
        app = native_loop(s.loop, InMemoryCheckpointer())
        return Prepared(_native_runner(app, {"i": 0}, "async"), "async", "in memory")

    return setup


async def _open_native_sqlite(
    stack: AsyncExitStack, path: Path, synchronous: str | None = None
) -> tuple[SqliteCheckpointer, str]:
    store = await SqliteCheckpointer.open(
        str(path), synchronous="FULL" if synchronous == "FULL" else "NORMAL"
    )
    stack.push_async_callback(store.aclose)
    return store, _settings((await store.pragmas())["writer"])


def _native_sqlite_setup(durability: str, synchronous: str | None) -> Callable[[Sizes], Setup]:
    def for_sizes(s: Sizes) -> Setup:
        async def setup(stack: AsyncExitStack, tmp: Path) -> Prepared:
            path = tmp / f"native-{time.perf_counter_ns()}.db"
            store, settings = await _open_native_sqlite(stack, path, synchronous)
            run = _native_runner(native_loop(s.loop, store), {"i": 0}, durability)
            return Prepared(run, durability, settings)

        return setup

    return for_sizes


def _grow_setup(durability: str, synchronous: str | None) -> Callable[[Any, Sizes], Setup]:
    def for_backend(lg: Any, s: Sizes) -> Setup:
        async def setup(stack: AsyncExitStack, tmp: Path) -> Prepared:
            path = tmp / f"{lg.name}-grow-{time.perf_counter_ns()}.db"
            saver, settings = await _open_lg_sqlite(lg, stack, path, synchronous)
            app = lg_grow(lg, s.grow, saver)
            return Prepared(
                _lg_runner(app, {"i": 0, "messages": []}, durability), durability, settings
            )

        return setup

    return for_backend


def _native_grow_setup(durability: str, synchronous: str | None) -> Callable[[Sizes], Setup]:
    def for_sizes(s: Sizes) -> Setup:
        async def setup(stack: AsyncExitStack, tmp: Path) -> Prepared:
            path = tmp / f"native-grow-{time.perf_counter_ns()}.db"
            store, settings = await _open_native_sqlite(stack, path, synchronous)
            app = native_grow(s.grow, store)
            return Prepared(
                _native_runner(app, {"i": 0, "messages": []}, durability), durability, settings
            )

        return setup

    return for_sizes


def _compile_setup(build: Callable[[], Any]) -> Setup:
    async def setup(stack: AsyncExitStack, tmp: Path) -> Prepared:
        async def run() -> Any:
            app = build()
            # The work timed here is building: count the nodes the compiled graph holds
            # (LangGraph adds "__start__", which is not one of ours).
            return {"nodes": sum(1 for n in app.nodes if not str(n).startswith("__"))}

        return Prepared(run)

    return setup


def _taskgroup_setup(s: Sizes) -> Setup:
    async def setup(stack: AsyncExitStack, tmp: Path) -> Prepared:
        async def trivial() -> None:
            EXECUTIONS.n += 1

        async def run() -> None:
            async with asyncio.TaskGroup() as tg:
                for _ in range(s.fanout):
                    tg.create_task(trivial())

        return Prepared(run)

    return setup


_DAG_CACHE: dict[tuple[int, int], list[list[int]]] = {}


def _dag(s: Sizes) -> list[list[int]]:
    key = (s.dag, s.dag_edges)
    if key not in _DAG_CACHE:
        _DAG_CACHE[key] = dag_predecessors(s.dag, s.dag_edges)
    return _DAG_CACHE[key]


WORKLOADS: tuple[Workload, ...] = (
    Workload(
        "a",
        "chain",
        lambda lg, s: _sync(lambda: lg_chain(lg, s.chain), lambda a: _lg_runner(a, {"x": 0})),
        lambda s: _sync(lambda: native_chain(s.chain), lambda a: _native_runner(a, {"x": 0})),
        lambda st, s: st["x"] == 0,
        lambda s: s.chain,
    ),
    Workload(
        "b",
        "fan-out/fan-in",
        lambda lg, s: _sync(lambda: lg_fanout(lg, s.fanout), lambda a: _lg_runner(a, {"x": 0})),
        lambda s: _sync(lambda: native_fanout(s.fanout), lambda a: _native_runner(a, {"x": 0})),
        lambda st, s: st["x"] == 0,
        lambda s: s.fanout + 2,
        baselines=(
            Baseline(
                "taskgroup",
                lambda s: f"(b) baseline: asyncio.TaskGroup x{s.fanout}",
                _taskgroup_setup,
                lambda s: s.fanout,
            ),
        ),
    ),
    Workload(
        "c",
        "loop",
        lambda lg, s: _sync(lambda: lg_loop(lg, s.loop), lambda a: _lg_runner(a, {"i": 0})),
        lambda s: _sync(lambda: native_loop(s.loop), lambda a: _native_runner(a, {"i": 0})),
        lambda st, s: st["i"] == s.loop,
        lambda s: s.loop,
    ),
    Workload(
        "d",
        "loop + in-memory checkpointer",
        _memory_saver_setup,
        _native_memory_setup,
        lambda st, s: st["i"] == s.loop,
        lambda s: s.loop,
    ),
    Workload(
        "e",
        "loop + SQLite checkpointer, each saver's defaults",
        _sqlite_saver_setup("async", None),
        _native_sqlite_setup("async", None),
        lambda st, s: st["i"] == s.loop,
        lambda s: s.loop,
    ),
    Workload(
        "f",
        "Send map-reduce",
        lambda lg, s: _sync(
            lambda: lg_send(lg, s.send),
            lambda a: _lg_runner(a, {"items": list(range(s.send)), "results": []}),
        ),
        lambda s: _sync(
            lambda: native_send(s.send),
            lambda a: _native_runner(a, {"items": list(range(s.send)), "results": []}),
        ),
        lambda st, s: sorted(st["results"]) == list(range(s.send)),
        lambda s: s.send + 1,
    ),
    Workload(
        "g",
        "build + compile chain",
        lambda lg, s: _compile_setup(lambda: lg_chain(lg, s.compile_chain)),
        lambda s: _compile_setup(lambda: native_chain(s.compile_chain)),
        lambda st, s: st["nodes"] == s.compile_chain,
        lambda s: 0,  # compiling runs no node
    ),
    Workload(
        "h",
        "random DAG",
        lambda lg, s: _sync(lambda: lg_dag(lg, _dag(s)), lambda a: _lg_runner(a, {"x": 0})),
        lambda s: _sync(lambda: native_dag(_dag(s)), lambda a: _native_runner(a, {"x": 0})),
        lambda st, s: st["x"] == 0,
        lambda s: s.dag,
        max_rounds=3,
        deadline=True,
    ),
    Workload(
        "i",
        "growing messages + SQLite, each saver's defaults",
        _grow_setup("async", None),
        _native_grow_setup("async", None),
        lambda st, s: st["i"] == s.grow and len(st["messages"]) == s.grow,
        lambda s: s.grow,
    ),
    Workload(
        "j",
        "chain (per-node overhead at scale, against (a))",
        lambda lg, s: _sync(lambda: lg_chain(lg, s.long_chain), lambda a: _lg_runner(a, {"x": 0})),
        lambda s: _sync(lambda: native_chain(s.long_chain), lambda a: _native_runner(a, {"x": 0})),
        lambda st, s: st["x"] == 0,
        lambda s: s.long_chain,
        max_rounds=3,
        deadline=True,
    ),
    Workload(
        "k",
        "loop + SQLite checkpointer, per-step durable at LangGraph's synchronous=FULL",
        _sqlite_saver_setup("sync", "FULL"),
        _native_sqlite_setup("sync", "FULL"),
        lambda st, s: st["i"] == s.loop,
        lambda s: s.loop,
    ),
    Workload(
        "l",
        "growing messages + SQLite, per-step durable at LangGraph's synchronous=FULL",
        _grow_setup("sync", "FULL"),
        _native_grow_setup("sync", "FULL"),
        lambda st, s: st["i"] == s.grow and len(st["messages"]) == s.grow,
        lambda s: s.grow,
    ),
)


def describe(w: Workload, s: Sizes) -> str:
    """The workload's label with its sizes, e.g. ``(a) chain, 100 nodes``."""
    size = {
        "a": f"{s.chain} nodes",
        "b": f"1 -> {s.fanout} -> 1",
        "c": f"{s.loop} steps",
        "d": f"{s.loop} steps",
        "e": f"{s.loop} steps",
        "f": f"{s.send} items",
        "g": f"{s.compile_chain} nodes",
        "h": f"{s.dag} nodes, ~{s.dag_edges} edges/node",
        "i": f"{s.grow} steps",
        "j": f"{s.long_chain} nodes",
        "k": f"{s.loop} steps",
        "l": f"{s.grow} steps",
    }[w.key]
    return f"({w.key}) {w.title}, {size}"


# ------------------------------------------------------------------ running
@dataclass
class Row:
    """The figures of one workload on one backend."""

    workload: str
    key: str
    backend: str
    status: str = "ok"  # ok | n/a | timeout
    reason: str = ""
    times_ms: list[float] = field(default_factory=list)
    peak_bytes: int | None = None
    executions: int | None = None
    durability: str | None = None
    store: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.times_ms) if self.times_ms else None

    @property
    def min_ms(self) -> float | None:
        return min(self.times_ms) if self.times_ms else None

    def as_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "key": self.key,
            "backend": self.backend,
            "status": self.status,
            "reason": self.reason,
            "rounds": len(self.times_ms),
            "median_ms": self.median_ms,
            "min_ms": self.min_ms,
            "times_ms": self.times_ms,
            "peak_bytes": self.peak_bytes,
            "node_executions": self.executions,
            "durability": self.durability,
            "store": self.store,
            **self.extra,
        }


_ROW_KEYS = frozenset(
    {"workload", "key", "backend", "status", "reason", "rounds", "median_ms", "min_ms"}
    | {"times_ms", "peak_bytes", "node_executions", "durability", "store"}
)


def row_from_json(data: Mapping[str, Any]) -> Row:
    """The :class:`Row` that :meth:`Row.as_json` wrote (a child process's figures)."""
    return Row(
        workload=data["workload"],
        key=data["key"],
        backend=data["backend"],
        status=data["status"],
        reason=data["reason"],
        times_ms=list(data["times_ms"]),
        peak_bytes=data["peak_bytes"],
        executions=data["node_executions"],
        durability=data["durability"],
        store=data["store"],
        extra={k: v for k, v in data.items() if k not in _ROW_KEYS},
    )


def run_isolated(key: str, rounds: int, tmp: Path) -> list[Row]:
    """Workload ``key`` measured in a fresh interpreter (this script, ``--only key``).

    Each workload gets a process of its own, as pyperf gives each benchmark:
    what an earlier workload left behind can slow a later one (compat's 10,000
    node DAG took 322 ms alone and 417 ms after the other workloads; why is
    not pinned down).
    """
    out = tmp / f"workload-{key}.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--in-process", "--only", key]
    cmd += ["--rounds", str(rounds), "--json", str(out)]
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        raise SystemExit(f"workload ({key}) failed in its own process (exit {done.returncode})")
    return [row_from_json(r) for r in json.loads(out.read_text())["rows"]]


def _state_of(result: Any) -> Mapping[str, Any]:
    if isinstance(result, RunResult):
        if result.status != "completed":
            raise SystemExit(f"native run ended {result.status}")
        return result.state
    return dict(result)


async def _timed(run: Runner) -> tuple[float, Any]:
    gc.collect()
    EXECUTIONS.n = 0
    t0 = time.perf_counter()
    result = await run()
    return (time.perf_counter() - t0) * 1e3, result


def _check(w: Workload, s: Sizes, backend: str, result: Any, when: str) -> int:
    """Fail the benchmark unless the run did all its work: node executions, then state."""
    label = describe(w, s)
    counted = EXECUTIONS.n
    baseline = next((b for b in w.baselines if b.name == backend), None)
    expected = baseline.executions(s) if baseline else w.executions(s)
    if counted != expected:
        raise SystemExit(
            f"{label} on {backend} ({when}): {counted} node executions counted, "
            f"{expected} expected; its figures would not measure the workload"
        )
    if baseline is None and not w.expect(_state_of(result), s):
        raise SystemExit(f"{label} on {backend} ({when}): unexpected result {result!r:.300}")
    return counted


def _setups(w: Workload, s: Sizes, backends: Mapping[str, Any]) -> dict[str, Setup]:
    """Every system timed on ``w``: the backends that can run it, then its baselines."""
    setups: dict[str, Setup] = {b: w.lg(ns, s) for b, ns in backends.items()}
    if w.native is not None:
        setups["native"] = w.native(s)
    for baseline in w.baselines:
        setups[baseline.name] = baseline.setup(s)
    return setups


async def run_workload(
    w: Workload, s: Sizes, rounds: int, backends: dict[str, Any], tmp: Path
) -> list[Row]:
    """Warm up each system once, then alternate them for ``rounds``; every run is checked.

    The baselines (bare asyncio doing the same number of tasks) take their turn in
    the same rotation as the backends, so a busy moment of the machine lands on
    any of them alike.
    """
    label = describe(w, s)
    rows = {b: Row(label, w.key, b) for b in BACKENDS}
    for baseline in w.baselines:
        rows[baseline.name] = Row(baseline.label(s), w.key, baseline.name)
    if w.native is None:
        rows["native"].status, rows["native"].reason = "n/a", w.na_reason
    setups = _setups(w, s, backends)
    n_rounds = rounds if w.max_rounds is None else min(rounds, w.max_rounds)
    async with AsyncExitStack() as stack:
        runners: dict[str, Runner] = {}
        for b, setup in setups.items():
            prepared = await setup(stack, tmp)
            runners[b] = prepared.run
            rows[b].durability, rows[b].store = prepared.durability, prepared.store
            print(f"  {label}: warm-up {b}", file=sys.stderr, flush=True)
            try:
                timeout = s.deadline_s if w.deadline else None
                ms, result = await asyncio.wait_for(_timed(runners[b]), timeout)
            except TimeoutError:
                rows[b].status = "timeout"
                rows[b].reason = f"did not finish in {s.deadline_s:.0f} s"
                del runners[b]
                continue
            rows[b].executions = _check(w, s, b, result, "warm-up")
            if n_rounds == 0:
                rows[b].times_ms.append(ms)
        order = list(runners)
        for r in range(n_rounds):
            shift = r % len(order) if order else 0
            for b in order[shift:] + order[:shift]:
                ms, result = await _timed(runners[b])
                _check(w, s, b, result, f"round {r + 1}")
                rows[b].times_ms.append(ms)
    return list(rows.values())


async def peak_memory(
    w: Workload, s: Sizes, backends: dict[str, Any], rows: list[Row], tmp: Path
) -> None:
    """One untimed run per system under tracemalloc; setup is outside the measurement."""
    setups = _setups(w, s, backends)
    for row in rows:
        if row.status != "ok" or row.backend not in setups:
            continue
        async with AsyncExitStack() as stack:
            run = (await setups[row.backend](stack, tmp)).run
            gc.collect()
            EXECUTIONS.n = 0
            tracemalloc.start()
            try:
                result = await run()
                row.peak_bytes = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            _check(w, s, row.backend, result, "peak memory run")


# ------------------------------------------------------------------ storage
async def stored_bytes(path: Path) -> int:
    """Bytes held in every column of every table of a SQLite file (schema-agnostic)."""
    total = 0
    async with aiosqlite.connect(path) as db:
        tables = await db.execute_fetchall("SELECT name FROM sqlite_master WHERE type='table'")
        for (table,) in tables:
            cols = await db.execute_fetchall(f'PRAGMA table_info("{table}")')
            for col in cols:
                rows = await db.execute_fetchall(
                    f'SELECT COALESCE(SUM(LENGTH(CAST("{col[1]}" AS BLOB))), 0) FROM "{table}"'
                )
                total += int(next(iter(rows))[0])
    return total


async def storage_growth(backend: str, ns: Any, steps: int, tmp: Path) -> dict[str, Any]:
    """Bytes stored by one run of (i) at steps/2 and at steps, each on a fresh SQLite file."""
    figures: dict[int, tuple[int, int]] = {}
    for n in (max(1, steps // 2), steps):
        path = tmp / f"storage-{backend}-{n}.db"
        async with AsyncExitStack() as stack:
            payload = {"i": 0, "messages": []}
            if backend == "native":
                store, _ = await _open_native_sqlite(stack, path)
                run = _native_runner(native_grow(n, store), payload, "async")
            else:
                saver, _ = await _open_lg_sqlite(ns, stack, path, None)
                run = _lg_runner(lg_grow(ns, n, saver), payload, "async")
            EXECUTIONS.n = 0
            state = _state_of(await run())
            if len(state["messages"]) != n or EXECUTIONS.n != n:
                raise SystemExit(
                    f"storage run of (i) on {backend}: {EXECUTIONS.n} node executions and "
                    f"{len(state['messages'])} messages, {n} of each expected"
                )
        file_bytes = sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
        figures[n] = (await stored_bytes(path), file_bytes)
    half, full = figures[max(1, steps // 2)], figures[steps]
    # Bytes added by the second half of the steps / by the first half: about 1 when each
    # checkpoint stores a delta, about 3 when each stores the whole (growing) state.
    growth = (full[0] - half[0]) / half[0] if half[0] else float("nan")
    return {
        "stored_bytes": full[0],
        "file_bytes": full[1],
        "bytes_per_checkpoint": full[0] / steps,
        "stored_bytes_half": half[0],
        "second_half_over_first_half": growth,
        "linear": growth < 1.5,
    }


# ------------------------------------------------------------------ output
def _fmt(v: float | None, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def _ratio(lg: Row | None, other: Row | None) -> float | None:
    if lg is None or other is None or lg.median_ms is None or other.median_ms is None:
        return None
    return lg.median_ms / other.median_ms if other.median_ms else None


def render(rows: list[Row], meta: dict[str, Any]) -> str:
    by = {(r.key, r.backend): r for r in rows}
    out = [
        "# flowcore vs LangGraph",
        "",
        f"Python {meta['python']} · {meta['cpus']} CPUs · langgraph {meta['langgraph']} · "
        f"flowcore {meta['flowcore']} · {meta['settings']}, {meta['rounds']} rounds, "
        f"{meta.get('processes', 'one process')}",
        "",
        TABLE_HEADER,
        "|---|---|--:|--:|--:|--:|--:|--:|---|",
    ]
    for r in rows:
        stored = "-" if r.durability is None else f"{r.durability}, {r.store}"
        if r.status != "ok":
            out.append(
                f"| {r.workload} | {r.backend} | - | {r.status}: {r.reason} | | | | | {stored} |"
            )
            continue
        ratio = None if r.backend == "langgraph" else _ratio(by.get((r.key, "langgraph")), r)
        peak = None if r.peak_bytes is None else r.peak_bytes / 1024
        out.append(
            f"| {r.workload} | {r.backend} | {len(r.times_ms)} | {_fmt(r.median_ms)} "
            f"| {_fmt(r.min_ms)} | {_fmt(peak, '.0f')} "
            f"| {'-' if ratio is None else f'{ratio:.2f}x'} | {r.executions} | {stored} |"
        )
    out += [
        "",
        "Every run (warm-up, timed rounds, memory run) counted its node executions and "
        "checked its final state; *durability, store* is read back from each open store.",
    ]
    out += [
        "",
        "## Ratios (LangGraph median / flowcore median; target: at least 10x)",
        "",
        "| workload | LangGraph / compat | LangGraph / native |",
        "|---|--:|--:|",
    ]
    for key in dict.fromkeys(r.key for r in rows):
        lg = by.get((key, "langgraph"))
        cells = []
        for b in ("compat", "native"):
            other = by.get((key, b))
            ratio = _ratio(lg, other)
            if ratio is not None:
                cells.append(f"{ratio:.2f}x")
            elif other is not None and other.status != "ok":
                cells.append(other.status)
            elif lg is not None and lg.status != "ok":
                cells.append(f"LangGraph {lg.status}")
            else:
                cells.append("-")
        label = lg.workload if lg else key
        out.append(f"| {label} | {cells[0]} | {cells[1]} |")
    tg, nat = by.get(("b", "taskgroup")), by.get(("b", "native"))
    if tg and nat and tg.median_ms and nat.median_ms:
        out.append(
            f"\nFan-out (b) native / bare TaskGroup: {nat.median_ms / tg.median_ms:.1f}x "
            "(target: within 3x)"
        )
    out += _flatness(by, meta)
    grow = [r for r in rows if r.key == "i" and "stored_bytes" in r.extra]
    if grow:
        out += [
            "",
            "## Storage of (i): bytes each SQLite saver stores",
            "",
            "| backend | bytes stored | bytes / checkpoint | file bytes | "
            "stored at half the steps | 2nd half / 1st half | linear |",
            "|---|--:|--:|--:|--:|--:|---|",
        ]
        for r in grow:
            e = r.extra
            out.append(
                f"| {r.backend} | {e['stored_bytes']} | {e['bytes_per_checkpoint']:.0f} "
                f"| {e['file_bytes']} | {e['stored_bytes_half']} "
                f"| {e['second_half_over_first_half']:.2f}x | {'yes' if e['linear'] else 'no'} |"
            )
    return "\n".join(out)


def _flatness(by: Mapping[tuple[str, str], Row], meta: Mapping[str, Any]) -> list[str]:
    """Per-node time of the long chain (j) over the short one (a), per backend."""
    short, long = meta["chain_sizes"]
    lines = [
        "",
        f"## Per-node overhead: chain of {short} (a) vs {long} (j) nodes (target: within 1.5x)",
        "",
        f"| backend | µs/node at {short} | µs/node at {long} | ratio |",
        "|---|--:|--:|--:|",
    ]
    for backend in ("langgraph", "compat", "native"):
        a, j = by.get(("a", backend)), by.get(("j", backend))
        if not (a and j and a.median_ms and j.median_ms):
            continue
        per_a, per_j = a.median_ms * 1e3 / short, j.median_ms * 1e3 / long
        lines.append(f"| {backend} | {per_a:.1f} | {per_j:.1f} | {per_j / per_a:.2f}x |")
    return lines if len(lines) > 5 else []


def _langgraph_version() -> str:
    from importlib.metadata import version

    return version("langgraph")


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="flowcore vs LangGraph benchmark")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per workload")
    parser.add_argument("--only", default="", help="workloads to run, e.g. a,b,c")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run every workload in this process (default: each in a fresh one; --smoke: here)",
    )
    args = parser.parse_args(argv)
    sizes = SMOKE if args.smoke else FULL
    rounds = 1 if args.smoke else max(1, args.rounds)
    only = {k.strip() for k in args.only.split(",") if k.strip()}
    chosen = [w for w in WORKLOADS if not only or w.key in only]
    if not chosen:
        parser.error(f"--only {args.only!r} names no workload; choose from a..l")
    backends = {"langgraph": langgraph_backend(), "compat": compat_backend()}
    started = time.perf_counter()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        isolate = not (args.in_process or args.smoke) and len(chosen) > 1
        for w in chosen:
            print(f"running {describe(w, sizes)}", file=sys.stderr, flush=True)
            if isolate:
                rows += run_isolated(w.key, rounds, tmp)
                continue
            found = await run_workload(w, sizes, rounds, backends, tmp)
            await peak_memory(w, sizes, backends, found, tmp)
            if w.key == "i":
                for row in found:
                    if row.status == "ok":
                        ns = backends.get(row.backend)
                        row.extra = await storage_growth(row.backend, ns, sizes.grow, tmp)
            rows += found
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "flowcore": flowcore.__version__,
        "langgraph": _langgraph_version(),
        "settings": sizes.label,
        "rounds": rounds,
        "processes": "one process per workload" if isolate else "one process",
        "chain_sizes": [sizes.chain, sizes.long_chain],
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(render(rows, meta))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"meta": meta, "rows": [r.as_json() for r in rows]}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(sys.argv[1:])))
