"""Fuzz spec: prompt templates and model answers render and parse, or are refused typed, in time.

``render_prompt`` / ``arender_prompt`` take templates that users and models
write (runaway loops, huge numbers, includes, recursive macros, broken
syntax) with odd inputs; ``parse_json_object`` takes whatever a model
answered (deep nesting, ``{``-heavy prose, over-long ints, escapes that
decode to lone surrogates). Each returns, or raises a flowcore error
(``TemplateRenderError``, ``AnswerParseError``), within the per-case limit.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from flowcore.blocks import TemplateLimits, arender_prompt, parse_json_object, render_prompt

from .harness import Judge, fuzz_settings
from .strategies import ODD_VALUES, TEXT, WORDS

PIECES = st.one_of(
    st.sampled_from(
        [
            "{{ text }}",
            "{{ x.y }}",
            "{{ text|upper }}",
            "{% for i in range(3) %}{{ i }}{% endfor %}",
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "{{ 7 ** 7 ** 9 }}",
            "{{ 'a' * 10 ** 9 }}",
            "{{ 1 / 0 }}",
            "{% include 'x' %}",
            "{% import 'x' as y %}",
            "{{ text|truncate(-1) }}",
            "{% macro m(n) %}{{ m(n) }}{% endmacro %}{{ m(1) }}",
            "{{ text.__class__.__mro__ }}",
            "{{ range(10) | list | sum }}",
            "{% set s = [] %}{% for i in range(50000) %}{% set _ = s.append(i) %}{% endfor %}",
            "{{",
            "{%",
            "{# open comment",
            "{% if %}",
            "}}",
        ]
    ),
    TEXT,
)
TEMPLATES = st.lists(PIECES, min_size=1, max_size=4).map("".join)
INPUTS = st.dictionaries(st.one_of(WORDS, st.just("text")), ODD_VALUES, max_size=3)


@fuzz_settings(120)
@given(template=TEMPLATES, inputs=INPUTS)
def test_templates_render_or_are_refused_typed_within_the_limit(
    template: str, inputs: dict[str, Any]
) -> None:
    judge = Judge("render_prompt, arender_prompt")
    limits = TemplateLimits(max_seconds=1.0)
    rendered = judge.call(lambda: render_prompt(template, inputs, limits=limits))
    assert rendered is None or isinstance(rendered, str)

    async def off_the_loop() -> str:
        return await arender_prompt(template, inputs, timeout=1.0)

    # A fresh loop per case: the render's worker pool outlives it, which is the point.
    again = judge.call(lambda: asyncio.run(off_the_loop()))
    assert again is None or isinstance(again, str)


ANSWERS = st.one_of(
    st.just('{"a": 1}'),
    st.just("Sure:\n```json\n" + '{"a": [1, 2]}' + "\n```"),
    st.sampled_from([50, 900, 5000]).map(lambda d: '{"a": ' + "[" * d + "]" * d + "}"),
    st.just("{" * 20000),
    # Ints past Python's 4300-digit text limit, bare, in prose and in a fence.
    st.sampled_from([4301, 5000]).map(lambda d: '{"a": ' + "1" * d + "}"),
    st.just('Sure: {"a": [-' + "9" * 6000 + "]} ok"),
    st.just("```json\n" + '{"a": ' + "1" * 5000 + "}\n```"),
    st.just('{"a": "\\ud800"}'),
    st.just("x { y " * 5000),
    TEXT,
    st.lists(st.sampled_from(['{"', "}", "{", '"a":', "1", ",", "```", "\n"]), max_size=40).map(
        "".join
    ),
)


@fuzz_settings(200)
@given(answer=ANSWERS)
def test_model_answers_parse_or_are_refused_typed_within_the_limit(answer: str) -> None:
    judge = Judge("parse_json_object")
    parsed = judge.call(lambda: parse_json_object(answer))
    assert parsed is None or isinstance(parsed, dict)
