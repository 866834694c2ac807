"""Fuzz spec: pipeline and task plan documents are loaded, checked and compiled, or refused typed.

Whatever JSON (or non-JSON) a user or a model writes as a pipeline or a task
plan, ``Pipeline.from_json``/``from_data``, ``TaskPlan.from_json``/
``from_data``, ``load_definition``, ``check_pipeline`` and
``compile_pipeline`` either succeed or raise a flowcore error, within the
per-case limit.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from flowcore.blocks import BlockExecutor, SqliteBlockStore
from flowcore.llm import OfflineProvider, ProviderRegistry
from flowcore.pipeline import (
    Pipeline,
    TaskPlan,
    as_pipeline,
    check_pipeline,
    compile_pipeline,
    load_definition,
    load_pipeline_blocks,
)

from .harness import Judge, fuzz_settings
from .strategies import document_texts, pipeline_documents, plan_documents

ANY_DOCUMENT = st.one_of(pipeline_documents(), plan_documents())


@fuzz_settings(300)
@given(text=document_texts(ANY_DOCUMENT))
def test_json_text_of_any_shape_loads_or_is_refused_typed(text: Any) -> None:
    judge = Judge("Pipeline/TaskPlan.from_json, load_definition(text)")
    loaded = [
        judge.call(lambda: Pipeline.from_json(text)),
        judge.call(lambda: TaskPlan.from_json(text)),
        judge.call(lambda: load_definition(text)),
    ]
    for definition in loaded:
        if definition is not None:
            # What loaded is a definition a run can record: it dumps back to JSON.
            assert as_pipeline(definition).model_dump_json()


@fuzz_settings(300)
@given(data=ANY_DOCUMENT)
def test_parsed_documents_of_any_shape_load_or_are_refused_typed(data: Any) -> None:
    judge = Judge("Pipeline/TaskPlan.from_data, load_definition(data)")
    judge.call(lambda: Pipeline.from_data(data))
    judge.call(lambda: TaskPlan.from_data(data))
    judge.call(lambda: load_definition(data))


def test_loaded_documents_check_and_compile_or_are_refused_typed(tmp_path: Path) -> None:
    judge = Judge("check_pipeline, compile_pipeline")
    executor = BlockExecutor(providers=ProviderRegistry.single(OfflineProvider()))

    async def check(store: SqliteBlockStore, data: Any) -> None:
        definition = judge.call(lambda: load_definition(data))
        if definition is None:
            return
        pipeline = as_pipeline(definition)
        blocks, _ = await load_pipeline_blocks(pipeline, store)
        judge.call(lambda: check_pipeline(pipeline, blocks))
        await judge.acall(lambda: compile_pipeline(pipeline, store, executor))

    with asyncio.Runner() as runner:
        store = SqliteBlockStore(tmp_path / "blocks.db")
        runner.run(store.open())
        try:

            @fuzz_settings(250)
            @given(data=ANY_DOCUMENT)
            def each(data: Any) -> None:
                runner.run(check(store, data))

            each()
        finally:
            runner.run(store.aclose())
