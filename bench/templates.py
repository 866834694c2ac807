"""Prompt templates and model answers: what bounding them costs, and the hostile cases.

    python bench/templates.py            # 20 rounds per case
    python bench/templates.py --smoke    # one round, to check it runs

Part 1 renders ordinary templates with ``render_prompt`` (metered) and with
plain Jinja2's ``ImmutableSandboxedEnvironment`` (unmetered, compiled once),
so the overhead of the limits is visible. Part 2 parses hostile answers of
about 100 KB with ``parse_json_object`` and with the quadratic search it
replaced (kept here, inlined, for the comparison). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from flowcore.blocks import parse_json_object, render_prompt

ITEMS = {"items": [f"item number {i}" for i in range(2_000)], "user": {"name": "Ada"}}
TEMPLATES = {
    "short prompt": "Summarize for {{ user.name }}:\n\n{{ items[0] }}",
    "loop over 2,000 items": (
        "{% for x in items %}{{ loop.index }}. {{ x|upper }} ({{ user.name }})\n{% endfor %}"
    ),
    "filters and macros": (
        "{% macro row(x) %}- {{ x|title|truncate(12) }}{% endmacro %}"
        "{% for x in items[:500] %}{{ row(x) }}\n{% endfor %}{{ items|length }}"
    ),
}
ANSWERS = {
    "100k '{'": "{" * 100_000,
    "unclosed flat object": '{"a": 1, ' * 11_000,
    "prose quoting half objects": 'see {"k": "' * 9_000,
    "5,000 false starts, then the object": 'say {"hi ' * 5_000 + '{"a": 1}',
}


def naive_parse(text: str) -> dict[str, Any]:
    """The search parse_json_object used before: decode from every '{' in turn."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    raise ValueError("no JSON object")


def median_ms(func: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        # The hostile answers are meant to fail; only the time counts.
        with contextlib.suppress(ValueError, RecursionError):
            func()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one round per case")
    rounds = 1 if parser.parse_args().smoke else 20
    plain = ImmutableSandboxedEnvironment(undefined=StrictUndefined)

    print("| template | bounded render ms | plain Jinja2 ms | ratio |")
    print("|---|---:|---:|---:|")
    for name, source in TEMPLATES.items():
        compiled = plain.from_string(source)
        bounded = median_ms(lambda s=source: render_prompt(s, ITEMS), rounds)
        unbounded = median_ms(lambda c=compiled: c.render(ITEMS), rounds)
        print(f"| {name} | {bounded:.2f} | {unbounded:.2f} | {bounded / unbounded:.1f}x |")

    print()
    print("| answer (about 100 KB) | parse_json_object ms | old search ms |")
    print("|---|---:|---:|")
    for name, text in ANSWERS.items():
        new = median_ms(lambda t=text: parse_json_object(t), rounds)
        old = median_ms(lambda t=text: naive_parse(t), max(1, rounds // 10))
        print(f"| {name} ({len(text):,} chars) | {new:.1f} | {old:.1f} |")


if __name__ == "__main__":
    main()
