"""Spec: ``OfflineProvider`` answers from the request alone, so pipelines run without a key.

With a response schema it answers JSON that the schema accepts (checked with
the same ``schema_problems`` the block executor uses); without one, a plain
placeholder sentence. The same request always gets the same answer, streamed
word by word. Real blocks from a real SQLite block store run through the
generic executor with it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import pytest

from flowcore import START, Event, Graph
from flowcore.blocks import BlockExecutor, BlockState, SqliteBlockStore, add_block
from flowcore.blocks.jsonschema import schema_problems
from flowcore.llm import (
    LLMProvider,
    LLMRequest,
    LLMResponse,
    Message,
    OfflineProvider,
    ProviderRegistry,
    StreamEvent,
    ToolSpec,
)


def ask(prompt: str, schema: dict[str, Any] | None = None, **kwargs: Any) -> LLMRequest:
    return LLMRequest(messages=(Message("user", prompt),), response_schema=schema, **kwargs)


async def answer(request: LLMRequest) -> LLMResponse:
    return await OfflineProvider().complete(request)


async def answer_json(prompt: str, schema: dict[str, Any]) -> Any:
    return json.loads((await answer(ask(prompt, schema))).text)


# ------------------------------------------------------------ schema mode
SCHEMAS: dict[str, dict[str, Any]] = {
    "summary": {
        "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"],
    },
    "every type": {
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 3, "maxLength": 20},
            "padded": {"type": "string", "minLength": 60},
            "count": {"type": "integer"},
            "score": {"type": "number"},
            "done": {"type": "boolean"},
            "nothing": {"type": "null"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "meta": {"type": "object"},
        },
        "required": ["title", "count", "done"],
        "additionalProperties": False,
    },
    "bounds": {
        "type": "object",
        "properties": {
            "at_least_five": {"type": "integer", "minimum": 5},
            "above_two_and_a_half": {"type": "integer", "exclusiveMinimum": 2.5},
            "negative": {"type": "integer", "maximum": -3},
            "below_zero": {"type": "integer", "exclusiveMaximum": 0},
            "fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "positive": {"type": "number", "exclusiveMinimum": 0},
            "tiny_negative": {"type": "number", "exclusiveMaximum": 0},
            "from_minus_ten": {"type": "integer", "minimum": -10, "maximum": 10},
            "half_up": {"type": "number", "minimum": 0.5},
        },
    },
    "choices": {
        "type": "object",
        "properties": {
            "colour": {"type": "string", "enum": ["red", "green", "blue"]},
            "maybe": {"enum": [None, "set"]},
            "fixed": {"const": "v1"},
            "nullable": {"type": ["null", "string"]},
            "either": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 2}]},
            "one": {"oneOf": [{"type": "boolean"}, {"type": "string"}]},
            "both": {
                "allOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                    {"properties": {"b": {"type": "integer"}}, "required": ["b"]},
                ]
            },
        },
        "required": ["colour", "maybe", "fixed", "nullable", "either", "one", "both"],
    },
    "nested": {
        "type": "object",
        "properties": {
            "rows": {
                "type": "array",
                "minItems": 3,
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "price": {"type": "number", "minimum": 1},
                        "sizes": {"type": "array", "items": {"type": "integer"}, "minItems": 2},
                    },
                    "required": ["name", "price", "sizes"],
                },
            },
            "owner": {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "email": {"type": "string"}},
                "required": ["id", "extra"],
            },
        },
        "required": ["rows", "owner"],
    },
    "top-level array": {"type": "array", "items": {"type": "number"}, "minItems": 2},
    "empty object": {"type": "object"},
    "no type at all": {},
    "formats": {
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "site": {"type": "string", "format": "uri"},
        },
    },
    "decision": {
        "type": "object",
        "properties": {"branch": {"type": "string", "enum": ["no", "yes"]}},
        "required": ["branch"],
    },
}


@pytest.mark.parametrize("schema_name", list(SCHEMAS))
async def test_schema_answers_are_json_the_schema_accepts(schema_name: str) -> None:
    schema = SCHEMAS[schema_name]

    value = await answer_json("Plan a picnic for four people in the park", schema)

    assert schema_problems(value, schema, "answer") == []
    if isinstance(value, dict):
        assert set(schema.get("properties", {})) <= set(value)


async def test_values_are_the_simplest_of_their_type_and_strings_quote_the_prompt() -> None:
    value = await answer_json(
        "Plan a picnic for four people in the park today", SCHEMAS["every type"]
    )

    assert value == {
        "title": "offline answer: Plan",  # cut to maxLength
        "padded": "offline answer: Plan a picnic for four people in the...".ljust(60, "."),
        "count": 0,
        "score": 0,
        "done": True,
        "nothing": None,
        "tags": ["offline answer: Plan a picnic for four people in the..."],
        "meta": {},
    }


async def test_numbers_are_zero_or_the_allowed_value_nearest_zero() -> None:
    value = await answer_json("numbers", SCHEMAS["bounds"])

    assert value == {
        "at_least_five": 5,
        "above_two_and_a_half": 3,
        "negative": -3,
        "below_zero": -1,
        "fraction": 0.5,
        "positive": 1,
        "tiny_negative": -1,
        "from_minus_ten": 0,
        "half_up": 0.5,
    }


async def test_enums_give_their_first_value_and_nullable_types_a_real_value() -> None:
    value = await answer_json("choose", SCHEMAS["choices"])

    assert value == {
        "colour": "red",
        "maybe": "set",
        "fixed": "v1",
        "nullable": "offline answer: choose",
        "either": 2,
        "one": True,
        "both": {"a": "offline answer: choose", "b": 0},
    }


async def test_arrays_respect_min_items_and_required_keys_without_a_schema_are_filled() -> None:
    value = await answer_json("rows", SCHEMAS["nested"])

    assert len(value["rows"]) == 3
    assert value["rows"][0] == {"name": "offline answer: rows", "price": 1, "sizes": [0, 0]}
    assert value["owner"] == {
        "id": 0,
        "email": "offline answer: rows",
        "extra": "offline answer: rows",
    }
    assert await answer_json("x", {"type": "array", "maxItems": 0}) == []


async def test_a_decision_branch_is_picked_by_the_prompt_not_always_the_first() -> None:
    schema = {
        "type": "object",
        "properties": {
            "branch": {"type": "string", "enum": ["answer", "escalate", "ignore"]},
            "tone": {"type": "string", "enum": ["calm", "urgent", "neutral"]},
        },
        "required": ["branch", "tone"],
    }
    prompts = [f"Ticket {i}: the printer on floor {i} is on fire" for i in range(12)]

    picks = [await answer_json(p, schema) for p in prompts]

    assert {p["branch"] for p in picks} == {"answer", "escalate", "ignore"}
    assert {p["tone"] for p in picks} == {"calm"}  # only a "branch" enum is spread
    assert [await answer_json(p, schema) for p in prompts] == picks


_BRANCHES_IN_A_FRESH_PROCESS = """
import asyncio, json
from flowcore.llm import LLMRequest, Message, OfflineProvider
schema = {"type": "object", "properties": {"branch": {"enum": ["a", "b", "c", "d"]}}}
async def main():
    out = []
    for i in range(8):
        req = LLMRequest((Message("user", f"case {i}"),), response_schema=schema)
        out.append((await OfflineProvider().complete(req)).text)
    print(json.dumps(out))
