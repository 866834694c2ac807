"""Properties of the scheduler on random DAGs, checked against a sequential reference.

For random acyclic graphs (up to 60 nodes, shuffled declaration order, plain
edges, multi-source joins, conditional edges that fan out, roots that also
have predecessors, START routers) with random per-node delays and a mix of
async and sync (threaded) nodes, under both scheduling modes:

(a) the final state is the same on every run, whatever the timing, and equals
    a sequential reference execution (``_reference.py``) of the documented
    semantics;
(b) every executed node's body ran exactly once and has exactly one
    "completed" record; skipped nodes never ran;
(c) no node starts before every predecessor that ran has finished (joins
    included);
(d) with ``max_concurrency=k`` never more than k node bodies run at once.

Start/finish order is read from a logical clock (a counter bumped under a
lock), never from wall time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from flowcore import END, START, Graph, RunResult, append, merge

from ._reference import (
    DagSpec,
    ReferenceRun,
    RouterDef,
    node_update,
    reference_run,
)

MODES = ("supersteps", "dataflow")
MAX_DELAY_MS = 3

PROPERTY_SETTINGS = settings(
    derandomize=True,  # the same examples on every machine and every CI run
    database=None,
    deadline=None,
    max_examples=50,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=False,
    # No "explain" phase: it re-runs failures under a tracer, which is slow here.
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
)


class State(TypedDict):
    log: Annotated[list[str], append]
    seen: Annotated[dict[str, tuple[str, ...]], merge]


# ----------------------------------------------------------------- strategy
# A graph is drawn as a list of independent per-node records whose references
# to other nodes are relative (taken modulo the node's rank), so hypothesis can
# delete nodes while shrinking and every draw shrinks towards a plain chain.


@dataclass(frozen=True)
class _RouteDraw:
    ahead: tuple[int, ...]  # targets: this many ranks ahead (1..8); past the end dropped
    to_end: bool
    choices: tuple[tuple[int, ...], ...]  # indexes into the targets, modulo their number
    salt: int


@dataclass(frozen=True)
class _NodeDraw:
    plain: tuple[int, ...]  # earlier nodes (value % rank) with a plain edge to this one
    join: tuple[int, ...]  # earlier nodes (value % rank) joined into this one
    route: _RouteDraw | None
    fallback: int  # how to connect a node nothing leads to: 0 plain, 1 join, 2 START
    root: bool  # also a START edge, even if the node has predecessors
    to_end: bool
    decl_key: int  # declaration order: by (decl_key, rank)
    delay_ms: int
    sync: bool
    silent: bool


def _sometimes(one_in: int) -> st.SearchStrategy[bool]:
    """True about once in ``one_in`` draws; shrinks to False."""
    return st.integers(0, one_in - 1).map(lambda v: v == one_in - 1)


_refs = st.integers(0, 63)

_routes = st.builds(
    _RouteDraw,
    ahead=st.lists(st.integers(1, 8), min_size=1, max_size=3).map(tuple),
    to_end=st.booleans(),
    choices=st.lists(
        st.lists(st.integers(0, 3), min_size=1, max_size=2).map(tuple), min_size=1, max_size=3
    ).map(tuple),
    salt=st.integers(0, 7),
)

_nodes = st.builds(
    _NodeDraw,
    # Most nodes get no plain edge, so routers and joins decide whether they run.
    plain=st.one_of(st.just(()), st.just(()), st.lists(_refs, min_size=1, max_size=2).map(tuple)),
    join=st.one_of(st.just(()), st.lists(_refs, min_size=2, max_size=3).map(tuple)),
    route=st.one_of(st.none(), st.none(), _routes),
    fallback=st.integers(0, 2),
    root=_sometimes(10),
    to_end=_sometimes(10),
    decl_key=_refs,
    delay_ms=st.integers(0, MAX_DELAY_MS),
    sync=_sometimes(6),
    silent=_sometimes(8),
)


def _router(source: str, draw: _RouteDraw, targets: list[str]) -> RouterDef | None:
    targets = list(dict.fromkeys(targets))
    if draw.to_end:
        targets.append(END)
    if not targets:
        return None
    keys = [f"k{i}" for i in range(len(targets))]
    choices = tuple(
        tuple(dict.fromkeys(keys[i % len(keys)] for i in choice)) for choice in draw.choices
    )
    return RouterDef(source, tuple(zip(keys, targets, strict=True)), choices, draw.salt)


def _reachable(edges: list[tuple[tuple[str, ...], str]], routers: list[RouterDef]) -> set[str]:
    succ: dict[str, set[str]] = defaultdict(set)
    for sources, target in edges:
        for src in sources:
            succ[src].add(target)
    for router in routers:
        succ[router.source].update(router.node_targets)
    seen: set[str] = set()
    stack = [START]
    while stack:
        for nxt in succ[stack.pop()]:
            if nxt not in seen and nxt != END:
                seen.add(nxt)
                stack.append(nxt)
    return seen


@st.composite
def dags(draw: st.DrawFn, max_nodes: int = 60, reads_state: bool = True) -> DagSpec:
    """Random DAGs: every edge goes from a lower rank to a higher one."""
    size = draw(st.integers(2, max_nodes))
    records = draw(st.lists(_nodes, min_size=size, max_size=size))
    start_route = draw(st.one_of(st.none(), st.none(), st.none(), _routes))
    n = len(records)
    names = [f"n{i}" for i in range(n)]  # index = topological rank
    edges: list[tuple[tuple[str, ...], str]] = []
    routers: list[RouterDef] = []
    for i, rec in enumerate(records):
        if rec.route is not None:
            ahead = [names[i + a] for a in rec.route.ahead if i + a < n]
            router = _router(names[i], rec.route, ahead)
            if router is not None:
                routers.append(router)
    if start_route is not None:
        router = _router(START, start_route, [names[(a * 7) % n] for a in start_route.ahead])
        if router is not None:
            routers.append(router)
    routed = {t for r in routers for t in r.node_targets}
    for j, rec in enumerate(records):
        name = names[j]
        incoming = name in routed
        if j >= 1:
            for src in dict.fromkeys(names[v % j] for v in rec.plain):
                edges.append(((src,), name))
                incoming = True
            group = tuple(dict.fromkeys(names[v % j] for v in rec.join))
            if len(group) >= 2:
                edges.append((group, name))
                incoming = True
        if j == 0 or rec.root:
            edges.append(((START,), name))
        elif not incoming:
            if rec.fallback == 1 and j >= 2:
                edges.append(((names[j - 1], names[j - 2]), name))
            elif rec.fallback == 2:
                edges.append(((START,), name))
            else:
                edges.append(((names[j - 1],), name))
        if rec.to_end:
            edges.append(((name,), END))
    for name in names:  # safety net, in rank order: connecting one reaches its descendants
        if name not in _reachable(edges, routers):
            edges.append(((START,), name))
    order = sorted(range(n), key=lambda j: (records[j].decl_key, j))
    return DagSpec(
        order=tuple(names[j] for j in order),
        edges=tuple(edges),
        routers=tuple(routers),
        delays_ms={names[j]: rec.delay_ms for j, rec in enumerate(records)},
        sync_nodes=frozenset(names[j] for j, rec in enumerate(records) if rec.sync),
        silent_nodes=frozenset(names[j] for j, rec in enumerate(records) if rec.silent),
        reads_state=reads_state,
    )


# -------------------------------------------------------------- the engine
class Trace:
    """Start/finish ticks of node bodies on a logical clock, and peak concurrency."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # sync nodes record from worker threads
        self._clock = 0
        self.starts: dict[str, list[int]] = defaultdict(list)
        self.ends: dict[str, list[int]] = defaultdict(list)
        self.running = 0
        self.max_running = 0

    def begin(self, name: str) -> None:
        with self._lock:
            self._clock += 1
            self.starts[name].append(self._clock)
            self.running += 1
            self.max_running = max(self.max_running, self.running)

    def end(self, name: str) -> None:
        with self._lock:
            self._clock += 1
            self.ends[name].append(self._clock)
            self.running -= 1


