"""Fuzz spec: run inputs that cannot be stored are refused before anything runs; no run is lost.

Thread runs (``graph.run(..., thread_id=...)`` on a SQLite checkpointer) and
pipeline runs (:class:`PipelineRunner` with a SQLite checkpointer and run
history, as the CLI builds it) get odd inputs: deep nesting, lone
surrogates, huge ints, NaN, objects that are not data, odd user and thread
ids, and model answers that decode to such values. A run either is refused
with a flowcore error and leaves nothing behind, or runs and is recorded.
"""

from __future__ import annotations

import asyncio
import itertools
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TypedDict

from hypothesis import given
from hypothesis import strategies as st

from flowcore import START, Graph, SqliteCheckpointer
from flowcore.blocks import BlockExecutor, SqliteBlockStore
from flowcore.history import SqliteRunHistory
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.pipeline import Pipeline, PipelineRunner, check_run_inputs, check_run_request

from .harness import Judge, fuzz_settings
from .strategies import (
    BIG_INTS,
    HUGE_INTS,
    ODD_SCALARS,
    ODD_VALUES,
    SCALARS,
    SURROGATES,
    TEXT,
    deep_values,
)

_COUNTER = itertools.count()


class State(TypedDict, total=False):
    x: Any
    log: list[Any]


def _step(state: Any) -> dict[str, Any]:
    return {"log": ["ran"]}


INPUTS = st.one_of(
    st.fixed_dictionaries({"x": ODD_VALUES}),
    st.fixed_dictionaries({"x": deep_values()}),
    st.fixed_dictionaries({"x": SCALARS}),
    st.dictionaries(st.one_of(TEXT, SURROGATES), SCALARS, max_size=2),
)


def test_thread_runs_refuse_unstorable_input_before_anything_runs(tmp_path: Path) -> None:
    judge = Judge("graph.run(thread_id=...) input")

    async def check(graph: Any, run_input: Any) -> None:
        thread = f"t{next(_COUNTER)}"
        result = await judge.acall(lambda: graph.run(run_input, thread_id=thread))
        saved = await graph.checkpointer.get(thread)
        if result is None:
            assert saved is None, "a refused run left a checkpoint behind"
            return
        assert result.status == "completed", result.errors
        # What was stored loads back: the thread's state is readable.
        snapshot = await graph.get_state(thread)
        assert snapshot.values["log"] == ["ran"]

    with asyncio.Runner() as runner:
        stack = AsyncExitStack()
        store = runner.run(stack.enter_async_context(SqliteCheckpointer(tmp_path / "threads.db")))
        try:
            graph = Graph(State).add_node("step", _step).add_edge(START, "step")
            compiled = graph.compile(checkpointer=store)

            @fuzz_settings(250)
            @given(run_input=INPUTS)
            def each(run_input: Any) -> None:
                runner.run(check(compiled, run_input))

            each()
        finally:
            runner.run(stack.aclose())


PIPELINE = Pipeline.from_data(
    {
        "id": "digest",
        "name": "Digest",
        "nodes": [{"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}}],
    }
)
# What a model may answer: JSON that decodes to a lone surrogate, a huge int, deep nesting.
ANSWERS = st.one_of(
    st.just('{"summary": "short"}'),
    st.just('{"summary": "\\ud800"}'),
    st.just('{"summary": ' + "1" * 5000 + "}"),
    st.sampled_from([50, 200, 1200]).map(lambda d: '{"summary": ' + "[" * d + "]" * d + "}"),
    TEXT.map(lambda t: '{"summary": ' + repr(t).replace("'", '"') + "}"),
)


def test_pipeline_runs_refuse_unstorable_input_and_are_always_recorded(tmp_path: Path) -> None:
    judge = Judge("PipelineRunner.run input, history")

    async def check(
        blocks: SqliteBlockStore,
        checkpoints: SqliteCheckpointer,
        history: SqliteRunHistory,
        inputs: Any,
        user: Any,
        answer: str,
    ) -> None:
        provider = ScriptedProvider([answer] * 8)
        runner = PipelineRunner(
            blocks=blocks,
            executor=BlockExecutor(providers=ProviderRegistry.single(provider), retry_wait=0),
            checkpointer=checkpoints,
            history=history,
        )
        before = len(await history.list(limit=None))
        result = await judge.acall(lambda: runner.run(PIPELINE, inputs, user_id=user))
        recorded = await history.list(limit=None)
        if result is None:
            assert len(recorded) == before, "a refused run was recorded"
            return
        # However the run ended, it is in the history.
        record = await history.get(result.run_id)
        assert record.status == result.status
        # Resuming it (finished, failed or not: whatever it is) with any answer is typed too.
        thread = result.thread_id if isinstance(user, str) else user
        await judge.acall(lambda: runner.resume(thread, inputs))

    with asyncio.Runner() as runner:
        db = tmp_path / "pipeline.db"
        stack = AsyncExitStack()
        blocks = runner.run(stack.enter_async_context(SqliteBlockStore(db)))
        checkpoints = runner.run(stack.enter_async_context(SqliteCheckpointer(db)))
        history = runner.run(stack.enter_async_context(SqliteRunHistory(db)))
        try:

            @fuzz_settings(150)
            @given(
                inputs=st.one_of(
                    st.fixed_dictionaries({"doc": ODD_VALUES}),
                    st.fixed_dictionaries({"doc": TEXT}),
                    st.fixed_dictionaries({"doc": TEXT}),
                    ODD_SCALARS,
                ),
                user=st.one_of(st.none(), st.just("ada"), st.just("ada"), SURROGATES, ODD_SCALARS),
                answer=ANSWERS,
            )
            def each(inputs: Any, user: Any, answer: str) -> None:
                runner.run(check(blocks, checkpoints, history, inputs, user, answer))

            each()
        finally:
            runner.run(stack.aclose())


@fuzz_settings(150)
@given(
    inputs=st.dictionaries(
        st.one_of(TEXT, SURROGATES, BIG_INTS, HUGE_INTS, st.none()), ODD_VALUES, max_size=3
    )
)
def test_checking_run_inputs_of_any_keys_lists_problems_or_refuses_typed(inputs: Any) -> None:
    judge = Judge("check_run_inputs, check_run_request")
    problems = judge.call(lambda: check_run_inputs(PIPELINE, inputs))
    assert problems is not None
    assert all(isinstance(p, str) for p in problems)
    judge.call(lambda: check_run_request(PIPELINE, inputs, user_id="ada"))
