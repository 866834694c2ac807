"""Spec: the async API the server's routes call: clarify, create, stream, automate."""

from __future__ import annotations

import re

import pytest

from flowcore.errors import InvalidInputError
from flowcore.thinker import ThinkerModel

from .conftest import MakeThinker


async def test_clarify_asks_one_question_for_a_vague_request(make_thinker: MakeThinker) -> None:
    result = await make_thinker(ThinkerModel()).clarify(
        [{"role": "user", "content": "research stuff"}], user_id="ada"
    )
    assert result.as_json() == {
        "ready": False,
        "question": "What will you give it as input, and what should it produce?",
    }
    assert result.usage.input_tokens > 0


async def test_clarify_synthesizes_a_refined_intent_when_ready(make_thinker: MakeThinker) -> None:
    result = await make_thinker(ThinkerModel()).clarify(
        [
            {"role": "user", "content": "summarize stuff"},
            {"role": "assistant", "content": "What will you give it?"},
            {
                "role": "user",
                "content": "a long weekly report; summarize it, then count the words of it",
            },
        ]
    )
    assert result.ready
    assert result.spec is not None
    assert set(result.spec) == {"goal", "steps", "inputs", "outputs", "edge_cases"}
    assert result.refined_intent is not None
    assert result.refined_intent.startswith("Goal: summarize stuff")


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([], "non-empty list"),
        ([{"role": "system", "content": "x"}], "'user' or 'assistant'"),
        ([{"role": "user", "content": "  "}], "non-empty text"),
        ([{"role": "assistant", "content": "hi"}], "messages[0] must be the person's request"),
    ],
)
async def test_clarify_refuses_a_malformed_conversation(
    make_thinker: MakeThinker, messages: list[dict[str, str]], fragment: str
) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(fragment)):
        await make_thinker(ThinkerModel()).clarify(messages)


async def test_create_refuses_an_empty_intent(make_thinker: MakeThinker) -> None:
    with pytest.raises(InvalidInputError, match="intent must be non-empty text"):
        await make_thinker(ThinkerModel()).create("   ")


async def test_create_result_has_seed_003s_shape(make_thinker: MakeThinker) -> None:
    result = await make_thinker(ThinkerModel()).create("Count the lines of a poem")
    data = result.as_json()
    assert data["status"] == "complete"
    assert data["created"] == ["count_lines"]
    assert data["pipeline_json"]["nodes"] == [
        {"id": "n1", "block_id": "count_lines", "inputs": {"text": "<<input.text>>"}}
    ]
    assert data["usage"]["input_tokens"] > 0


async def test_automate_creates_then_runs(make_thinker: MakeThinker) -> None:
    done = await make_thinker(ThinkerModel()).automate(
        "Extract the numbers from a text, then compute the average",
        {"text": "between 10 and 20"},
        user_id="ada",
    )
    assert done.create.status == "complete"
    assert done.run is not None
    assert done.run.status == "completed"
    assert done.run.state["results"]["n2"] == {"mean": 15.0}


async def test_automate_names_inputs_that_do_not_fit_the_pipeline(
    make_thinker: MakeThinker,
) -> None:
    done = await make_thinker(ThinkerModel()).automate("Reverse a text", {"txt": "abc"})
    assert done.run is None
    assert done.problems == [
        "input 'text' is missing (read by node n1); pass it, e.g. --input text=...",
        "input 'txt' is not read by pipeline 'reverse_text_pipeline' (it reads: text); remove "
        "it or wire it into a node's inputs as <<input.txt>>",
    ]


async def test_stream_events_become_seed_003_sse_frames(make_thinker: MakeThinker) -> None:
    from flowcore.thinker import to_sse_frame

    frames = [
        to_sse_frame(e) async for e in make_thinker(ThinkerModel()).stream_create("Reverse a text")
    ]
    assert frames[0].startswith("event: start\ndata: {")
    assert frames[-1].startswith('event: complete\ndata: {"type":"complete","result":{')
    assert all(f.endswith("\n\n") and f.count("\n") == 3 for f in frames)


async def test_closing_the_thinker_cancels_a_run_still_going(make_thinker: MakeThinker) -> None:
    async with make_thinker(ThinkerModel()) as thinker:
        events = thinker.stream_create("Reverse a text")
        first = await anext(events)
        assert first["type"] == "start"
        second = await anext(events)
        assert second["type"] == "stage"
    rest = [e async for e in events]
    # The run was cancelled mid-way; its stream still ends with its last event.
    assert rest[-1]["type"] == "complete"
    assert rest[-1]["result"]["status"] == "failed"
    assert rest[-1]["result"]["pipeline_json"] is None
