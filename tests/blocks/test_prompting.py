"""Spec: prompts render in a sandbox that sees only the block's inputs; answers parse robustly."""

from __future__ import annotations

import json
import time

import jinja2
import pytest

from flowcore.blocks import (
    AnswerParseError,
    BlockDefinition,
    BlockExecutor,
    aparse_json_object,
    parse_json_object,
    render_prompt,
)
from flowcore.blocks.prompting import repair_prompt, system_prompt
from flowcore.errors import BlockOutputError
from flowcore.llm import ProviderRegistry, ScriptedProvider

# Template-injection payloads: each tries to reach Python internals, the
# process environment, or data that is not one of the block's inputs.
INJECTIONS = {
    "subclass walk": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "cycler globals": "{{ cycler.__init__.__globals__.os }}",
    "joiner globals": "{{ joiner.__init__.__globals__.os.environ }}",
    "namespace globals": "{{ namespace.__init__.__globals__.os }}",
    "lipsum globals": "{{ lipsum.__globals__['os'].popen('id').read() }}",
    "self reference": "{{ self.__init__.__globals__.__builtins__ }}",
    "attr filter": "{{ (''|attr('__class__')).__mro__ }}",
    "format string": "{{ '{0.__class__.__mro__}'.format(text) }}",
    "loop over subclasses": (
        "{% for c in [].__class__.__base__.__subclasses__() %}{{ c }}{% endfor %}"
    ),
    "mutate an input": "{{ items.append('injected') }}{{ items }}",
    "run config": "{{ config }}",
    "api key by name": "{{ openai_api_key }}",
    "huge range": "{{ range(10**9) | list | length }}",
}


@pytest.mark.parametrize("template", INJECTIONS.values(), ids=INJECTIONS.keys())
def test_template_injection_payloads_are_refused(template: str) -> None:
    inputs = {"text": "hello", "items": ["a"]}

    with pytest.raises(ValueError, match="prompt_template"):
        render_prompt(template, inputs)

    assert inputs == {"text": "hello", "items": ["a"]}  # nothing was mutated


def test_the_same_payloads_do_reach_os_in_a_plain_jinja_environment() -> None:
    # The contrast that makes the test above meaningful: without the sandbox
    # these payloads really do escape.
    plain = jinja2.Environment()
    leaked = [
        name
        for name in ("cycler globals", "namespace globals")
        if "<module 'os'" in plain.from_string(INJECTIONS[name]).render(text="x")
    ]
    assert leaked == ["cycler globals", "namespace globals"]


def test_a_template_sees_exactly_the_inputs_it_is_given() -> None:
    assert (
        render_prompt(
            "{{ text | upper }} ({{ items | join(', ') }})", {"text": "hi", "items": ["a", "b"]}
        )
        == "HI (a, b)"
    )


def test_a_missing_input_names_the_variable_and_the_fix() -> None:
    with pytest.raises(ValueError, match=r"'language' is undefined.*input_schema"):
        render_prompt("Translate into {{ language }}", {"text": "hi"})


def test_the_system_prompt_carries_the_description_and_the_schema() -> None:
    block = BlockDefinition(
        id="t",
        name="Tag",
        description="Tag a text",
        kind="llm",
        prompt_template="{{ text }}",
        output_keys=["tags"],
    )
    prompt = system_prompt(block, block.output_schema)
    assert "'Tag': Tag a text" in prompt
    assert '"required": ["tags"]' in prompt
    assert "single JSON object" in prompt


