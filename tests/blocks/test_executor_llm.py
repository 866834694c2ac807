"""Spec: LLM blocks from the registry run through the one generic executor.

The block is stored in and loaded from a real SQLite block store; the model
is a ScriptedProvider (the engine, executor, templates, parsing and events
are all real).
"""

from __future__ import annotations

import json

import pytest

from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore
from flowcore.errors import (
    BlockConfigurationError,
    BlockInputError,
    BlockOutputError,
    BlockTimeoutError,
)
from flowcore.llm import LLMResponse, ProviderRegistry, ScriptedProvider, ThrottleError, Usage

from .harness import run_block


def executor_for(*replies: object, **kwargs: object) -> tuple[BlockExecutor, ScriptedProvider]:
    model = ScriptedProvider(list(replies))  # type: ignore[arg-type]
    registry = ProviderRegistry.single(model, model="small-model")
    return BlockExecutor(providers=registry, retry_wait=0, **kwargs), model  # type: ignore[arg-type]


async def test_a_stored_llm_block_renders_its_prompt_and_returns_validated_outputs(
    block_store: SqliteBlockStore,
) -> None:
    summarize = await block_store.get("summarize")
    executor, model = executor_for('{"summary": "Ducks migrate south."}')

    run = await run_block(
        summarize,
        executor,
        inputs={"text": "<<state.text>>"},
        state={"text": "Every autumn the ducks fly south."},
    )

    assert run.result.status == "completed"
    assert run.outputs == {"summary": "Ducks migrate south."}
    assert run.result.state["shared_context"] == {"summary": "Ducks migrate south."}
    (request,) = model.requests
    assert request.messages[0].content.endswith("Every autumn the ducks fly south.")
    assert request.model == "small-model"
    assert request.response_schema == summarize.output_schema


async def test_the_system_prompt_states_the_block_and_its_output_schema(
    block_store: SqliteBlockStore,
) -> None:
    summarize = await block_store.get("summarize")
    executor, model = executor_for('{"summary": "s"}')

    await run_block(summarize, executor, inputs={"text": "t"})

    system = model.requests[0].system or ""
    assert summarize.name in system
    assert summarize.description in system
    assert json.dumps(summarize.output_schema, sort_keys=True) in system


@pytest.mark.parametrize(
    "answer",
    [
        'Here you go:\n```json\n{"summary": "fenced"}\n```',
        'Sure! {"summary": "fenced"} Let me know if you need more.',
        '```\n{"summary": "fenced"}\n```',
    ],
)
async def test_json_is_found_in_fences_and_surrounding_prose(
    block_store: SqliteBlockStore, answer: str
) -> None:
    executor, _ = executor_for(answer)

    run = await run_block(await block_store.get("summarize"), executor, inputs={"text": "t"})

    assert run.outputs == {"summary": "fenced"}


async def test_an_unusable_answer_is_sent_back_once_with_the_error(
    block_store: SqliteBlockStore,
) -> None:
    executor, model = executor_for("I think it is about ducks.", '{"summary": "ducks"}')

    run = await run_block(await block_store.get("summarize"), executor, inputs={"text": "t"})

    assert run.outputs == {"summary": "ducks"}
    repair = model.requests[1].messages
    assert [m.role for m in repair] == ["user", "assistant", "user"]
    assert repair[1].content == "I think it is about ducks."
    assert "holds no JSON object" in repair[2].content
    (end,) = run.of_type("block_end")
    assert end.metadata["repaired"] is True
    assert end.attempts == 1


async def test_an_answer_missing_a_required_key_is_repaired_with_the_schema_problem(
    block_store: SqliteBlockStore,
) -> None:
    executor, model = executor_for('{"abstract": "x"}', '{"summary": "y"}')

    run = await run_block(await block_store.get("summarize"), executor, inputs={"text": "t"})

    assert run.outputs == {"summary": "y"}
    assert "missing required" in model.requests[1].messages[-1].content
    assert "summary" in model.requests[1].messages[-1].content