def _make_node(spec: DagSpec, name: str, delay: float, trace: Trace) -> Callable[[Any], Any]:
    if name in spec.sync_nodes:

        def sync_node(state: Mapping[str, Any]) -> dict[str, Any] | None:
            trace.begin(name)
            try:
                time.sleep(delay)
                # Read the state after the pause: an engine that mutated the
                # shown state in the meantime would be caught.
                return node_update(spec, name, state["log"])
            finally:
                trace.end(name)

        return sync_node

    async def async_node(state: Mapping[str, Any]) -> dict[str, Any] | None:
        trace.begin(name)
        try:
            await asyncio.sleep(delay)
            return node_update(spec, name, state["log"])
        finally:
            trace.end(name)

    return async_node


def _make_router(spec: DagSpec, router: RouterDef) -> Callable[[Any], Any]:
    def route(state: Mapping[str, Any]) -> str | list[str]:
        return router.pick(state["log"], spec.reads_state)

    return route


def build(spec: DagSpec, trace: Trace, delays_ms: Mapping[str, int]) -> Graph:
    graph = Graph(State, name="random_dag")
    for name in spec.order:
        graph.add_node(name, _make_node(spec, name, delays_ms[name] / 1000, trace))
    for sources, target in spec.edges:
        graph.add_edge(sources[0] if len(sources) == 1 else list(sources), target)
    for router in spec.routers:
        graph.add_conditional_edges(
            router.source, _make_router(spec, router), dict(router.path_map)
        )
    return graph


