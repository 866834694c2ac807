"""Fuzz spec: graphs declared with odd names, edges and options run or are refused typed.

A graph is built from a random list of ``add_node`` / ``add_edge`` /
``add_conditional_edges`` calls whose arguments are sometimes not what the
signature says (ints, None, lists, unhashable path maps), then compiled with
odd interrupt options and run, with and without a checkpointer, on odd
input. Building never raises; ``compile`` raises only
``GraphDefinitionError``; a run returns a result or raises a flowcore error.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, TypedDict

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from flowcore import END, START, Graph, InMemoryCheckpointer, RetryPolicy, append
from flowcore.secrets import SecretRedactor

from .harness import Judge, fuzz_settings
from .strategies import ODD_SCALARS, ODD_VALUES, REF_VALUES, SCALARS, TEXT


class State(TypedDict, total=False):
    x: Any
    y: list[Any]


def _returns_none(state: Any) -> None:
    return None


def _writes_x(state: Any) -> dict[str, Any]:
    return {"x": state.get("x")}


async def _async_with_ctx(state: Any, ctx: Any) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"x": dict(ctx.inputs) if ctx.inputs else None}


def _returns_odd(state: Any) -> Any:
    return ["not", "a", "mapping"]


def _raises(state: Any) -> None:
    raise ValueError("node failed on purpose")


def _no_args() -> None:
    return None


def _route_to_x(state: Any) -> Any:
    return state.get("x")


FUNCS = st.sampled_from(
    [_returns_none, _writes_x, _async_with_ctx, _returns_odd, _raises, _no_args, 42, None]
)
GOOD_NAMES = st.sampled_from(["a", "b", "c", "d"])
NAMES = st.one_of(
    GOOD_NAMES,
    GOOD_NAMES,
    st.sampled_from([START, END, "", "a b", "a\n", "input", "\ud800"]),
    st.integers(),
    st.none(),
    st.lists(st.sampled_from(["a", "b"]), max_size=2),
)
GOOD_FUNCS = st.sampled_from([_returns_none, _writes_x, _async_with_ctx, _raises, _returns_odd])
ODD_INPUTS = st.one_of(st.dictionaries(TEXT, REF_VALUES, max_size=2), ODD_SCALARS)


@st.composite
def operations(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    """Declarations after node "a": a chain of good nodes, then a few calls, some odd."""
    ops: list[tuple[Any, ...]] = []
    previous = "a"
    for name in draw(st.lists(st.sampled_from(["b", "c", "d"]), unique=True, max_size=3)):
        inputs = draw(st.one_of(st.none(), st.just({"v": "<<a.x>>", "w": "<<input.x>>"})))
        ops.append(("node", name, draw(GOOD_FUNCS), inputs, None, None))
        ops.append(("edge", previous, name))
        previous = name
    odd_ops = st.one_of(
        st.tuples(
            st.just("node"),
            NAMES,
            FUNCS,
            st.one_of(st.none(), ODD_INPUTS),
            st.one_of(st.none(), st.just(RetryPolicy(max_attempts=1)), ODD_SCALARS),
            st.one_of(st.none(), st.floats(), ODD_SCALARS),
        ),
        st.tuples(st.just("edge"), NAMES, NAMES),
        st.tuples(
            st.just("route"),
            NAMES,
            st.sampled_from([_route_to_x, _returns_none, 7]),
            st.one_of(
                st.none(),
                st.lists(NAMES, max_size=3),
                st.dictionaries(st.one_of(SCALARS, st.none()), NAMES, max_size=3),
                ODD_SCALARS,
            ),
        ),
    )
    if draw(st.booleans()):
        ops += draw(st.lists(odd_ops, min_size=1, max_size=3))
    return ops


RETRY_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "max_attempts": ODD_SCALARS,
        "initial_interval": ODD_SCALARS,
        "backoff_factor": ODD_SCALARS,
        "max_interval": ODD_SCALARS,
        "jitter": ODD_SCALARS,
        "retry_on": st.one_of(ODD_SCALARS, st.just(ValueError), st.just((KeyError, 3))),
    },
)


def _build(declarations: list[tuple[Any, ...]]) -> Graph:
    graph = Graph(State)
    graph.add_node("a", _writes_x).add_edge(START, "a")
    for op in declarations:
        if op[0] == "node":
            _, name, func, inputs, retry, timeout = op
            graph.add_node(name, func, inputs=inputs, retry=retry, timeout=timeout)
        elif op[0] == "edge":
            graph.add_edge(op[1], op[2])
        else:
            graph.add_conditional_edges(op[1], op[2], op[3])
    return graph


@fuzz_settings(300)
@given(
    operations=operations(),
    interrupts=st.one_of(st.just(()), st.just(()), st.lists(NAMES, max_size=2), ODD_SCALARS),
    run_input=st.one_of(
        st.fixed_dictionaries({"x": ODD_VALUES}),
        st.fixed_dictionaries({"x": ODD_VALUES}),
        st.dictionaries(TEXT, SCALARS, max_size=2),
        ODD_SCALARS,
        st.just(None),
    ),
    threaded=st.booleans(),
    redacted=st.booleans(),
)
def test_graphs_of_any_declaration_compile_and_run_or_are_refused_typed(
    operations: list[tuple[Any, ...]],
    interrupts: Any,
    run_input: Any,
    threaded: bool,
    redacted: bool,
) -> None:
    judge = Judge("Graph building, compile(), run()")
    # Declaring never raises: mistakes are collected for compile() to report at once.
    graph = _build(operations)
    checkpointer = InMemoryCheckpointer() if threaded else None
    compiled = judge.call(
        lambda: graph.compile(checkpointer=checkpointer, interrupt_before=interrupts)
    )
    if compiled is None:
        return
    options: dict[str, Any] = {"thread_id": "t1"} if threaded else {}
    if redacted:
        options["redactor"] = SecretRedactor(["sk-test-0123456789abc"])
    result = judge.call(lambda: compiled.run_sync(run_input, recursion_limit=8, **options))
    if result is not None:
        assert result.status in ("completed", "failed", "interrupted")


@fuzz_settings(150)
@given(fields=RETRY_FIELDS)
def test_retry_policies_of_any_fields_build_or_are_refused_typed(fields: dict[str, Any]) -> None:
    judge = Judge("RetryPolicy(...)")
    policy = judge.call(lambda: RetryPolicy(**fields))
    if policy is not None:
        assert policy.should_retry(ValueError()) in (True, False)


class Model(BaseModel):
    x: Any = None
    y: list[int] = []


class Typed(TypedDict):
    x: int
    y: Annotated[list[Any], append]


SCHEMAS = st.sampled_from([State, Typed, Model, int, str, None, dict, list[int], Model()])


@fuzz_settings(150)
@given(schema=SCHEMAS, update=ODD_VALUES, run_input=st.one_of(ODD_VALUES, st.just({"x": 1})))
def test_any_state_schema_and_node_update_run_or_are_refused_typed(
    schema: Any, update: Any, run_input: Any
) -> None:
    judge = Judge("state schemas, reducers and node updates")

    def writes(state: Any) -> Any:
        return {"y": update, "x": update}

    graph = Graph(schema).add_node("w", writes).add_edge(START, "w")
    compiled = judge.call(graph.compile)
    if compiled is None:
        return
    # Node failures (an update a reducer rejects) end the run as failed, they do not raise.
    result = judge.call(lambda: compiled.run_sync(run_input))
    if result is not None:
        assert result.status in ("completed", "failed")