async def test_extra_keys_from_the_model_never_reach_state(block_store: SqliteBlockStore) -> None:
    executor, _ = executor_for('{"summary": "s", "internal_notes": "leak"}')

    run = await run_block(await block_store.get("summarize"), executor, inputs={"text": "t"})

    assert run.outputs == {"summary": "s"}


async def test_a_block_fails_after_its_retries_when_every_answer_is_unusable(
    block_store: SqliteBlockStore,
) -> None:
    stored = await block_store.save(
        (await block_store.get("summarize")).model_copy(update={"max_retries": 1})
    )
    # Two attempts, each: one answer plus one repair.
    executor, model = executor_for("no", "still no", "nope", "never")

    run = await run_block(stored, executor, inputs={"text": "t"})

    assert run.result.status == "failed"
    error = run.result.errors[0].cause
    assert isinstance(error, BlockOutputError)
    assert error.block == "summarize"
    assert "holds no JSON object" in str(error)
    assert model.remaining == 0
    (end,) = run.of_type("block_end")
    assert (end.ok, end.attempts, end.outputs) == (False, 2, None)


async def test_inputs_that_break_the_input_schema_fail_without_calling_the_model(
    block_store: SqliteBlockStore,
) -> None:
    executor, model = executor_for('{"summary": "s"}')

    run = await run_block(await block_store.get("summarize"), executor, inputs={"text": 42})

    error = run.result.errors[0].cause
    assert isinstance(error, BlockInputError)
    assert error.problems == ("inputs.text: expected string, got integer",)
    assert model.requests == []
    assert model.remaining == 1


async def test_a_template_reading_an_input_it_was_not_given_is_an_input_error(
    block_store: SqliteBlockStore,
) -> None:
    block = BlockDefinition(
        id="greet",
        name="Greet",
        description="Greet someone",
        kind="llm",
        output_keys=["greeting"],
        prompt_template="Say hello to {{ person }}",
    )
    executor, model = executor_for('{"greeting": "hi"}')

    run = await run_block(await block_store.save(block), executor, inputs={})

    error = run.result.errors[0].cause
    assert isinstance(error, BlockInputError)
    assert "'person' is undefined" in str(error)
    assert model.requests == []


async def test_text_deltas_and_usage_are_events_of_the_node(
    block_store: SqliteBlockStore,
) -> None:
    executor, _ = executor_for(
        LLMResponse(text='{"summary": "short and sweet"}', usage=Usage(30, 7), model="m-1")
    )

    run = await run_block(await block_store.get("summarize"), executor, inputs={"text": "t"})

    deltas = run.of_type("text_delta")
    assert "".join(d.text for d in deltas) == '{"summary": "short and sweet"}'
    assert all(d.node == "step" and d.block_id == "summarize" for d in deltas)
    (usage,) = run.of_type("usage")
    assert (usage.provider, usage.model, usage.input_tokens, usage.output_tokens) == (
        "scripted",
        "m-1",
        30,
        7,
    )
    kinds = [e.type for e in run.events]
    assert kinds.index("block_start") < kinds.index("text_delta") < kinds.index("usage")
    assert kinds.index("usage") < kinds.index("block_end") < kinds.index("node_end")
    (record,) = run.result.state["block_runs"]
    assert (record["input_tokens"], record["output_tokens"]) == (30, 7)


async def test_every_call_reports_usage_including_the_repair_call(
    block_store: SqliteBlockStore,
) -> None:
    executor, _ = executor_for(
        LLMResponse(text="oops", usage=Usage(10, 1)),
        LLMResponse(text='{"summary": "s"}', usage=Usage(20, 2)),
    )

    run = await run_block(await block_store.get("summarize"), executor, inputs={"text": "t"})

    assert [(u.input_tokens, u.output_tokens) for u in run.of_type("usage")] == [(10, 1), (20, 2)]
    assert run.result.state["block_runs"][0]["input_tokens"] == 30


async def test_a_throttled_call_is_retried_by_the_provider_layer(
    block_store: SqliteBlockStore,
) -> None:
    throttle = ThrottleError("slow down", provider="scripted", kind="rate_limit", retry_after=0)
    executor, model = executor_for(throttle, '{"summary": "s"}')

    run = await run_block(await block_store.get("summarize"), executor, inputs={"text": "t"})

    assert run.outputs == {"summary": "s"}
    assert len(model.requests) == 2