async def run_engine(
    spec: DagSpec,
    mode: str,
    *,
    delays_ms: Mapping[str, int] | None = None,
    max_concurrency: int | None = None,
) -> tuple[RunResult, Trace]:
    trace = Trace()
    compiled = build(spec, trace, spec.delays_ms if delays_ms is None else delays_ms).compile()
    result = await asyncio.wait_for(
        compiled.run(None, mode=mode, max_concurrency=max_concurrency),  # type: ignore[arg-type]
        timeout=30,
    )
    return result, trace


def mirrored(spec: DagSpec) -> dict[str, int]:
    """The opposite timing: slow nodes become fast and fast ones slow."""
    return {name: MAX_DELAY_MS - d for name, d in spec.delays_ms.items()}


# ------------------------------------------------------------------ checks
def _differences(actual: Any, expected: Any, path: str = "") -> list[str]:
    """Where two nested values differ, briefly.

    Written out by hand because pytest's own diff of two large states is slow,
    and hypothesis re-runs a failing check hundreds of times while shrinking.
    """
    if actual == expected:
        return []
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        found = [f"{path}[{k!r}] missing" for k in expected if k not in actual]
        found += [f"{path}[{k!r}] unexpected: {actual[k]!r}" for k in actual if k not in expected]
        for k in expected:
            if k in actual:
                found += _differences(actual[k], expected[k], f"{path}[{k!r}]")
        return found
    if isinstance(actual, list | tuple) and isinstance(expected, list | tuple):
        for i, (a, e) in enumerate(zip(actual, expected, strict=False)):
            if a != e:
                return [
                    f"{path}[{i}] is {a!r}, expected {e!r} (lengths {len(actual)}, {len(expected)})"
                ]
        return [f"{path} has length {len(actual)}, expected {len(expected)}"]
    return [f"{path} is {actual!r}, expected {expected!r}"]


def expect_equal(what: str, actual: Any, expected: Any) -> None:
    found = _differences(actual, expected)
    if found:
        shown = "\n  ".join(found[:8])
        more = f"\n  ... and {len(found) - 8} more" if len(found) > 8 else ""
        raise AssertionError(f"{what} differs:\n  {shown}{more}")


def check_against_reference(result: RunResult, trace: Trace, ref: ReferenceRun) -> None:
    if result.status != "completed":
        raise AssertionError(f"run ended {result.status}: {result.errors!r}")

    # (a) the final state is the one the sequential reference computes
    expect_equal("final state", dict(result.state), ref.state)

    # (b) one "completed" record per executed node, one "skipped" per skipped node
    by_status: dict[str, Counter[str]] = defaultdict(Counter)
    for record in result.node_runs:
        by_status[record.status][record.node] += 1
    expect_equal("completed records", dict(by_status["completed"]), dict.fromkeys(ref.executed, 1))
    expect_equal("skipped records", dict(by_status["skipped"]), dict.fromkeys(ref.skipped, 1))
    reasons = {r.skip_reason for r in result.node_runs if r.status == "skipped"}
    assert reasons <= {"not_triggered"}
    # ... and each executed body was entered (and left) exactly once, skipped ones never
    entered = {n: len(ticks) for n, ticks in trace.starts.items()}
    left = {n: len(ticks) for n, ticks in trace.ends.items()}
    expect_equal("node bodies entered", entered, dict.fromkeys(ref.executed, 1))
    expect_equal("node bodies left", left, dict.fromkeys(ref.executed, 1))
    expect_equal("outputs", dict(result.outputs), ref.outputs)

    # each node ran in the superstep (supersteps) / level (dataflow) the rules give
    steps = {r.node: r.superstep for r in result.node_runs if r.status == "completed"}
    expect_equal("superstep of each node", steps, ref.executed)
    assert result.supersteps == ref.supersteps

    # (c) no node starts before each predecessor that ran has finished
    for node in ref.executed:
        for pred in ref.preds[node]:
            if pred in ref.executed and not trace.starts[node][0] > trace.ends[pred][0]:
                raise AssertionError(f"{node} started before its predecessor {pred} finished")


