"""Evaluate the Thinker: intents in, pipelines out, and the properties each must have.

30 cases over 23 different intents. Each case gives an intent, the library
blocks the result must reuse (found by search under another id than the one
Decompose suggests), the blocks it must create, and optionally faults: first
answers of the scripted model that are wrong the way real models are (a
malformed decomposition, Python that fails its sandboxed test or the sandbox
policy, seed 003's ``{{n1.x}}`` references, a block whose code is always
refused). Every case runs in a fresh registry (builtins plus a small
library) and is checked for:

* status: ``complete`` (or ``failed`` where creation must fail);
* reuse and creation: exactly the expected blocks, created ones saved with
  ``created_by: thinker``, a block that failed its test not saved;
* repairs: each injected fault shows a refused answer then an accepted one
  in the same stage (the model only corrects itself when told the problems);
* valid: the pipeline passes flowcore's validator again, independently;
* runs: it runs to completion on sample inputs, and where the case says so
  its result has the expected value (so created code really computes).

Scripted (default, CI): ``python bench/thinker_eval.py``. Against a real
model: ``python bench/thinker_eval.py --live`` with ``OPENAI_API_KEY`` (and
optionally ``OPENAI_BASE_URL``) or ``FLOWCORE_BASE_URL`` for any
OpenAI-compatible server; ``FLOWCORE_MODEL`` picks the model. Live runs
report reuse and creation without requiring the exact scripted sets and
inject no faults. Exit code 1 when a required property fails.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore
from flowcore.llm import ProviderRegistry
from flowcore.llm.protocol import LLMProvider
from flowcore.pipeline import Pipeline, PipelineRunner, validate_definition
from flowcore.sandbox import PythonSandbox
from flowcore.thinker import CreateResult, Faults, Thinker, ThinkerModel

# Library blocks under ids Decompose never suggests: reuse can only come from search.
LIBRARY = [
    {
        "id": "word_counter",
        "name": "Word counter",
        "description": "Count how many words a text contains.",
        "kind": "python",
        "input_schema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "output_schema": {
            "type": "object",
            "properties": {"word_count": {"type": "integer"}},
            "required": ["word_count"],
        },
        "source_code": "async def execute(inputs, context):\n"
        "    return {'word_count': len(inputs['text'].split())}\n",
        "tags": ["text", "count"],
        "use_when": "The length of a text in words is needed.",
    },
    {
        "id": "mail_address_finder",
        "name": "Mail address finder",
        "description": "Find every email address in a text.",
        "kind": "python",
        "input_schema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "output_schema": {
            "type": "object",
            "properties": {"emails": {"type": "array"}},
            "required": ["emails"],
        },
        "source_code": "import re\n\nasync def execute(inputs, context):\n"
        "    return {'emails': re.findall(r'[\\w.+-]+@[\\w-]+\\.[\\w.]+', inputs['text'])}\n",
        "tags": ["email", "contact"],
    },
    {
        "id": "mean_of_numbers",
        "name": "Mean",
        "description": "Compute the arithmetic mean (average) of a list of numbers.",
        "kind": "python",
        "input_schema": {
            "type": "object",
            "properties": {"numbers": {"type": "array"}},
            "required": ["numbers"],
        },
        "output_schema": {
            "type": "object",
            "properties": {"mean": {"type": "number"}},
            "required": ["mean"],
        },
        "source_code": "async def execute(inputs, context):\n"
        "    values = [float(v) for v in inputs['numbers']]\n"
        "    return {'mean': sum(values) / len(values) if values else 0.0}\n",
        "tags": ["numbers", "statistics"],
    },
    {
        "id": "french_translator",
        "name": "French translator",
        "description": "Translate a text into French.",
        "kind": "llm",
        "input_schema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "output_schema": {
            "type": "object",
            "properties": {"translation": {"type": "string"}},
            "required": ["translation"],
        },
        "prompt_template": "Translate into French:\n\n{{ text }}",
        "tags": ["language", "translation"],
    },
]


@dataclass(frozen=True)
class Case:
    """One intent and the properties its result must have."""

    intent: str
    reuse: frozenset[str] = frozenset()
    create: frozenset[str] = frozenset()
    inputs: dict[str, Any] = field(default_factory=lambda: {"text": "Ada wrote 3 notes."})
    expect: dict[str, Any] = field(default_factory=dict)  # "node.field" -> value
    faults: Faults | None = None
    status: str = "complete"
    repeat: bool = False  # run twice in one registry: the second run reuses what the first made


def _c(intent: str, reuse: Sequence[str] = (), create: Sequence[str] = (), **kw: Any) -> Case:
    return Case(intent, frozenset(reuse), frozenset(create), **kw)


CASES: list[Case] = [
    _c("Count the words of a text", reuse=["word_counter"], expect={"n1.word_count": 4}),
    _c("Summarize a text", reuse=["summarize"]),
    _c(
        "Summarize a text, then count the words of the summary", reuse=["summarize", "word_counter"]
    ),
    _c(
        "Extract the numbers from a text, then compute the average",
        reuse=["mean_of_numbers"],
        create=["extract_numbers"],
        inputs={"text": "scores 4, 8 and 9"},
        expect={"n2.mean": 7.0},
    ),
    _c(
        "Extract the numbers from a text and find the largest",
        create=["extract_numbers", "largest_number"],
        inputs={"text": "3 then 11 then 5"},
        expect={"n2.largest": 11.0},
    ),
    _c(
        "Extract the numbers from a text, sort them",
        create=["extract_numbers", "sort_numbers"],
        inputs={"text": "9, 2, 5"},
        expect={"n2.sorted_numbers": [2.0, 5.0, 9.0]},
    ),
    _c(
        "Find the email addresses in a text",
        reuse=["mail_address_finder"],
        inputs={"text": "mail ada@example.org or bob@example.com"},
        expect={"n1.emails": ["ada@example.org", "bob@example.com"]},
    ),
    _c(
        "List the keywords of an article",
        create=["extract_keywords"],
        inputs={"text": "rivers feed lakes; rivers flood"},
        expect={"n1.keywords": ["rivers", "feed", "lakes", "flood"]},
    ),
    _c(
        "Turn a blog title into a URL slug",
        create=["slugify_text"],
        inputs={"text": "Hello, Big World"},
        expect={"n1.slug": "hello-big-world"},
    ),
    _c(
        "Convert a text to uppercase",
        create=["uppercase_text"],
        inputs={"text": "quiet"},
        expect={"n1.upper_text": "QUIET"},
    ),
    _c(
        "Reverse a text",
        create=["reverse_text"],
        inputs={"text": "abc"},
        expect={"n1.reversed_text": "cba"},
    ),
    _c(
        "Count the lines of a poem",
        create=["count_lines"],
        inputs={"text": "a\nb\n\nc"},
        expect={"n1.line_count": 3},
    ),
    _c(
        "Find the date mentions in a contract",
        create=["extract_dates"],
        inputs={"text": "from 2024-01-05 until 2024-03-01"},
        expect={"n1.dates": ["2024-01-05", "2024-03-01"]},
    ),
    _c("Detect the sentiment of a customer review", create=["detect_sentiment"]),
    _c("Translate a greeting to French", reuse=["french_translator"]),
    _c("Write a headline for a news article", create=["write_headline"]),
    _c("Summarize a report and translate the summary", reuse=["summarize", "french_translator"]),
    _c("Do something useful with my notes", create=["answer_request"]),
    _c(
        "Write a headline for an article, then turn it into a URL slug",
        create=["write_headline", "slugify_text"],
    ),
    _c(
        "Detect the tone of a review and translate it",
        reuse=["french_translator"],
        create=["detect_sentiment"],
    ),
    _c(
        "Count the words of a text and convert it to uppercase",
        reuse=["word_counter"],
        create=["uppercase_text"],
        inputs={"text": "two words"},
        expect={"n1.word_count": 2, "n2.upper_text": "TWO WORDS"},
    ),
    _c(
        "Summarize a meeting transcript, then list its keywords",
        reuse=["summarize"],
        create=["extract_keywords"],
    ),
    _c(
        "Reverse a word and make it uppercase",
        create=["reverse_text", "uppercase_text"],
        inputs={"text": "abc"},
        expect={"n2.upper_text": "CBA"},
    ),
    # Faults: the scripted model answers wrongly first; only a working repair round fixes it.
    _c(
        "Extract the numbers from a text, then compute the average",
        reuse=["mean_of_numbers"],
        create=["extract_numbers"],
        faults=Faults(decompose=1),
        inputs={"text": "2 and 4"},
        expect={"n2.mean": 3.0},
    ),
    _c("List the keywords of an article", create=["extract_keywords"], faults=Faults(create_bug=1)),
    _c(
        "Convert a text to uppercase",
        create=["uppercase_text"],
        faults=Faults(create_policy=1),
        inputs={"text": "ok"},
        expect={"n1.upper_text": "OK"},
    ),
    _c(
        "Summarize a text, then count the words of the summary",
        reuse=["summarize", "word_counter"],
        faults=Faults(wire=1),
    ),
    _c(
        "Extract the numbers from a text, sort them",
        create=["extract_numbers", "sort_numbers"],
        faults=Faults(decompose=1, create_bug=1, create_policy=1, wire=1),
        inputs={"text": "3 1 2"},
        expect={"n2.sorted_numbers": [1.0, 2.0, 3.0]},
    ),
    _c("Reverse a text", faults=Faults(never_create=("reverse_text",)), status="failed"),
    _c(
        "Turn a blog title into a URL slug",
        create=["slugify_text"],
        repeat=True,
        inputs={"text": "Twice Over"},
        expect={"n1.slug": "twice-over"},
    ),
]


@dataclass
class Row:
    """What one case produced and which properties held."""

    intent: str
    status: str = "-"
    reused: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    repairs: str = "-"
    valid: str = "-"
    runs: str = "-"
    output: str = "-"
    tokens: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _refused_then_accepted(result: CreateResult, stage: str) -> bool:
    marks = [e["ok"] for e in result.events if e["type"] == "validation" and e["stage"] == stage]
    return False in marks and marks[-1] is True


def _repairs(result: CreateResult) -> str:
    counts = {}
    for stage in ("decompose", "create", "wire"):
        counts[stage] = sum(
            1
            for e in result.events
            if e["type"] == "validation" and e["stage"] == stage and not e["ok"]
        )
    return "/".join(str(counts[s]) for s in ("decompose", "create", "wire"))


def _value(state: dict[str, Any], path: str) -> Any:
    node, _, key = path.partition(".")
    return ((state.get("results") or {}).get(node) or {}).get(key)


async def _open_library(store: SqliteBlockStore) -> None:
    for data in LIBRARY:
        await store.save(BlockDefinition.from_data(data))


async def run_case(case: Case, provider: LLMProvider | None, live: bool) -> Row:
    """Run one case in a fresh registry and check its properties."""
    row = Row(case.intent)
    started = time.perf_counter()
    async with SqliteBlockStore(":memory:") as store:
        await _open_library(store)
        model = provider or ThinkerModel(faults=case.faults)
        executor = BlockExecutor(
            providers=ProviderRegistry.single(model), sandbox=PythonSandbox(), retry_wait=0.0
        )
        thinker = Thinker(store, executor)
        result = await thinker.create(case.intent)
        if case.repeat:
            first = result
            result = await thinker.create(case.intent)
            if sorted(first.created) != sorted(case.create):
                row.problems.append(f"first run created {list(first.created)}")
            expected_reuse, expected_create = set(case.create) | set(case.reuse), set()
        else:
            expected_reuse, expected_create = set(case.reuse), set(case.create)
        row.status, row.reused, row.created = (
            result.status,
            list(result.reused),
            list(result.created),
        )
        row.tokens = result.usage.input_tokens + result.usage.output_tokens
        row.repairs = _repairs(result)
        if result.status != case.status:
            row.problems.append(f"status {result.status}, expected {case.status}")
        if not live:
            if set(result.reused) != expected_reuse:
                row.problems.append(
                    f"reused {sorted(result.reused)}, expected {sorted(expected_reuse)}"
                )
            if set(result.created) != expected_create:
                row.problems.append(
                    f"created {sorted(result.created)}, expected {sorted(expected_create)}"
                )
            faults = case.faults or Faults()
            for stage, injected in (
                ("decompose", faults.decompose),
                ("create", faults.create_bug + faults.create_policy),
                ("wire", faults.wire),
            ):
                if injected and not _refused_then_accepted(result, stage):
                    row.problems.append(f"{stage}: no refused-then-repaired answer")
        for block_id in result.created:
            block = await store.get(block_id)
            if block.created_by != "thinker":
                row.problems.append(f"{block_id} saved with created_by {block.created_by}")
        for suggested in result.failed:
            failures = [e for e in result.events if e["type"] == "block_create_failed"]
            if not failures or failures[-1]["attempts"] != 4:
                row.problems.append(f"{suggested}: failure not reported after 4 attempts")
            if suggested in {b.id for b in await store.list_blocks()}:
                row.problems.append(f"{suggested} failed its tests but was saved")
        if result.pipeline_json is not None:
            _, problems = await validate_definition(
                dict(result.pipeline_json), store, sandbox_policy=True
            )
            row.valid = "yes" if not problems else "NO"
            row.problems += problems
            pipeline = Pipeline.from_data(dict(result.pipeline_json))
            runner = PipelineRunner(blocks=store, executor=executor)
            inputs = {k: v for k, v in case.inputs.items()}
            run = await runner.run(pipeline, inputs)
            row.runs = "yes" if run.status == "completed" else "NO"
            if run.status != "completed":
                row.problems.append(f"run {run.status}: {[str(e) for e in run.errors]}")
            if case.expect and not live:
                got = {path: _value(dict(run.state), path) for path in case.expect}
                row.output = "ok" if got == case.expect else "NO"
                if got != case.expect:
                    row.problems.append(f"outputs {got}, expected {case.expect}")
        elif case.status == "complete":
            row.problems.append(f"no pipeline: {list(result.log)}")
    row.seconds = time.perf_counter() - started
    return row


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def table(rows: Sequence[Row]) -> str:
    """The eval table: one line per case."""
    head = [
        "#",
        "intent",
        "status",
        "reused",
        "created",
        "repairs d/c/w",
        "valid",
        "runs",
        "output",
        "tokens",
        "ok",
    ]
    body = [
        [
            str(i),
            _short(r.intent, 44),
            r.status,
            ",".join(r.reused) or "-",
            ",".join(r.created) or "-",
            r.repairs,
            r.valid,
            r.runs,
            r.output,
            str(r.tokens),
            "PASS" if not r.problems else "FAIL",
        ]
        for i, r in enumerate(rows, start=1)
    ]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    lines = [head, ["-" * w for w in widths], *body]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def live_provider() -> LLMProvider:
    """The configured OpenAI-compatible model (see the module docstring)."""
    from flowcore.cli.workspace import choose_provider

    provider, choice = choose_provider(None, None)
    if choice.name == "offline":
        raise SystemExit("--live needs OPENAI_API_KEY, or FLOWCORE_BASE_URL for a local server")
    return provider


async def evaluate(cases: Sequence[Case], *, live: bool = False) -> list[Row]:
    """Run ``cases`` one after another (the sandbox's workers share two cores)."""
    provider = live_provider() if live else None
    try:
        return [await run_case(case, provider, live) for case in cases]
    finally:
        close = getattr(provider, "aclose", None)
        if close is not None:
            await close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", action="store_true", help="use the configured real model")
    parser.add_argument("--only", type=int, action="append", help="run case N (1-based)")
    args = parser.parse_args(argv)
    cases = [CASES[i - 1] for i in args.only] if args.only else CASES
    if args.live:
        # Faults are the scripted model's; a real model makes its own mistakes.
        cases = [case for case in cases if case.faults is None]
    os.environ.setdefault("FLOWCORE_TRACEBACK", "")
    rows = asyncio.run(evaluate(cases, live=args.live))
    print(table(rows))
    failed = [(i, r) for i, r in enumerate(rows, start=1) if r.problems]
    for i, row in failed:
        for problem in row.problems:
            print(f"case {i}: {_short(problem, 300)}")
    passed = len(rows) - len(failed)
    print(f"\n{passed}/{len(rows)} cases pass ({'live model' if args.live else 'scripted model'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