def test_the_repair_prompt_lists_every_problem() -> None:
    text = repair_prompt(["output.a: missing", "output.b: expected string, got integer"])
    assert "- output.a: missing\n- output.b: expected string, got integer" in text


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  \n{"a": {"b": [1, 2]}}\n', {"a": {"b": [1, 2]}}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Here:\n```\n{"a": 1}\n```\nDone.', {"a": 1}),
        ('The answer is {"a": "x}y"} as requested.', {"a": "x}y"}),
        ('{not json} but then {"a": 2}', {"a": 2}),
        ('[1, 2] and {"a": 3}', {"a": 3}),
    ],
)
def test_a_json_object_is_found_wherever_the_model_put_it(
    answer: str, expected: dict[str, object]
) -> None:
    assert parse_json_object(answer) == expected


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("", "the answer was empty"),
        ("I cannot help with that.", "holds no JSON object (it began 'I cannot help"),
        ("[1, 2, 3]", "holds no JSON object"),
        ('{"a": 1', "holds no JSON object"),
    ],
)
def test_an_answer_without_a_json_object_says_what_it_held(answer: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_json_object(answer)


# Answers built to make a naive search slow or deep: each must end in a typed
# error (or the object) quickly. The bound is a hang guard, not a speed target
# (bench/templates.py measures the time).
HOSTILE_ANSWERS = {
    "100k opening braces": "{" * 100_000,
    "unclosed flat object": '{"a": 1, ' * 11_000,
    "prose quoting half objects": 'see {"k": "' * 9_000,
    "objects nested 20k deep": '{"a":' * 20_000,
    "arrays nested 100k deep": "[" * 100_000,
    "closed arrays nested 5k deep": "[" * 5_000 + "]" * 5_000,
}


@pytest.mark.parametrize("answer", HOSTILE_ANSWERS.values(), ids=HOSTILE_ANSWERS.keys())
def test_a_hostile_answer_fails_typed_and_without_hanging(answer: str) -> None:
    started = time.perf_counter()
    with pytest.raises(AnswerParseError) as caught:
        parse_json_object(answer)
    assert time.perf_counter() - started < 5.0  # hang guard: quadratic took seconds
    assert isinstance(caught.value, ValueError)


def test_an_object_after_thousands_of_false_starts_is_still_found() -> None:
    answer = 'say {"hi ' * 5_000 + '{"a": [' + "1, " * 30_000 + '2], "b": {"c": 3}}'
    assert parse_json_object(answer)["b"] == {"c": 3}


def test_deep_nesting_says_so() -> None:
    with pytest.raises(AnswerParseError, match="nests deeper"):
        parse_json_object('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")


# Python reads ints of at most 4,300 digits from text; longer ones must not escape as ValueError.
LONG_INT_ANSWERS = {
    "bare": ('{"a": ' + "1" * 5_000 + "}", 5_000),
    "in prose, negative": ('Sure: {"a": [-' + "9" * 4_301 + "]} and more", 4_301),
    "fenced": ("```json\n" + '{"n": ' + "7" * 6_000 + "}\n```", 6_000),
}


@pytest.mark.parametrize(("answer", "digits"), LONG_INT_ANSWERS.values(), ids=LONG_INT_ANSWERS)
async def test_an_int_longer_than_python_reads_is_refused_typed(answer: str, digits: int) -> None:
    with pytest.raises(AnswerParseError, match=f"integer of {digits:,} digits") as caught:
        parse_json_object(answer)
    assert "ask for it as a string" in str(caught.value)
    with pytest.raises(AnswerParseError, match=f"integer of {digits:,} digits"):
        await aparse_json_object(answer + " " * 70_000)  # long enough to parse in a thread


def test_an_int_of_exactly_the_limit_still_parses() -> None:
    assert parse_json_object('{"a": ' + "1" * 4_300 + "}")["a"] == int("1" * 4_300)


async def test_a_long_answer_parses_off_the_event_loop_to_the_same_result() -> None:
    answer = "Here you go:\n```json\n" + json.dumps({"k": "x" * 200_000}) + "\n```"
    assert await aparse_json_object(answer) == parse_json_object(answer)


async def test_a_model_answering_deep_nesting_fails_the_block_with_a_typed_output_error() -> None:
    model = ScriptedProvider(["[" * 100_000, '{"a":' * 20_000])
    executor = BlockExecutor(providers=ProviderRegistry.single(model), retry_wait=0)
    block = BlockDefinition(
        id="t",
        name="Tag",
        description="Tag a text",
        kind="llm",
        prompt_template="{{ text }}",
        input_keys=["text"],
        output_keys=["tags"],
        max_retries=0,
    )
    with pytest.raises(BlockOutputError, match="nests deeper"):
        await executor.execute(block, {"text": "hi"})
    assert len(model.requests) == 2  # the answer, then the one repair round
