"""Spec: the prompt hash, one canonical and versioned fingerprint of a model request.

It covers model, messages (the system prompt first), temperature, max_tokens
and tools; it ignores everything else; it does not depend on key order; and
the block executor computes it for every call and reports it on the call's
usage event.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import pytest

from flowcore import START, Graph
from flowcore.blocks import BlockDefinition, BlockExecutor, BlockState, add_block
from flowcore.events import UsageEvent
from flowcore.llm import LLMRequest, Message, ProviderRegistry, ScriptedProvider, ToolCall, ToolSpec
from flowcore.llm.prompt_hash import (
    PROMPT_HASH_VERSION,
    effective_model,
    prompt_hash,
    prompt_hash_payload,
)

SEARCH = ToolSpec(
    "search", "Search the web", {"type": "object", "properties": {"q": {"type": "string"}}}
)
REQUEST = LLMRequest(
    messages=(Message("user", "Summarize: ducks fly south."),),
    model="gpt-test",
    system="You summarize.",
    temperature=0.2,
    max_tokens=100,
    tools=(SEARCH,),
)
PINNED = "v1:d8afc0b4137200cd2388d6591ae65a7e648e4894d5c1a1563f49c9a2276fa742"


def test_the_hash_of_a_known_request_is_pinned() -> None:
    # A change here breaks every stored hash: bump PROMPT_HASH_VERSION instead.
    assert prompt_hash(REQUEST) == PINNED


def test_the_hash_is_sha256_of_the_documented_canonical_json() -> None:
    canonical = (
        '{"max_tokens":100,'
        '"messages":[{"content":"You summarize.","role":"system"},'
        '{"content":"Summarize: ducks fly south.","role":"user"}],'
        '"model":"gpt-test","prompt_hash_version":"v1","temperature":0.2,'
        '"tools":[{"description":"Search the web","name":"search",'
        '"parameters":{"properties":{"q":{"type":"string"}},"type":"object"}}]}'
    )
    assert "v1:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest() == PINNED
    assert PROMPT_HASH_VERSION == "v1"


@pytest.mark.parametrize(
    "change",
    [
        {"model": "gpt-other"},
        {"messages": (Message("user", "Summarize: ducks fly north."),)},
        {"messages": (Message("assistant", "Summarize: ducks fly south."),)},
        {"system": "You translate."},
        {"system": None},
        {"temperature": 0.3},
        {"temperature": None},
        {"max_tokens": 101},
        {"tools": ()},
        {"tools": (dataclasses.replace(SEARCH, description="Search the archive"),)},
        {"tools": (dataclasses.replace(SEARCH, parameters={"type": "object"}),)},
    ],
    ids=lambda change: ",".join(change),
)
def test_each_included_field_changes_the_hash(change: dict[str, Any]) -> None:
    assert prompt_hash(dataclasses.replace(REQUEST, **change)) != PINNED


def test_tool_call_fields_of_messages_are_part_of_the_prompt() -> None:
    call = ToolCall("call-1", "search", {"q": "ducks"})
    asked = Message("assistant", "", tool_calls=(call,))
    answered = Message("tool", '{"hits": 3}', tool_call_id="call-1")
    base = dataclasses.replace(REQUEST, messages=(*REQUEST.messages, asked, answered))
    other_args = Message("assistant", "", tool_calls=(ToolCall("call-1", "search", {"q": "x"}),))
    other_answer = Message("tool", '{"hits": 3}', tool_call_id="call-2")

    assert prompt_hash(base) != prompt_hash(REQUEST)
    assert prompt_hash(base) != prompt_hash(
        dataclasses.replace(base, messages=(*REQUEST.messages, other_args, answered))
    )
    assert prompt_hash(base) != prompt_hash(
        dataclasses.replace(base, messages=(*REQUEST.messages, asked, other_answer))
    )


def test_fields_outside_the_canonical_payload_do_not_change_the_hash() -> None:
    # response_schema is not hashed (flowcore's blocks put it into the system prompt).
    assert prompt_hash(dataclasses.replace(REQUEST, response_schema={"type": "object"})) == PINNED


def test_correlation_and_billing_ids_cannot_enter_the_hash() -> None:
    payload = prompt_hash_payload(REQUEST)
    assert set(payload) == {
        "prompt_hash_version",
        "model",
        "messages",
        "temperature",
        "max_tokens",
        "tools",
    }
    assert {field.name for field in dataclasses.fields(LLMRequest)} - {
        "messages",
        "model",
        "system",
        "temperature",
        "max_tokens",
        "tools",
    } == {"response_schema"}


def test_tools_are_left_out_when_none_are_offered() -> None:
    assert "tools" not in prompt_hash_payload(dataclasses.replace(REQUEST, tools=()))


def test_key_order_of_arguments_and_schemas_does_not_matter() -> None:
    params_a = {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}
    params_b = {"properties": {"n": {"type": "integer"}, "q": {"type": "string"}}, "type": "object"}
    call_a = ToolCall("c", "search", {"q": "ducks", "n": 3})
    call_b = ToolCall("c", "search", {"n": 3, "q": "ducks"})

    def request(params: dict[str, Any], call: ToolCall) -> LLMRequest:
        return dataclasses.replace(
            REQUEST,
            tools=(dataclasses.replace(SEARCH, parameters=params),),
            messages=(*REQUEST.messages, Message("assistant", "", tool_calls=(call,))),
        )

    assert prompt_hash(request(params_a, call_a)) == prompt_hash(request(params_b, call_b))


def test_equal_numbers_and_a_system_field_or_message_hash_the_same() -> None:
    as_field = LLMRequest((Message("user", "Hi"),), model="m", system="Be brief.", temperature=1)
    as_message = LLMRequest(
        (Message("system", "Be brief."), Message("user", "Hi")), model="m", temperature=1.0
    )
    assert prompt_hash(as_field) == prompt_hash(as_message)


def test_non_ascii_text_is_hashed_as_utf8() -> None:
    text = dataclasses.replace(REQUEST, messages=(Message("user", "Zusammenfassung: Enten 🦆"),))
    payload = (
        '{"max_tokens":100,"messages":[{"content":"You summarize.","role":"system"},'
        '{"content":"Zusammenfassung: Enten 🦆","role":"user"}],"model":"gpt-test",'
        '"prompt_hash_version":"v1","temperature":0.2,"tools":[{"description":"Search the web",'
        '"name":"search","parameters":{"properties":{"q":{"type":"string"}},"type":"object"}}]}'
    )
    assert prompt_hash(text) == "v1:" + hashlib.sha256(payload.encode("utf-8")).hexdigest()


def test_values_without_a_json_form_are_refused_with_a_clear_error() -> None:
    odd = dataclasses.replace(
        REQUEST, messages=(Message("assistant", "", tool_calls=(ToolCall("c", "t", {"x": 1j}),)),)
    )
    with pytest.raises(TypeError, match="complex"):
        prompt_hash(odd)


class _State(BlockState, total=False):
    text: str


async def test_the_block_executor_reports_the_hash_of_each_request_it_sends() -> None:
    model = ScriptedProvider(["not json", '{"summary": "Ducks fly."}'])
    executor = BlockExecutor(providers=ProviderRegistry.single(model, model="small"))
    block = BlockDefinition(
        id="summarize",
        name="Summarize",
        description="Summarize a text",
        kind="llm",
        input_keys=["text"],
        output_keys=["summary"],
        prompt_template="Summarize: {{ text }}",
    )
    graph = Graph(_State, name="hash")
    add_block(graph, "step", block, executor, inputs={"text": "ducks"})
    graph.add_edge(START, "step")

    async with graph.compile().stream({}) as events:
        usage = [e async for e in events if isinstance(e, UsageEvent)]

    # Two calls (the first answer is repaired): two different requests, two hashes.
    assert [u.prompt_hash for u in usage] == [prompt_hash(r) for r in model.requests]
    assert usage[0].prompt_hash != usage[1].prompt_hash
    assert len({u.invocation_id for u in usage}) == 2


# ------------------------------------------------------------ effective model


def test_a_request_without_a_model_hashes_the_providers_default_model() -> None:
    nameless = dataclasses.replace(REQUEST, model=None)

    on_a = prompt_hash(nameless, default_model="model-a")
    on_b = prompt_hash(nameless, default_model="model-b")

    assert on_a != on_b
    assert on_a == prompt_hash(dataclasses.replace(REQUEST, model="model-a"))
    # A model the request names wins over the default, and the pinned hash is unchanged.
    assert prompt_hash(REQUEST, default_model="model-a") == PINNED
    assert prompt_hash_payload(nameless, default_model="model-a")["model"] == "model-a"


def test_effective_model_is_the_requests_model_else_the_providers() -> None:
    nameless = dataclasses.replace(REQUEST, model=None)

    assert effective_model(REQUEST, ScriptedProvider([], model="model-a")) == "gpt-test"
    assert effective_model(nameless, ScriptedProvider([], model="model-a")) == "model-a"
    assert effective_model(nameless, ScriptedProvider([])) is None


async def hashes_on(provider: Any) -> list[UsageEvent]:
    """Usage events of one summarize block run on ``provider`` (the block names no model)."""
    executor = BlockExecutor(providers=ProviderRegistry.single(provider), retry_wait=0)
    block = BlockDefinition(
        id="summarize",
        name="Summarize",
        description="Summarize a text",
        kind="llm",
        input_keys=["text"],
        output_keys=["summary"],
        prompt_template="Summarize: {{ text }}",
    )
    graph = Graph(_State, name="hash")
    add_block(graph, "step", block, executor, inputs={"text": "ducks"})
    graph.add_edge(START, "step")
    async with graph.compile().stream({}) as events:
        return [e async for e in events if isinstance(e, UsageEvent)]


async def test_two_providers_with_models_a_and_b_give_two_hashes() -> None:
    answer = '{"summary": "Ducks fly."}'
    (on_a,) = await hashes_on(ScriptedProvider([answer], model="model-a"))
    (on_b,) = await hashes_on(ScriptedProvider([answer], model="model-b"))

    assert on_a.prompt_hash != on_b.prompt_hash
    assert (on_a.model, on_b.model) == ("model-a", "model-b")


async def test_two_openai_sdk_providers_with_models_a_and_b_give_two_hashes() -> None:
    from flowcore.llm.openai_provider import OpenAIProvider

    from .loopback import LoopbackServer, openai_stream

    found: dict[str, str] = {}
    async with LoopbackServer() as server:
        for model in ("model-a", "model-b"):
            server.replies.append(openai_stream(['{"summary": "Ducks fly."}'], model=model))
            provider = OpenAIProvider(api_key="sk-test", model=model, base_url=f"{server.url}/v1")
            try:
                (usage,) = await hashes_on(provider)
            finally:
                await provider.aclose()
            found[model] = usage.prompt_hash

    assert [r.body["model"] for r in server.requests] == ["model-a", "model-b"]
    assert found["model-a"] != found["model-b"]
