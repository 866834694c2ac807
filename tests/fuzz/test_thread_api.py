"""Fuzz spec: the thread, stream and history APIs take odd arguments and answer typed.

``stream``, ``get_state``, ``get_state_history``, ``update_state`` and
``run(Resume(...))`` on a SQLite checkpointer, and ``RunHistory.get`` /
``list`` on a SQLite history, are called with ids, checkpoint ids, limits,
options and values of every kind. Each returns or raises a flowcore error,
within the per-case limit; a stream always ends with a result.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TypedDict

from hypothesis import given
from hypothesis import strategies as st

from flowcore import START, Graph, Resume, SqliteCheckpointer, interrupt
from flowcore.history import SqliteRunHistory

from .harness import Judge, fuzz_settings
from .strategies import HUGE_INTS, ODD_SCALARS, ODD_VALUES, SURROGATES, TEXT

IDS = st.one_of(st.just("t-paused"), st.just("t-new"), TEXT, SURROGATES, ODD_SCALARS)
OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "mode": st.one_of(st.sampled_from(["supersteps", "dataflow"]), ODD_SCALARS),
        "on_error": st.one_of(st.sampled_from(["fail_fast", "skip_dependents"]), ODD_SCALARS),
        "max_concurrency": st.one_of(st.integers(-1, 4), HUGE_INTS, ODD_SCALARS),
        "recursion_limit": st.one_of(st.integers(-1, 50), HUGE_INTS, ODD_SCALARS),
        "durability": st.one_of(st.sampled_from(["sync", "async", "exit"]), ODD_SCALARS),
        "config": st.one_of(st.none(), st.dictionaries(TEXT, ODD_VALUES, max_size=2), ODD_SCALARS),
    },
)


class State(TypedDict, total=False):
    x: Any
    answer: Any


def ask(state: Any) -> dict[str, Any]:
    return {"answer": interrupt("ok?")}


async def _drain(graph: Any, run_input: Any, thread: Any, options: dict[str, Any]) -> Any:
    async with graph.stream(run_input, thread_id=thread, **options) as events:
        async for _ in events:
            pass
        return await events.result()


def test_thread_and_history_calls_with_odd_arguments_are_typed(tmp_path: Path) -> None:
    judge = Judge("stream, get_state, update_state, Resume, history get/list")

    async def check(
        graph: Any, history: Any, call: str, thread: Any, value: Any, extra: Any
    ) -> None:
        if call == "stream":
            result = await judge.acall(lambda: _drain(graph, {"x": value}, thread, extra))
            if result is not None:
                assert result.status in ("completed", "failed", "interrupted", "cancelled")
        elif call == "resume":
            answer = Resume(by_id=value) if isinstance(value, dict) and extra else Resume(value)
            await judge.acall(lambda: graph.run(answer, thread_id=thread))
        elif call == "get_state":
            await judge.acall(lambda: graph.get_state(thread, extra.get("checkpoint")))
        elif call == "history":
            await judge.acall(lambda: graph.get_state_history(thread, limit=value))
        elif call == "update":
            await judge.acall(lambda: graph.update_state(thread, value, as_node=extra.get("as")))
        elif call == "runs_get":
            await judge.acall(lambda: history.get(thread))
        else:
            await judge.acall(lambda: history.list(thread_id=thread, limit=value))

    with asyncio.Runner() as runner:
        stack = AsyncExitStack()
        db = tmp_path / "threads.db"
        store = runner.run(stack.enter_async_context(SqliteCheckpointer(db)))
        history = runner.run(stack.enter_async_context(SqliteRunHistory(db)))
        graph = Graph(State).add_node("ask", ask).add_edge(START, "ask").compile(checkpointer=store)
        runner.run(graph.run({}, thread_id="t-paused"))
        try:

            @fuzz_settings(250)
            @given(
                call=st.sampled_from(
                    ["stream", "resume", "get_state", "history", "update", "runs_get", "runs_list"]
                ),
                thread=IDS,
                value=st.one_of(ODD_VALUES, st.dictionaries(TEXT, ODD_VALUES, max_size=2)),
                extra=st.one_of(
                    OPTIONS,
                    st.fixed_dictionaries(
                        {
                            "checkpoint": st.one_of(TEXT, ODD_SCALARS),
                            "as": st.one_of(TEXT, ODD_SCALARS),
                        }
                    ),
                ),
            )
            def each(call: str, thread: Any, value: Any, extra: dict[str, Any]) -> None:
                options = {k: v for k, v in extra.items() if k not in ("checkpoint", "as")}
                runner.run(
                    check(
                        graph, history, call, thread, value, options if call == "stream" else extra
                    )
                )

            each()
        finally:
            runner.run(stack.aclose())
