"""Spec: seed 000's block format runs as the seed means it, and no placeholder is left unfilled.

A block may write its prompt as seed 000 does (``{placeholder}``,
``template_format: "f-string"``); flowcore fills it without ``str.format``,
so an untrusted template can reach nothing but its inputs by name. A
placeholder in the other format's spelling is refused when the block is
defined, naming the spelling that works, instead of reaching the model as
text. Seed 000's ``tools_required`` and ``block_type: extraction`` are read
as flowcore's ``metadata.tools`` and ``llm``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcore.blocks import (
    BlockDefinition,
    BlockExecutor,
    TemplateLimits,
    TemplateRenderError,
    arender_prompt,
    check_template,
    render_prompt,
)
from flowcore.errors import BlockDefinitionError, BlockInputError
from flowcore.llm import LLMResponse, ProviderRegistry, ScriptedProvider, ToolCall
from flowcore.tools import ToolRunner

from .harness import run_block
from .test_executor_kinds import http_tool

# Seed 000's example blocks, as the seed writes them, plus the format they are written in.
OPEN_UBER_EATS: dict[str, Any] = {
    "block_id": "open_uber_eats",
    "name": "Open Uber Eats",
    "description": "Navigate to Uber Eats and log in",
    "input_keys": ["uber_eats_credentials"],
    "output_keys": ["session_active", "logged_in"],
    "prompt_template": "Navigate to ubereats.com. Log in using credentials: "
    "{uber_eats_credentials}. Confirm you are logged in.",
    "tools_required": ["browser"],
    "block_type": "action",
}
QUERY_MEMORY: dict[str, Any] = {
    "block_id": "query_memory",
    "name": "Query Memory",
    "description": "Search long-term memory for relevant context",
    "input_keys": ["memory_query"],
    "output_keys": ["memory_results"],
    "prompt_template": "Search the user's memory for: {memory_query}. Return relevant "
    "preferences, history, and context.",
    "tools_required": [],
    "block_type": "query_memory",
}
ADD_TO_CART: dict[str, Any] = {
    "block_id": "add_to_cart_generic",
    "name": "Add Items to Cart",
    "description": "Add specified items to a shopping cart on any food delivery platform",
    "input_keys": ["items_to_order", "platform_context"],
    "output_keys": ["cart_contents", "cart_total"],
    "prompt_template": "Add these items to the cart: {items_to_order}. Current platform "
    "state: {platform_context}. Confirm each item was added.",
    "tools_required": ["browser"],
    "block_type": "action",
}


# ------------------------------------------------------------- rendering f-strings
def test_an_f_string_template_fills_plain_names_and_keeps_doubled_braces() -> None:
    text = render_prompt(
        'Order {items} for {user}; reply {{"ok": true}}',
        {"items": ["bowl", "soda"], "user": "Ada"},
        template_format="f-string",
    )
    assert text == "Order ['bowl', 'soda'] for Ada; reply {\"ok\": true}"


@pytest.mark.parametrize(
    "template",
    [
        "{x.__class__.__mro__}",  # attribute walk
        "{x[0]}",  # indexing
        "{x!r}",  # conversion
        "{x:>999999999}",  # a gigabyte of padding in one C call
        "{0}",  # positional
        "{}",
        "{ x.y }",
    ],
)
def test_an_f_string_placeholder_can_only_be_a_plain_input_name(template: str) -> None:
    with pytest.raises(TemplateRenderError) as refused:
        check_template(template, template_format="f-string")
    assert "not a plain input name" in str(refused.value)
    # Rendering refuses it too: nothing reaches str.format.
    with pytest.raises(TemplateRenderError):
        render_prompt(template, {"x": "secret"}, template_format="f-string")


def test_an_f_string_template_reports_a_lone_brace_and_a_missing_input_by_line() -> None:
    with pytest.raises(TemplateRenderError) as lone:
        check_template("one\ntwo }", template_format="f-string")
    assert lone.value.line == 2
    assert "write '}}' for a literal brace" in str(lone.value)
    with pytest.raises(TemplateRenderError) as missing:
        render_prompt("a\nb {who}", {}, template_format="f-string")
    assert missing.value.line == 2
    assert "'who' is undefined" in str(missing.value)


async def test_an_f_string_render_is_held_to_the_template_limits() -> None:
    limits = TemplateLimits(max_output_chars=1000)
    with pytest.raises(TemplateRenderError) as too_big:
        await arender_prompt("{a}{a}", {"a": "x" * 600}, limits=limits, template_format="f-string")
    assert "TemplateLimits.max_output_chars=1000" in str(too_big.value)
    with pytest.raises(TemplateRenderError) as too_long:
        check_template("{a}" * 400, limits=TemplateLimits(max_template_chars=1000),
                       template_format="f-string")  # fmt: skip
    assert "max_template_chars" in str(too_long.value)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="{}ab.!:[]0 %#\n", max_size=30))
def test_any_f_string_template_renders_as_text_or_is_refused_with_a_template_error(
    template: str,
) -> None:
    try:
        text = render_prompt(template, {"a": "A", "b": 2}, template_format="f-string")
    except TemplateRenderError:
        return
    assert "{a}" not in text.replace("{{", "")  # every placeholder was filled


# ------------------------------------------------------------- the other spelling
def test_a_jinja2_template_refuses_a_seed_000_placeholder_naming_the_jinja2_spelling() -> None:
    with pytest.raises(TemplateRenderError) as refused:
        check_template("Hello\nLog in with {credentials}.")
    assert refused.value.line == 2
    assert "write {{ credentials }}, or set template_format to 'f-string'" in str(refused.value)


@pytest.mark.parametrize(
    "template",
    [
        'Reply as JSON: {"summary": "..."}',  # not a placeholder: braces around a quoted key
        "{% raw %}{literal}{% endraw %}",  # raw text is meant literally
        "{{ '{quoted}' }} {# {commented} #}",  # inside an expression or a comment
        "{{ name }}",
    ],
)
def test_a_jinja2_template_keeps_braces_that_are_not_placeholders(template: str) -> None:
    check_template(template)


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("Hi {{ name }}", "write {name}"),
        ("Hi {{name}}", "write {name}"),
        ("{% if a %}x{% endif %}", "Jinja2 tag"),
    ],
)
def test_an_f_string_template_refuses_jinja2_syntax(template: str, says: str) -> None:
    with pytest.raises(TemplateRenderError) as refused:
        check_template(template, template_format="f-string")
    assert says in str(refused.value)
    assert "set template_format to 'jinja2'" in str(refused.value)


def test_an_unknown_template_format_is_refused() -> None:
    with pytest.raises(TemplateRenderError, match="unknown template_format 'mustache'"):
        render_prompt("x", {}, template_format="mustache")  # type: ignore[arg-type]


# --------------------------------------------------------------- seed 000 blocks
def test_seed_000_blocks_are_accepted_with_their_template_format() -> None:
    opened, query, cart = (
        BlockDefinition.from_data({**raw, "template_format": "f-string"})
        for raw in (OPEN_UBER_EATS, QUERY_MEMORY, ADD_TO_CART)
    )
    assert (opened.id, opened.kind, opened.metadata) == (
        "open_uber_eats",
        "llm",
        {"tools": ["browser"]},
    )
    assert (query.kind, query.metadata) == ("memory_query", {})
    assert cart.input_schema["required"] == ["items_to_order", "platform_context"]


def test_a_seed_000_block_without_its_template_format_is_refused_naming_both_fixes() -> None:
    with pytest.raises(BlockDefinitionError) as refused:
        BlockDefinition.from_data(OPEN_UBER_EATS)
    message = str(refused.value)
    assert "prompt_template:" in message
    assert "write {{ uber_eats_credentials }}, or set template_format to 'f-string'" in message


def test_an_extraction_block_is_an_llm_block() -> None:
    block = BlockDefinition.from_data(
        {
            "block_id": "extract_address",
            "name": "Extract address",
            "description": "Pull the delivery address out of a message",
            "input_keys": ["message"],
            "output_keys": ["street", "city"],
            "prompt_template": "Find the delivery address in: {{ message }}",
            "block_type": "extraction",
        }
    )
    assert block.kind == "llm"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"block_type": "wait"}, "this 'wait' block calls no model"),
        ({"metadata": {"tools": ["http_get"]}}, "both tools_required and metadata.tools"),
        ({"tools_required": "browser"}, "tools_required must be a list of tool names"),
    ],
)
def test_tools_required_is_checked(change: dict[str, Any], says: str) -> None:
    raw = {**OPEN_UBER_EATS, "template_format": "f-string", **change}
    with pytest.raises(BlockDefinitionError) as refused:
        BlockDefinition.from_data(raw)
    assert says in str(refused.value)


async def test_a_seed_000_block_runs_its_f_string_prompt_and_offers_its_tools() -> None:
    block = BlockDefinition.from_data(
        {
            "block_id": "check_site",
            "name": "Check site",
            "description": "Check whether a site is up",
            "input_keys": ["url"],
            "output_keys": ["up"],
            "template_format": "f-string",
            "prompt_template": 'Is {url} up? Answer {{"up": true}} or false.',
            "tools_required": ["http_get"],
            "block_type": "action",
        }
    )
    model = ScriptedProvider(
        [
            LLMResponse(tool_calls=(ToolCall("call-1", "http_get", {"url": "https://a.test"}),)),
            '{"up": true}',
        ]
    )
    executor = BlockExecutor(
        providers=ProviderRegistry.single(model), tools=ToolRunner([http_tool()])
    )

    run = await run_block(block, executor, inputs={"url": "https://a.test"})

    assert run.outputs == {"up": True}
    first = model.requests[0]
    assert first.messages[0].content == 'Is https://a.test up? Answer {"up": true} or false.'
    assert [t.name for t in first.tools] == ["http_get"]


async def test_an_f_string_block_missing_an_input_fails_as_a_block_input_error() -> None:
    block = BlockDefinition(
        id="greet",
        name="Greet",
        description="Greet someone",
        kind="llm",
        input_schema={"type": "object", "properties": {"who": {"type": "string"}}},
        output_schema={"type": "object", "properties": {"greeting": {"type": "string"}}},
        template_format="f-string",
        prompt_template="Greet {who}",
    )
    executor = BlockExecutor(providers=ProviderRegistry.single(ScriptedProvider([])))
    with pytest.raises(BlockInputError) as failed:
        await executor.execute(block, {})
    assert "'who' is undefined" in str(failed.value)
