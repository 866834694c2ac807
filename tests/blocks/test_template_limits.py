"""Spec: a prompt template cannot freeze the process, fill memory or fail untyped.

Each payload runs THROUGH THE BLOCK EXECUTOR as an LLM block's template: it
must end in a ``BlockInputError`` (refused, with the template line and cause)
or, only for the payload no single limit catches, a ``BlockTimeoutError``
(stopped at a small ``timeout_seconds``), within the timeout plus a margin,
while a ticker task on the event loop keeps ticking, and with no render left
running afterwards. The table of results is printed
at the end of the run (``python -m pytest -q tests/blocks/test_template_limits.py``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from flowcore.blocks import (
    BlockDefinition,
    BlockExecutor,
    TemplateLimits,
    TemplateRenderError,
    check_template,
    render_prompt,
    templates,
)
from flowcore.blocks.templates import MAX_CONCURRENT_RENDERS, active_renders
from flowcore.errors import BlockInputError, BlockTimeoutError
from flowcore.llm import ProviderRegistry, ScriptedProvider

from .template_figures import TEMPLATE_FIGURES, PayloadResult

TIMEOUT = 1.0
# The timeout of blocks whose payload a limit must refuse: long, so that the limit
# decides how they end even on a busy machine (on an idle one the cycler payload
# already needs 0.7 s to reach max_iterations), while a hang still fails.
REFUSE_TIMEOUT = 30.0
# The limit a render falls back on when its own timeout or max_seconds is not
# applied: a payload that ends before it was stopped by its own limit. Not a speed
# target: the two outcomes are a timeout's worth apart and a busy machine cannot
# move one into the other.
FALLBACK = TemplateLimits().max_seconds

KB = "x" * 1000

# name -> (template, what the error must mention)
PAYLOADS: dict[str, tuple[str, str]] = {
    # The measured defects of issue 16
    "nested range(100000) loops": (
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        "max_iterations",
    ),
    "7 ** 7 ** 9": ("{{ (7**(7**9)) % 10 }}", "max_int_bits"),
    "'a' * 10**9": ("{{ 'a' * 10**9 }}", "max_output_chars"),
    "include": ("Context:\n{% include 'secrets.txt' %}", "{% include %} is not available"),
    "import": ("{% import 'macros.txt' as m %}{{ m.x() }}", "{% import %} is not available"),
    "from import": ("{% from 'macros.txt' import x %}", "{% from ... import %} is not available"),
    "extends": ("{% extends 'base.txt' %}", "{% extends %} is not available"),
    "1/0": ("ok\n{{ 1/0 }}", "ZeroDivisionError"),
    "truncate(-1)": ("{{ 'abcdef'|truncate(-1) }}", "AssertionError"),
    "recursive macro": ("{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}", "max_depth"),
    # Loops and ranges
    "range(10**9)": ("{{ range(10**9)|list|length }}", "max_iterations"),
    "wide stepped range": ("{{ range(-10**9, 10**9, 10**4)|sum }}", "max_iterations"),
    "loop over a joined range": (
        "{% for c in range(99999)|join %}{{ c }}{% endfor %}",
        "max_iterations",
    ),
    "recursive loop": (
        "{% for x in range(3) recursive %}{{ loop(range(1000)) }}{% endfor %}",
        "max_depth",
    ),
    "cycler in nested loops": (
        "{% set c = cycler(*range(1000)) %}{% for i in range(1000) %}"
        "{% for j in range(1000) %}{{ c.next() }}{% endfor %}{% endfor %}",
        "max_iterations",
    ),
    "joiner with a huge separator": (
        "{% set j = joiner('-' * 999999) %}{% for i in range(1000) %}{{ j() }}{% endfor %}",
        "characters",
    ),
    # Growth through {% set %} and namespace
    "namespace doubling with ~": (
        "{% set ns = namespace(s='ab') %}"
        "{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
        "max_output_chars",
    ),
    "namespace doubling with +": (
        "{% set ns = namespace(s=['ab']) %}"
        "{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}",
        "max_output_chars",
    ),
    "namespace int squaring": (
        "{% set ns = namespace(x=3) %}"
        "{% for i in range(64) %}{% set ns.x = ns.x * ns.x %}{% endfor %}{{ ns.x }}",
        "max_int_bits",
    ),
    "set block of loop text": (
        "{% set x %}{% for i in range(99999) %}" + KB + "{% endfor %}{% endset %}{{ x|length }}",
        "max_total_chars",
    ),
    "macro output in a loop": (
        "{% macro m() %}{{ 'z' * 999999 }}{% endmacro %}"
        "{% set ns = namespace(n=0) %}{% for i in range(99999) %}"
        "{% set ns.n = ns.n + (m()|length) %}{% endfor %}{{ ns.n }}",
        "max_total_chars",
    ),
    "list of big strings": (
        "{% set ns = namespace(l=[]) %}{% for i in range(5000) %}"
        "{% set ns.l = ns.l + ['y' * 99999 ~ i] %}{% endfor %}{{ ns.l|length }}",
        "max_total_chars",
    ),
    "list grown one item per iteration": (
        "{% set ns = namespace(l=[]) %}{% for i in range(99999) %}"
        "{% set ns.l = ns.l + [i] %}{% endfor %}{{ ns.l|length }}",
        "max_total_chars",
    ),
    "a new big string per iteration": (
        "{% for i in range(5000) %}{% set s = 'y' * 99999 ~ i %}{% endfor %}",
        "max_total_chars",
    ),
    "a million references to one string": (
        "{% set big = 'y' * 999999 %}{% set l = [big] * 999999 %}{{ l|length }} {{ l }}",
        "an output expression",
    ),
    # Filters with huge widths or counts
    "center(10**9)": ("{{ 'a'|center(1000000000) }}", "center()"),
    "indent(10**5) of many lines": ("{{ ('a\\n' * 100000)|indent(100000) }}", "indent()"),
    "wordwrap with a long wrapstring": (
        "{{ ('a ' * 400000)|wordwrap(1, wrapstring='-' * 1000) }}",
        "wordwrap()",
    ),
    "wordwrap(1) of one long word": ("{{ ('a' * 400000)|wordwrap(1) }}", "quadratic"),
    "format with a huge width": ("{{ '%0999999999d'|format(1) }}", "format width"),
    "% with a * width": ("{{ '%*d' % (999999999, 1) }}", "format width"),
    "str.format with a huge width": ("{{ '{:>999999999}'.format(1) }}", "format width"),
    "str.format nested width": ("{{ '{:{}}'.format(1, 999999999) }}", "format width"),
    "str.format repeated field": ("{{ ('{0}' * 100000).format('q' * 99999) }}", "formatted"),
    "join with a huge separator": (
        "{{ range(1000)|join('y' * 100000) }}",
        "join()",
    ),
    "str.join of many copies": ("{{ ('y' * 100000).join(['x'] * 100000) }}", "str.join()"),
    "replace('') with a long string": (
        "{{ ('a' * 100000)|replace('', 'b' * 1000) }}",
        "replace()",
    ),
    "str.ljust(10**9)": ("{{ 'a'.ljust(10**9) }}", "str.ljust()"),
    "str.expandtabs": ("{{ ('\\t' * 100000).expandtabs(100000) }}", "expandtabs()"),
    "int.to_bytes(10**9)": ("{{ (1).to_bytes(10**9, 'big') }}", "to_bytes()"),
    "batch(10**9) padding": ("{{ [1]|batch(10**9, 0)|list }}", "batch() into"),
    "slice(10**9)": ("{{ [1]|slice(10**9)|list|length }}", "slice() into"),
    "lipsum(10**6)": ("{{ lipsum(10**6) }}", "lipsum()"),
    "tojson with a huge indent": ("{{ range(100)|list|tojson(indent=100000) }}", "indent"),
    "sum of lists": ("{{ [[1] * 1000] * 1000|sum(start=[]) }}", "adds numbers only"),
    # The sandbox itself
    "__class__ walk": ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "sandbox forbids"),
    "mro on a string": ("{{ ''.mro() }}", "no attribute 'mro'"),
    "format attribute walk": ("{{ '{0.__class__.__base__}'.format('') }}", "sandbox forbids"),
    "mutating an input": ("{{ items.append(1) }}", "sandbox forbids"),
    "undefined input": ("Hello\n{{ api_key }}", "'api_key' is undefined"),
    # Costs no single limit catches: the block's timeout stops it.
    "slow loop body": (
        "{% set big = 'ab ' * 30000 %}{% for i in range(99999) %}{{ big|wordcount }}{% endfor %}",
        "",
    ),
}


def llm_block(
    template: str, *, kind: str = "llm", timeout: float = REFUSE_TIMEOUT
) -> BlockDefinition:
    block = BlockDefinition(
        id="payload",
        name="Payload",
        description="Render an adversarial template",
        kind=kind,  # type: ignore[arg-type]
        input_keys=["items"],
        output_keys=["answer"],
        prompt_template="{{ items }}",
        timeout_seconds=timeout,
        max_retries=0,
    )
    # Set without validation: BlockDefinition refuses some payloads itself
    # (include, import, extends), but a block stored before that check, or
    # built without validation, still reaches the executor, which must refuse
    # them on its own.
    return block.model_copy(update={"prompt_template": template})


def test_a_block_definition_refuses_a_template_that_loads_another_one() -> None:
    with pytest.raises(ValueError, match=r"line 2: \{% include %\} is not available"):
        BlockDefinition(
            id="payload",
            name="Payload",
            description="d",
            kind="llm",
            output_keys=["answer"],
            prompt_template="Context:\n{% include 'secrets.txt' %}",
        )


def executor(limits: TemplateLimits | None = None) -> BlockExecutor:
    model = ScriptedProvider(['{"answer": "never asked"}'] * 50)
    return BlockExecutor(
        providers=ProviderRegistry.single(model), retry_wait=0, template_limits=limits
    )


class Ticker:
    """A task that ticks every 10 ms and records the longest gap between ticks."""

    def __init__(self) -> None:
        self.longest_gap = 0.0
        self.ticks = 0
        self.most_active_renders = 0

    async def run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            self.longest_gap = max(self.longest_gap, now - last)
            self.most_active_renders = max(self.most_active_renders, active_renders())
            self.ticks += 1
            last = now


@pytest.fixture
async def ticker() -> AsyncIterator[Ticker]:
    ticking = Ticker()
    task = asyncio.create_task(ticking.run())
    await asyncio.sleep(0)
    yield ticking
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.fixture
def render_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The threads renders ran in: each render records its thread as it starts."""
    seen: list[int] = []
    inner = templates._render

    def spying(*args: Any) -> Any:
        seen.append(threading.get_ident())
        return inner(*args)

    monkeypatch.setattr(templates, "_render", spying)
    return seen