async def test_a_block_names_its_own_provider_and_model(block_store: SqliteBlockStore) -> None:
    default = ScriptedProvider([], name="default")
    special = ScriptedProvider(['{"summary": "from special"}'], name="special")
    registry = ProviderRegistry(
        {"default": default, "special": special}, default="default", default_model="cheap"
    )
    block = (await block_store.get("summarize")).model_copy(
        update={"provider": "special", "model": "big-model", "temperature": 0.1}
    )

    run = await run_block(block, BlockExecutor(providers=registry), inputs={"text": "t"})

    assert run.outputs == {"summary": "from special"}
    assert default.requests == []
    assert (special.requests[0].model, special.requests[0].temperature) == ("big-model", 0.1)
    (end,) = run.of_type("block_end")
    assert (end.metadata["provider"], end.metadata["model"]) == ("special", "big-model")


async def test_an_unknown_provider_is_a_configuration_error_naming_the_known_ones(
    block_store: SqliteBlockStore,
) -> None:
    block = (await block_store.get("summarize")).model_copy(update={"provider": "mistral"})
    executor, _ = executor_for()

    run = await run_block(block, executor, inputs={"text": "t"})

    error = run.result.errors[0].cause
    assert isinstance(error, BlockConfigurationError)
    assert "'mistral'" in str(error)
    assert "providers: scripted" in str(error)
    assert run.of_type("block_end")[0].attempts == 1  # never retried


async def test_an_attempt_that_runs_too_long_times_out_and_is_retried(
    block_store: SqliteBlockStore,
) -> None:
    class SlowOnce(ScriptedProvider):
        calls = 0

        async def stream(self, request):  # type: ignore[no-untyped-def, override]
            SlowOnce.calls += 1
            if SlowOnce.calls == 1:
                import asyncio

                await asyncio.Event().wait()  # until the attempt's timeout cancels it
            async for event in super().stream(request):
                yield event

    # The retry must finish within the same timeout: 50 ms was too little for a render
    # in the thread pool and a reply on a busy machine.
    block = (await block_store.get("summarize")).model_copy(
        update={"timeout_seconds": 1.0, "max_retries": 1}
    )
    model = SlowOnce(['{"summary": "second try"}'])
    executor = BlockExecutor(providers=ProviderRegistry.single(model), retry_wait=0)

    run = await run_block(block, executor, inputs={"text": "t"})

    assert run.outputs == {"summary": "second try"}
    assert run.of_type("block_end")[0].attempts == 2


async def test_a_block_that_always_times_out_fails_with_a_block_timeout(
    block_store: SqliteBlockStore,
) -> None:
    class Hanging(ScriptedProvider):
        async def stream(self, request):  # type: ignore[no-untyped-def, override]
            import asyncio

            await asyncio.sleep(5)
            yield  # pragma: no cover

    block = (await block_store.get("summarize")).model_copy(
        update={"timeout_seconds": 0.02, "max_retries": 0}
    )
    executor = BlockExecutor(providers=ProviderRegistry.single(Hanging([])), retry_wait=0)

    run = await run_block(block, executor, inputs={"text": "t"})

    error = run.result.errors[0].cause
    assert isinstance(error, BlockTimeoutError)
    assert error.seconds == 0.02


async def test_a_pinned_old_version_runs_its_old_prompt(block_store: SqliteBlockStore) -> None:
    v1 = await block_store.get("summarize")
    await block_store.save(v1.model_copy(update={"prompt_template": "NEW {{ text }}"}))
    executor, model = executor_for('{"summary": "a"}', '{"summary": "b"}')

    await run_block(await block_store.get("summarize", version=1), executor, inputs={"text": "x"})
    await run_block(await block_store.get("summarize"), executor, inputs={"text": "x"})

    assert not model.requests[0].messages[0].content.startswith("NEW")
    assert model.requests[1].messages[0].content == "NEW x"
