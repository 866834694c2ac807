"""Spec: the Thinker is a flowcore graph run through the port: checkpointed, resumable, metered."""

from __future__ import annotations

import json

from flowcore.blocks import SqliteBlockStore
from flowcore.checkpoint import SqliteCheckpointer
from flowcore.llm import ScriptedProvider
from flowcore.port import DataAiEvent, InProcExecutor
from flowcore.thinker import PROMPT_BLOCK_IDS, Thinker, ThinkerModel, thinker_event

from .conftest import MakeThinker, executor_for

SEED_003_ORDER = [
    "start",
    "stage",  # decompose
    "decompose_blocks",
    "stage",  # search
    "search_found",
    "search_missing",
    "stage",  # create
    "creating_block",
    "block_test_passed",
    "block_created",
    "stage",  # wire
    "complete",
]


async def test_events_follow_seed_003_and_each_has_a_type_and_a_time(
    make_thinker: MakeThinker,
) -> None:
    thinker = make_thinker(ThinkerModel())
    events = [e async for e in thinker.stream_create("Summarize a text, then count the words")]
    main = [
        e["type"]
        for e in events
        if e["type"] not in ("llm_prompt", "llm_response", "validation", "stage_result")
    ]
    assert main == SEED_003_ORDER
    assert all(isinstance(e["ts"], float) for e in events)
    prompt = next(e for e in events if e["type"] == "llm_prompt")
    assert "THINKER STAGE: decompose" in prompt["prompts"][0]
    response = next(e for e in events if e["type"] == "llm_response")
    assert "required_blocks" in response["response"]
    result = events[-1]["result"]
    assert result["status"] == "complete"
    assert set(result) >= {"pipeline_json", "status", "log"}


async def test_events_reach_the_port_as_data_events(make_thinker: MakeThinker) -> None:
    thinker = make_thinker(ThinkerModel())
    graph, _ = await thinker.graphs()
    from flowcore.port import Caller, RunOptions, RunRequest

    async with InProcExecutor(graphs={"thinker": graph}) as port:
        handle = port.run(
            RunRequest(
                "thinker",
                {"intent": "Reverse a text", "clarify": False},
                Caller("req-1", "trace-1"),
                RunOptions(thread_id="t-port"),
            )
        )
        data = [e async for e in handle if isinstance(e, DataAiEvent)]
        outcome = await handle.final
    assert outcome.status == "completed"
    assert [thinker_event(e)["type"] for e in data][-1] == "complete"  # type: ignore[index]
    assert all(e.name == e.data["type"] for e in data)


async def test_tokens_of_every_stage_call_are_counted(make_thinker: MakeThinker) -> None:
    result = await make_thinker(ThinkerModel()).create("Convert a text to uppercase")
    # Decompose, create and wire each made one call; the created block's test made none.
    assert result.usage.input_tokens > 0
    assert result.usage.output_tokens > 0


async def test_a_clarifying_question_waits_on_its_thread_and_resumes_in_a_new_thinker(
    registry: SqliteBlockStore, checkpoints: SqliteCheckpointer
) -> None:
    first = Thinker(registry, executor_for(ThinkerModel()), checkpointer=checkpoints)
    asked = await first.create("summarize stuff", clarify=True, thread_id="t-42")
    assert asked.status == "needs_input"
    assert asked.question == "What will you give it as input, and what should it produce?"
    assert asked.pipeline_json is None
    # Another process, days later: a new Thinker on the same database answers.
    later = Thinker(registry, executor_for(ThinkerModel()), checkpointer=checkpoints)
    done = await later.answer("t-42", "a news article, and I want a summary and its word count")
    assert done.status == "complete", done.log
    assert done.refined_intent is not None
    assert done.refined_intent.startswith("Goal: summarize stuff: a news article")
    assert [n["block_id"] for n in done.pipeline_json["nodes"]] == ["summarize", "count_words"]


async def test_after_three_user_messages_the_clarifier_must_decide(
    make_thinker: MakeThinker,
) -> None:
    still_vague = json.dumps({"ready": False, "question": "And then?"})
    decided = json.dumps(
        {
            "ready": True,
            "refined_intent": {
                "goal": "Reverse a text",
                "steps": ["reverse it"],
                "inputs": ["text"],
                "outputs": ["reversed_text"],
                "edge_cases": ["empty text"],
            },
        }
    )
    model = ScriptedProvider([still_vague, still_vague, still_vague, decided])
    thinker = make_thinker(model)
    result = await thinker.create("stuff", clarify=True, thread_id="t-3")
    result = await thinker.answer("t-3", "things")
    assert result.status == "needs_input"
    # The third message: the model still asks, is told it must decide, and decides.
    after = thinker.stream_answer("t-3", "more things")
    events = [e async for e in after if e["type"] in ("validation", "stage_result")]
    assert events[0]["ok"] is False
    assert "must_decide is true" in events[0]["problems"][0]
    assert events[-1]["refined_intent"]["goal"] == "Reverse a text"
    assert '"must_decide": true' in model.requests[2].messages[-1].content


async def test_prompt_blocks_are_seeded_once_and_an_edited_version_is_used(
    registry: SqliteBlockStore, checkpoints: SqliteCheckpointer
) -> None:
    await Thinker(registry, executor_for(ThinkerModel())).graphs()
    seeded = await registry.get(PROMPT_BLOCK_IDS["decompose"])
    assert (seeded.created_by, seeded.version) == ("flowcore", 1)
    assert seeded.prompt_template is not None
    edited = seeded.model_copy(
        update={"prompt_template": seeded.prompt_template + "\nPrefer python blocks."}
    )
    assert (await registry.save(edited)).version == 2
    thinker = Thinker(registry, executor_for(ThinkerModel()), checkpointer=checkpoints)
    events = [e async for e in thinker.stream_create("Reverse a text")]
    prompt = next(e for e in events if e["type"] == "llm_prompt" and e["stage"] == "decompose")
    assert prompt["block_version"] == 2
    assert "Prefer python blocks." in prompt["prompts"][0]
    assert await registry.versions(PROMPT_BLOCK_IDS["decompose"]) == [1, 2]


async def test_a_failing_provider_ends_the_stream_with_an_error_and_complete(
    make_thinker: MakeThinker,
) -> None:
    from flowcore.llm.errors import ProviderError

    model = ScriptedProvider([ProviderError("bad key", provider="scripted", kind="auth")])
    result = await make_thinker(model).create("Reverse a text")
    kinds = [e["type"] for e in result.events]
    assert kinds[-2:] == ["error", "complete"]
    assert "bad key" in result.events[-2]["message"]
    assert result.status == "failed"
    assert len(model.requests) == 1  # not the model's to fix: never asked again