def assert_off_the_loop(render_threads: list[int]) -> None:
    # A render on the event loop would hold it from start to end.
    assert render_threads
    assert threading.get_ident() not in render_threads


@pytest.fixture
def record(request: pytest.FixtureRequest) -> Callable[[PayloadResult], None]:
    results = request.config.stash.setdefault(TEMPLATE_FIGURES, [])
    return results.append


async def test_a_template_renders_off_the_event_loop_and_still_reaches_the_model(
    ticker: Ticker,
) -> None:
    model = ScriptedProvider(['{"answer": "ok"}'])
    runner = BlockExecutor(providers=ProviderRegistry.single(model), retry_wait=0)
    template = "{% for x in items %}{{ loop.index }}. {{ x|upper }}\n{% endfor %}"

    outcome = await runner.execute(llm_block(template), {"items": ["a", "b"]})

    assert outcome.outputs == {"answer": "ok"}
    assert model.requests[0].messages[0].content == "1. A\n2. B\n"


@pytest.mark.parametrize("name", PAYLOADS)
async def test_a_payload_is_refused_or_stopped_within_the_timeout(
    name: str, ticker: Ticker, record: Callable[[PayloadResult], None], render_threads: list[int]
) -> None:
    template, mentioned = PAYLOADS[name]
    timeout = TIMEOUT if mentioned == "" else REFUSE_TIMEOUT
    started = time.perf_counter()

    with pytest.raises((BlockInputError, BlockTimeoutError)) as caught:
        await executor().execute(llm_block(template, timeout=timeout), {"items": ["a"]})

    elapsed = time.perf_counter() - started
    await asyncio.sleep(0.05)  # let the ticker see a gap that spanned the call
    record(PayloadResult(name, type(caught.value).__name__, elapsed, ticker.longest_gap, timeout))
    assert elapsed < FALLBACK
    assert_off_the_loop(render_threads)
    assert active_renders() == 0  # stopped, not abandoned
    if isinstance(caught.value, BlockInputError):
        assert "block 'payload'" in str(caught.value)
        assert "prompt_template" in str(caught.value)
        assert mentioned in str(caught.value)
    else:
        assert mentioned == ""  # only the payload meant to run out of time may time out


