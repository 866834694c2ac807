"""Spec: prompts render in a sandbox that sees only the block's inputs; answers parse robustly."""

from __future__ import annotations

import jinja2
import pytest

from flowcore.blocks import BlockDefinition, parse_json_object, render_prompt
from flowcore.blocks.prompting import repair_prompt, system_prompt

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