# -------------------------------------------------------------- properties
@pytest.mark.parametrize("mode", MODES)
@PROPERTY_SETTINGS
@given(dag=dags())
def test_random_dag_matches_sequential_reference_on_every_run(mode: str, dag: DagSpec) -> None:
    ref = reference_run(dag, mode)
    first, first_trace = asyncio.run(run_engine(dag, mode))
    second, second_trace = asyncio.run(run_engine(dag, mode, delays_ms=mirrored(dag)))

    check_against_reference(first, first_trace, ref)
    check_against_reference(second, second_trace, ref)
    expect_equal("state of the second run", second.state, first.state)


@pytest.mark.parametrize("mode", MODES)
@PROPERTY_SETTINGS
@given(dag=dags(max_nodes=40), k=st.integers(1, 4))
def test_max_concurrency_caps_running_nodes(mode: str, dag: DagSpec, k: int) -> None:
    result, trace = asyncio.run(run_engine(dag, mode, max_concurrency=k))

    assert trace.max_running <= k
    # A cap changes timing only, never the outcome.
    check_against_reference(result, trace, reference_run(dag, mode))


@settings(PROPERTY_SETTINGS, max_examples=20)
@given(dag=dags(max_nodes=30, reads_state=False))
def test_modes_agree_when_nodes_do_not_read_the_state(dag: DagSpec) -> None:
    # What a node is shown differs between the modes (batch-start state vs
    # its ancestors' writes); when nothing reads it, the results must agree.
    supersteps, _ = asyncio.run(run_engine(dag, "supersteps"))
    dataflow, _ = asyncio.run(run_engine(dag, "dataflow"))

    assert supersteps.status == dataflow.status == "completed"
    expect_equal("dataflow final state", dataflow.state, supersteps.state)
    expect_equal("dataflow outputs", dataflow.outputs, supersteps.outputs)


# ------------------------------------------- the concurrency probe can fail
def _wide(trace: Trace, body: Callable[[], Awaitable[None]], width: int) -> Graph:
    graph = Graph(State, name="wide")

    def make(name: str) -> Callable[[Any], Awaitable[None]]:
        async def node(state: Any) -> None:
            trace.begin(name)
            try:
                await body()
            finally:
                trace.end(name)

        return node

    for i in range(width):
        graph.add_node(f"w{i}", make(f"w{i}"), timeout=30.0)  # a hang guard only
        graph.add_edge(START, f"w{i}")
    return graph


@pytest.mark.parametrize("mode", MODES)
async def test_without_a_cap_a_wide_batch_runs_all_at_once(mode: str) -> None:
    width = 8
    trace = Trace()
    everyone_in = asyncio.Event()

    async def rendezvous() -> None:
        # Only returns once all nodes are inside their bodies at the same time.
        if trace.running == width:
            everyone_in.set()
        await everyone_in.wait()

    result = await _wide(trace, rendezvous, width).compile().run(None, mode=mode)  # type: ignore[arg-type]

    assert result.status == "completed", result.errors
    assert trace.max_running == width


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [1, 3])
async def test_a_cap_is_reached_but_never_exceeded(mode: str, k: int) -> None:
    trace = Trace()

    async def pause() -> None:
        # Counted turns, not a 1 ms timer: on a busy machine a timer can be due before
        # the k-th node got its slot, and the cap would not be reached.
        for _ in range(20):
            await asyncio.sleep(0)

    result = await _wide(trace, pause, 8).compile().run(None, mode=mode, max_concurrency=k)  # type: ignore[arg-type]

    assert result.status == "completed", result.errors
    assert trace.max_running == k