@pytest.mark.parametrize(
    ("template", "line"),
    [
        ("first\nsecond\n{{ 1/0 }}", 3),
        ("a\n{% for i in range(3) %}\n{{ i }}\n{{ i.nope }}\n{% endfor %}", 4),
        ("{% macro m(n) %}\n{{ n|truncate(-1) }}\n{% endmacro %}\n\n{{ m('abcd') }}", 2),
        ("\n\n\n{% include 'x' %}", 4),
        ("\n{{ 'a' * 10**9 }}", 2),
    ],
)
async def test_the_error_names_the_block_and_the_template_line(template: str, line: int) -> None:
    with pytest.raises(
        BlockInputError, match=rf"(?s)block 'payload'.*prompt_template line {line}:"
    ) as caught:
        await executor().execute(llm_block(template), {"items": []})
    # The fix is in the template (or a limit), not in the node's wiring.
    assert str(caught.value).endswith(caught.value.hint)
    assert caught.value.hint.startswith(f"Fix the block's prompt_template (line {line})")


async def test_a_human_blocks_question_is_bounded_the_same_way(
    render_threads: list[int],
) -> None:
    template = "Approve?\n{{ 'a' * 10**9 }}"
    with pytest.raises(BlockInputError, match="line 2: the repeated sequence"):
        await executor().execute(llm_block(template, kind="human"), {"items": []})
    assert_off_the_loop(render_threads)


