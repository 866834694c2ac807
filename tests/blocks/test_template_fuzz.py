"""Spec: whatever template and inputs render_prompt gets, it returns text or a TemplateRenderError.

Templates are stitched from fragments of Jinja2 (tags, expressions, filters
with odd arguments, operators on odd operands, broken syntax) and rendered
with inputs that include deep nesting, huge numbers and odd strings. No
other exception may escape, and no case may run past a generous limit.
"""

from __future__ import annotations

import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowcore.blocks import TemplateLimits, TemplateRenderError, render_prompt

# Seconds: a hang guard, not a speed target; a case stops at max_seconds=1.0 plus one
# operation, which a busy machine stretches.
CASE_LIMIT = 10.0
LIMITS = TemplateLimits(max_seconds=1.0)

OPERANDS = [
    "x", "n", "s", "items", "deep", "0", "-1", "1", "10**9", "2**4096", "1.5", "'ab'",
    "'%s'", "'{}'", "[1, 2]", "[]", "{}", "none", "true", "range(5)", "big", "lipsum",
    "cycler(1, 2)", "joiner()", "namespace(a=1)", "loop", "caller", "self",
]  # fmt: skip
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "in", "and", "or", "|length >"]
FILTERS = [
    "upper", "length", "list", "first", "last", "sort", "unique", "reverse", "join",
    "join('-' * n)", "center(n)", "center(-5)", "indent(n)", "indent('>')", "wordwrap(n)",
    "wordwrap(0)", "truncate(n)", "truncate(-1)", "format(n)", "format(s, s)", "replace('', s)",
    "replace('a', 'b', -2)", "batch(n)", "batch(0)", "slice(n)", "slice(0)", "tojson",
    "tojson(indent=n)", "sum", "sum(start=[])", "int", "float", "round(n)", "string",
    "pprint", "e", "striptags", "urlize", "title", "wordcount", "dictsort", "items",
    "map('upper')", "select", "reject('none')", "attr('__class__')", "attr('upper')",
    "default(1)", "random", "filesizeformat", "xmlattr", "groupby('a')", "min", "max",
    "abs", "capitalize", "trim", "urlencode", "list|map('string')|join",
]  # fmt: skip
METHODS = [
    ".upper()", ".split()", ".ljust(n)", ".zfill(n)", ".center(n, '*')", ".expandtabs(n)",
    ".join(items)", ".replace('', s)", ".format(x, n)", ".format_map({})", ".count('a')",
    ".to_bytes(n, 'big')", ".bit_length()", ".items()", ".keys()", ".append(1)", ".mro()",
    ".__class__", "[0]", "[1:]", "[::-1]", ".a", "['a']", "(1)", "()",
]  # fmt: skip
STATEMENTS = [
    "{% for i in E %}{{ i }}{% endfor %}",
    "{% for i in E recursive %}{{ loop(E) }}{% endfor %}",
    "{% for i in E %}{% for j in E %}.{% endfor %}{% endfor %}",
    "{% if E %}yes{% else %}no{% endif %}",
    "{% set v = E %}{{ v }}",
    "{% set ns = namespace(v=E) %}{% for i in range(9) %}{% set ns.v = ns.v ~ ns.v %}{% endfor %}",
    "{% macro m(a) %}{{ m(a) if a else E }}{% endmacro %}{{ m(E) }}",
    "{% call(u) m2(E) %}{{ u }}{% endcall %}",
    "{% filter upper %}{{ E }}{% endfilter %}",
    "{% with w = E %}{{ w }}{% endwith %}",
    "{% include E %}",
    "{% import 'x' as y %}",
    "{% extends E %}",
    "{% raw %}{{ E }}{% endraw %}",
    "{{ E",
    "{% for %}",
    "{{ E }}",
    "{{ E }}",
    "{{ E }}",
    "{{ E }}",
    "{{ E }}",
    "{{ E }}",
]

expression = st.recursive(
    st.sampled_from(OPERANDS),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(OPERATORS), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        st.tuples(inner, st.sampled_from(FILTERS)).map(lambda t: f"({t[0]}|{t[1]})"),
        st.tuples(inner, st.sampled_from(METHODS)).map(lambda t: f"{t[0]}{t[1]}"),
        st.tuples(st.sampled_from(["range", "dict", "lipsum", "cycler"]), inner).map(
            lambda t: f"{t[0]}({t[1]})"
        ),
    ),
    max_leaves=6,
)


@st.composite
def templates(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        statement = draw(st.sampled_from(STATEMENTS))
        while "E" in statement:
            statement = statement.replace("E", draw(expression), 1)
        parts.append(statement)
        parts.append(draw(st.sampled_from(["", "\n", " text ", "}}", "\u00e9"])))
    return "".join(parts)


def deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


INPUTS = st.fixed_dictionaries(
    {
        "x": st.one_of(st.text(max_size=20), st.integers(), st.none(), st.floats()),
        "n": st.sampled_from([0, -1, 3, 17, 999_999, 10**9, 2**70]),
        "s": st.sampled_from(["", "a", "%d", "{0.__class__}", "\ud800", "a" * 5000]),
        "items": st.lists(st.text(max_size=5), max_size=5),
        "deep": st.sampled_from([deep(3), deep(2_000)]),
        "big": st.sampled_from(["x" * 900_000, list(range(1_000)), {"a": 1}]),
    }
)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(template=templates(), inputs=INPUTS)
def test_render_prompt_returns_text_or_a_template_render_error(
    template: str, inputs: dict[str, Any]
) -> None:
    started = time.perf_counter()
    outcome: str | TemplateRenderError
    try:
        outcome = render_prompt(template, inputs, limits=LIMITS)
    except TemplateRenderError as exc:
        outcome = exc
    assert time.perf_counter() - started < CASE_LIMIT, template
    if isinstance(outcome, TemplateRenderError):
        assert str(outcome).startswith("prompt_template")
    else:
        assert len(outcome) <= LIMITS.max_output_chars