asyncio.run(main())
"""


async def branches_in_a_fresh_process(hash_seed: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _BRANCHES_IN_A_FRESH_PROCESS,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
    )
    stdout, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0
    return stdout.decode()


async def test_branch_picks_do_not_depend_on_the_process_hash_seed() -> None:
    seen = {await branches_in_a_fresh_process(seed) for seed in ("1", "2")}
    schema = {"type": "object", "properties": {"branch": {"enum": ["a", "b", "c", "d"]}}}
    here = [(await answer(ask(f"case {i}", schema))).text for i in range(8)]

    assert seen == {json.dumps(here) + "\n"}
    assert len(set(here)) > 1


# ------------------------------------------------------------- plain mode
async def test_without_a_schema_the_answer_is_a_placeholder_sentence_quoting_the_prompt() -> None:
    short = await answer(ask("What is the capital of France?"))
    long = await answer(ask("Please write me a very long essay about the history of ducks"))
    empty = await answer(LLMRequest(messages=()))

    assert short.text == "offline answer to: What is the capital of France?"
    assert long.text == "offline answer to: Please write me a very long essay about..."
    assert empty.text == "offline answer to: (empty prompt)"


async def test_the_last_user_message_is_the_prompt() -> None:
    request = LLMRequest(
        messages=(
            Message("user", "first question"),
            Message("assistant", "first answer"),
            Message("user", "second   question\nwith lines"),
        ),
        system="You are terse.",
    )

    response = await answer(request)

    assert response.text == "offline answer to: second question with lines"


async def test_usage_is_estimated_from_word_counts_and_the_model_is_named() -> None:
    request = ask("one two three", system="be brief", model="tiny")

    response = await answer(request)

    assert response.usage.input_tokens == 5
    assert response.usage.output_tokens == len(response.text.split()) == 6
    assert response.model == "tiny"
    assert response.finish_reason == "stop"
    assert (await OfflineProvider(name="demo").complete(ask("x"))).model == "demo"


async def test_offered_tools_are_never_called() -> None:
    search = ToolSpec("search", "Search the web", {"type": "object"})

    response = await answer(ask("Find flights to Oslo", tools=(search,)))

    assert response.tool_calls == ()
    assert response.text == "offline answer to: Find flights to Oslo"


# ---------------------------------------------------------- determinism
async def test_the_same_request_always_gets_the_same_answer() -> None:
    request = ask("Summarize the meeting notes", SCHEMAS["nested"], system="JSON only")

    first = await OfflineProvider().complete(request)
    again = await OfflineProvider().complete(request)
    other = await OfflineProvider().complete(ask("Something else", SCHEMAS["nested"]))

    assert first == again
    assert first.text != other.text


# -------------------------------------------------------------- streaming
@pytest.mark.parametrize("schema", [None, SCHEMAS["nested"]], ids=["plain", "schema"])
async def test_stream_deltas_concatenate_to_the_complete_answer(
    schema: dict[str, Any] | None,
) -> None:
    model = OfflineProvider()
    request = ask("Tell me about the weather in Bergen", schema)

    events: list[StreamEvent] = [event async for event in model.stream(request)]
    whole = await model.complete(request)

    texts = [e.text for e in events if e.kind == "text"]
    assert len(texts) > 3
    assert "".join(texts) == whole.text
    assert [e.kind for e in events[-2:]] == ["usage", "done"]
    assert {e.kind for e in events[:-2]} == {"text"}
    assert events[-2].usage == whole.usage
    assert events[-1].response == whole


def test_it_is_an_llm_provider_named_offline() -> None:
    model = OfflineProvider()

    assert isinstance(model, LLMProvider)
    assert model.name == "offline"


# ------------------------------------------------- through the executor
class Ticket(BlockState, total=False):
    text: str


async def test_stored_blocks_run_end_to_end_through_the_block_executor(
    block_store: SqliteBlockStore,
) -> None:
    executor = BlockExecutor(providers=ProviderRegistry.single(OfflineProvider()), retry_wait=0)
    graph = Graph(Ticket, name="offline-triage")
    add_block(
        graph,
        "triage",
        await block_store.get("classify"),
        executor,
        inputs={"text": "<<state.text>>"},
        branches={"yes": "summarize", "no": "skip"},
    )
    add_block(
        graph,
        "summarize",
        await block_store.get("summarize"),
        executor,
        inputs={"text": "<<state.text>>"},
    )
    graph.add_node("skip", lambda s: None)
    graph.add_edge(START, "triage")
    compiled = graph.compile()

    taken: dict[str, str] = {}
    for text in [f"Customer {i} asks when the order ships" for i in range(6)]:
        events: list[Event] = []
        async with compiled.stream({"text": text}) as stream:
            async for event in stream:
                events.append(event)
            result = await stream.result()
        assert result.status == "completed"
        results = result.state["results"]
        branch = results["triage"]["branch"]
        taken[text] = branch
        assert all("repaired" not in run["metadata"] for run in result.state["block_runs"])
        assert {run["metadata"]["provider"] for run in result.state["block_runs"]} == {"offline"}
        assert {e.type for e in events} >= {"text_delta", "usage", "block_end"}
        if branch == "yes":
            summary = results["summarize"]["summary"]
            assert summary.startswith("offline answer: Summarize the following text")
            deltas = "".join(
                e.text for e in events if e.type == "text_delta" and e.node == "summarize"
            )
            assert json.loads(deltas) == {"summary": summary}
        else:
            assert "summarize" not in results

    assert set(taken.values()) == {"yes", "no"}