async def test_the_step_budget_stops_a_template_with_no_single_big_operation() -> None:
    limits = TemplateLimits(max_steps=2_000)
    template = "{% for i in range(5000) %}{{ i }}{% endfor %}"
    with pytest.raises(BlockInputError, match="max_steps"):
        await executor(limits).execute(llm_block(template), {"items": []})


async def test_limits_are_explicit_and_a_tight_output_cap_applies() -> None:
    limits = TemplateLimits(max_output_chars=100)
    with pytest.raises(BlockInputError, match="max_output_chars=100") as caught:
        await executor(limits).execute(llm_block("{{ 'x' * 500 }}"), {"items": []})
    assert "raise TemplateLimits.max_output_chars" in caught.value.hint
    outcome = await executor(limits).execute(llm_block("{{ 'x' * 50 }}"), {"items": []})
    assert outcome.outputs == {"answer": "never asked"}


async def test_many_runaway_renders_at_once_are_all_stopped_and_never_exceed_the_pool(
    ticker: Ticker,
) -> None:
    slow, _ = PAYLOADS["slow loop body"]
    started = time.perf_counter()

    results = await asyncio.gather(
        *(
            executor().execute(llm_block(slow, timeout=TIMEOUT), {"items": []})
            for _ in range(3 * MAX_CONCURRENT_RENDERS)
        ),
        return_exceptions=True,
    )

    assert all(isinstance(r, BlockTimeoutError) for r in results), results
    # Below the 10 s max_seconds that would stop renders whose block timeout did not.
    assert time.perf_counter() - started < FALLBACK
    # The loop ticked while renders were running, so they ran off it (a render on the
    # loop holds it from start to end). No bound on the longest gap here: with
    # MAX_CONCURRENT_RENDERS threads spinning for the GIL, a busy machine stretched it
    # to 0.7 s.
    assert 0 < ticker.most_active_renders <= MAX_CONCURRENT_RENDERS
    assert active_renders() == 0


# ------------------------------------------------------ without an executor
@pytest.mark.parametrize(
    ("template", "cause"),
    [
        ("a\n{% for %}", "line 2: syntax error"),
        ("{{ " + "[" * 3000 + "]" * 3000 + " }}", "nests too deeply"),
        ("x" * 100_001, "max_template_chars"),
        ("{{ a }}" * 2_001, "max_template_nodes"),
    ],
    ids=["syntax error", "deeply nested literal", "template too large", "too many tags"],
)
def test_render_prompt_raises_a_typed_error_for_what_a_block_definition_would_refuse(
    template: str, cause: str
) -> None:
    with pytest.raises(TemplateRenderError, match=cause) as caught:
        render_prompt(template, {})
    assert isinstance(caught.value, ValueError)  # existing ``except ValueError`` keeps working


