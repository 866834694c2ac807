"""The seed-003 market-research pipeline: one search feeding three parallel branches.

    python examples/market_research.py
    python examples/market_research.py --topic "AI meeting-note apps" --db research.db

The pipeline in ``examples/market_research/pipeline.json`` runs blocks from
``examples/market_research/blocks.json`` with the stub search in
``examples/market_research/tools.py``::

                      +-> n2 summarize competitors (llm) -------+
    n1 web search ----+-> n3 extract price points (python) -----+-> n5 market report (llm)
       (tool)         +-> n4 customer sentiment (llm) ----------+

``n2``, ``n3`` and ``n4`` each read the search results through the
reference ``<<n1.results>>`` (the raw list, not text) and run in the same
superstep; ``n3`` is sandboxed Python. ``n5`` joins their outputs through
``<<n2.summary>>``, ``<<n3.price_points>>``, ``<<n4.sentiment>>``.

The three LLM blocks are answered by a ScriptedProvider (the same text on
every run); pass a real provider to ``ProviderRegistry.single`` instead and
nothing else changes.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import pathlib
import sys
import tempfile
from typing import Any

from flowcore import BlockEndEvent, BlockStartEvent, Event, NodeStartEvent, RunResult
from flowcore.blocks import BlockExecutor, SqliteBlockStore
from flowcore.checkpoint import SqliteCheckpointer
from flowcore.history import SqliteRunHistory
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.memory import MemoryManager, SqliteStore
from flowcore.pipeline import Pipeline, PipelineRunner
from flowcore.tools import Tool, ToolRunner

HERE = pathlib.Path(__file__).parent / "market_research"
DEFAULT_TOPIC = "AI meeting-note apps"
# One reply per LLM call, in the order the calls are made: n2 and n4 start in the order they
# are declared, then n5.
SCRIPT = [
    '{"summary": "Four apps compete: NotePilot and MinuteMind sell accuracy and action items '
    'at a premium, while Scribbly and EchoNotes win on price and ease of use."}',
    '{"sentiment": "Mostly positive: people like the summaries and search, and complain '
    'about price and a slow mobile app."}',
    '{"report": "The AI meeting-note market splits into premium tools (MinuteMind, NotePilot) '
    "and cheap, easy ones (EchoNotes, Scribbly), with a median price of $15 a month. "
    "Customers are mostly happy but price-sensitive, and privacy is a rising worry. "
    'Recommendation: enter at about $12 a month with privacy as the headline feature."}',
]


def load_tools(path: pathlib.Path) -> list[Tool]:
    """The ``TOOLS`` list of a tools file (the way ``flowcore --tools`` loads it)."""
    spec = importlib.util.spec_from_file_location(f"{path.parent.name}_tools", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    tools: list[Tool] = module.TOOLS
    return tools


def short(value: Any, width: int = 64) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def describe(event: Event) -> str | None:
    """One progress line for the events worth showing (no ids or timings: output is stable)."""
    node = getattr(event, "node", "")
    where = f"  step {event.superstep}  {node:<11}"
    if isinstance(event, NodeStartEvent) and node in ("load_memory", "save_memory"):
        return f"{where} start"
    if isinstance(event, BlockStartEvent):
        return f"{where} start  {event.block_id} ({event.kind})"
    if isinstance(event, BlockEndEvent) and not event.ok:
        return f"{where} FAILED {event.error}"
    if isinstance(event, BlockEndEvent):
        outputs = dict(event.outputs or {})
        if "results" in outputs:
            shown = f"{outputs['count']} pages for {outputs['query_used']!r}"
        elif "price_points" in outputs:
            shown = f"{len(outputs['price_points'])} prices, median {outputs['median_usd']}"
            shown += f" [{event.metadata.get('isolation')}]"
        else:
            shown = short(next(iter(outputs.values())))
        return f"{where} done   {shown}"
    return None


def show(event: Event) -> None:
    line = describe(event)
    if line:
        print(line)


def supersteps(result: RunResult) -> dict[int, list[str]]:
    """Which nodes ran in each superstep, in declaration order."""
    steps: dict[int, list[str]] = {}
    for run in result.node_runs:
        if run.status == "completed":
            steps.setdefault(run.superstep, []).append(run.node)
    return steps


async def main(db: pathlib.Path, topic: str) -> RunResult:
    pipeline = Pipeline.from_json((HERE / "pipeline.json").read_text())
    print(f"pipeline: {pipeline.name!r}, {len(pipeline.nodes)} nodes, topic {topic!r}")
    model = ScriptedProvider(SCRIPT)
    async with (
        SqliteCheckpointer(db) as checkpoints,
        SqliteBlockStore(db) as blocks,
        SqliteStore(db) as store,
        SqliteRunHistory(db) as history,
    ):
        added = await blocks.import_json((HERE / "blocks.json").read_text())
        print(f"database: {db.name} ({added} blocks imported)\n")
        runner = PipelineRunner(
            blocks=blocks,
            executor=BlockExecutor(
                providers=ProviderRegistry.single(model),
                tools=ToolRunner(load_tools(HERE / "tools.py")),
                memory=store,
            ),
            memory=MemoryManager(store),
            checkpointer=checkpoints,
            history=history,
        )
        result = await runner.run(pipeline, {"topic": topic}, user_id="analyst", on_event=show)
        (record,) = await history.list(thread_id=result.thread_id)

    print(f"\nstatus: {result.status} (recorded in the run history: {record.status})")
    # on_error="skip_dependents" completes a run around a failed node: say which and why
    # rather than reading a report that was never written.
    missed = [r for r in result.node_runs if r.status != "completed"]
    if missed:
        for r in missed:
            why = r.error if r.error is not None else r.skip_reason
            print(f"node {r.node} {r.status}: {why!r}", file=sys.stderr)
        raise SystemExit(1)
    print("supersteps:")
    for step, nodes in supersteps(result).items():
        together = "   <- in parallel" if len(nodes) > 1 else ""
        print(f"  {step}: {', '.join(nodes)}{together}")

    results = result.state["results"]
    pages = results["n1"]["results"]
    print(f"\n<<n1.results>> is a list of {len(pages)} pages; what the branches made of it:")
    summary_prompt = next(
        r.messages[0].content for r in model.requests if "Summarize competitors" in (r.system or "")
    )
    print("  n2 prompt:")
    for line in summary_prompt.splitlines():
        print(f"    | {line}")
    prices = ", ".join(
        f"{p['product']} ${p['usd_per_month']:g}" for p in results["n3"]["price_points"]
    )
    print(f"  n3 prices:  {prices}")
    print(f"  n3 median:  ${results['n3']['median_usd']:g}, cheapest {results['n3']['cheapest']}")
    print(f"  n4 sentiment: {results['n4']['sentiment']}")
    print(f"\nreport:\n  {results['n5']['report']}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=pathlib.Path, help="the database file (default: temp)")
    parser.add_argument("--topic", default=DEFAULT_TOPIC, help="what to research")
    args = parser.parse_args()
    if args.db:
        asyncio.run(main(args.db, args.topic))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(pathlib.Path(tmp) / "research.db", args.topic))