@pytest.mark.parametrize(
    ("template", "cause"),
    [
        ("{{ " + "[" * 3000 + "]" * 3000 + " }}", "nests too deeply"),
        ("a\n\n{% include 'x' %}", "line 3: {% include %} is not available"),
        ("{{ a }}" * 2_001, "max_template_nodes"),
    ],
    ids=["deeply nested literal", "include", "too many tags"],
)
def test_check_template_refuses_at_definition_time_what_rendering_would(
    template: str, cause: str
) -> None:
    with pytest.raises(TemplateRenderError, match=cause):
        check_template(template)
    with pytest.raises(TemplateRenderError, match=cause):
        render_prompt(template, {"a": 1})


def test_an_error_quoting_a_huge_value_stays_short() -> None:
    with pytest.raises(TemplateRenderError) as caught:
        render_prompt("{{ {}[key] }}", {"key": "k" * 1_000_000})
    assert len(str(caught.value)) < 1_000


def test_check_template_accepts_an_ordinary_template() -> None:
    assert check_template(ORDINARY[0]) is None


def test_render_prompt_keeps_its_time_limit_without_a_timeout() -> None:
    slow, _ = PAYLOADS["slow loop body"]
    started = time.perf_counter()
    with pytest.raises(TemplateRenderError, match="time limit"):
        render_prompt(slow, {}, limits=TemplateLimits(max_seconds=0.5))
    assert time.perf_counter() - started < FALLBACK


ORDINARY = [
    "{{ 2 ** 64 }} {{ 3 * 'ab' }} {{ [1] + [2] }} {{ 7 // 2 }} {{ n % 3 }} {{ n / 2 }}",
    "{{ range(3)|list }} {{ range(10)|length }} {{ 4 in range(5) }} {{ range(3)|reverse|join }}",
    "{% for k, v in d|dictsort %}{{ k }}={{ v }}{{ ',' if not loop.last }}{% endfor %}",
    "{% for x in items %}{{ loop.index }}/{{ loop.length }} {{ loop.cycle('o', 'e') }}{% endfor %}",
    "{% for x in items if x != 'b' %}{{ x }}{% else %}none{% endfor %}",
    "{% for n in tree recursive %}{{ n.name }}[{{ loop(n.children) }}]{% endfor %}",
    "{{ '{:>4}|{}'.format(1, 'x') }} {{ 'a-b'.split('-')|join('+') }} {{ ', '.join(items) }}",
    "{{ '%5.1f'|format(2.25) }} {{ '%(a)s'|format(a=1) }} {{ '%s-%s' % (1, 2) }}",
    "{% set ns = namespace(s='') %}{% for i in range(3) %}{% set ns.s = ns.s ~ i %}{% endfor %}"
    "{{ ns.s }}",
    "{% macro m(a, b=2) %}{{ a }}-{{ b }}-{{ caller() }}{% endmacro %}"
    "{% call m(1) %}inside{% endcall %}",
    "{% filter upper %}abc {{ text }}{% endfilter %} {% set x %}{{ text }}!{% endset %}{{ x }}",
    "{{ text|center(30) }}|{{ text|indent(2, first=True) }}|{{ text|wordwrap(5) }}",
    "{{ items|batch(2)|list }} {{ items|slice(2)|list }} {{ [1, 2]|sum }} {{ d|tojson(indent=2) }}",
    "{{ text|replace('l', 'L') }} {{ 'x'.ljust(5) }}| {{ text|truncate(8) }} {{ items|length }}",
    "{% autoescape true %}{{ text }} {{ text ~ '<i>' }}{% endautoescape %}",
]


@pytest.mark.parametrize("template", ORDINARY)
def test_ordinary_templates_render_as_plain_jinja_would(template: str) -> None:
    inputs = {
        "d": {"b": 2, "a": 1},
        "items": ["a", "b", "c"],
        "n": 7,
        "text": "Hello <b>world</b>",
        "tree": [{"name": "r", "children": [{"name": "c", "children": []}]}],
    }
    plain = ImmutableSandboxedEnvironment(undefined=StrictUndefined)
    assert render_prompt(template, inputs) == plain.from_string(template).render(inputs)


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_steps must be a positive number"):
        TemplateLimits(max_steps=0)
