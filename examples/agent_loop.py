"""The seed-001 agent: planner, tool router, executor, verifier, generator, summarizer.

    python examples/agent_loop.py
    python examples/agent_loop.py --db agent.db --user ada

The pipeline in ``examples/agent_loop/pipeline.json`` runs blocks from
``examples/agent_loop/blocks.json`` with the stub search in
``examples/agent_loop/tools.py``::

    planner (llm) -> router (decision) -+-tools--> executor (tool) -> verifier (decision) -+
       ^                                |                                                |
       |                                +-direct-------------------------+   ok          |
       +---------------------- retry ---------------------------------- | --------------+
                                                                        v
                                                      generator (llm) -> summarizer (llm)

The verifier is sandboxed Python: empty search results send the work back to
the planner (with feedback saying why, and a retry count that caps the loop),
results go on to the generator. The scripted planner's first query is too
narrow, so the stub search finds nothing and the run takes a second pass
through the planner before it answers. Each trip round the loop is a new
*pass* of the engine. The summarizer's one-line summary is remembered as the
user's ``conversation_summary``.

A ScriptedProvider stands in for the model (the same text on every run);
pass a real provider to ``ProviderRegistry.single`` instead and nothing else
changes.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import pathlib
import sys
import tempfile
from typing import Any

from flowcore import (
    BlockEndEvent,
    Event,
    NodeSkippedEvent,
    RunResult,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from flowcore.blocks import BlockExecutor, SqliteBlockStore
from flowcore.checkpoint import SqliteCheckpointer
from flowcore.history import SqliteRunHistory
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.memory import MemoryManager, SqliteStore
from flowcore.pipeline import Pipeline, PipelineRunner
from flowcore.tools import Tool, ToolRunner

HERE = pathlib.Path(__file__).parent / "agent_loop"
DEFAULT_QUESTION = "What happens to a running graph when the process crashes?"
# One reply per LLM call, in order: planner (pass 1), planner (pass 2), generator, summarizer.
SCRIPT = [
    '{"next_step": "search_docs", "query": "process crash recovery replay journal"}',
    '{"next_step": "search_docs", "query": "crash checkpoint"}',
    '{"answer": "Nothing is lost that was saved: every node\'s writes are stored as soon as it '
    "finishes and each superstep ends with a checkpoint, so a resumed run never re-runs a "
    "finished node (checkpoints.md); with sync durability a crash loses nothing at all "
    '(durability.md)."}',
    '{"conversation_summary": "Asked what a crash does to a running graph; answered from '
    'checkpoints.md and durability.md."}',
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
    where = f"  step {event.superstep:>2}  {node:<11}"
    if isinstance(event, BlockEndEvent) and not event.ok:
        return f"{where} FAILED {event.error}"
    if isinstance(event, BlockEndEvent):
        outputs = dict(event.outputs or {})
        if node == "planner":
            shown = f"{outputs['next_step']}, query {outputs['query']!r}"
        elif "branch" in outputs:
            shown = f"-> {outputs['branch']}"
            if "feedback" in outputs:
                shown += f" ({outputs['feedback']})"
        elif "hits" in outputs:
            pages = ", ".join(hit["page"] for hit in outputs["hits"]) or "none"
            shown = f"{outputs['count']} hit(s): {pages}"
        else:
            shown = short(next(iter(outputs.values())))
        return f"{where} {shown}"
    if isinstance(event, NodeSkippedEvent):
        why = "not reached in this pass" if event.reason == "not_triggered" else event.reason
        return f"  {'':7}  {node:<11} skipped: {why}"
    return None


TOOL_CALLS: dict[str, list[str]] = {"start": [], "result": []}
"""The ids of the run's tool calls, as their start and result events named them."""


def show(event: Event) -> None:
    if isinstance(event, ToolCallStartEvent):
        TOOL_CALLS["start"].append(event.tool_call_id)
    elif isinstance(event, ToolCallResultEvent):
        TOOL_CALLS["result"].append(event.tool_call_id)
    line = describe(event)
    if line:
        print(line)


def tool_call_line() -> str:
    """How many tool calls ran and whether each had an id of its own (ids are random UUIDs)."""
    starts, results = TOOL_CALLS["start"], TOOL_CALLS["result"]
    distinct = len(set(starts))
    closed = "each closed by its result" if sorted(starts) == sorted(results) else "UNCLOSED"
    return f"tool calls: {len(starts)}, {distinct} distinct id(s), {closed}"


def passes(result: RunResult) -> dict[int, list[str]]:
    """Which nodes ran in each pass of the loop, in the order they ran."""
    ran: dict[int, list[str]] = {}
    for run in result.node_runs:
        if run.status == "completed":
            ran.setdefault(run.pass_index, []).append(run.node)
    return ran


async def main(db: pathlib.Path, question: str, user: str) -> RunResult:
    pipeline = Pipeline.from_json((HERE / "pipeline.json").read_text())
    print(f"pipeline: {pipeline.name!r}, {len(pipeline.nodes)} nodes")
    print(f"question: {question}")
    model = ScriptedProvider(SCRIPT)
    async with (
        SqliteCheckpointer(db) as checkpoints,
        SqliteBlockStore(db) as blocks,
        SqliteStore(db) as store,
        SqliteRunHistory(db) as history,
    ):
        added = await blocks.import_json((HERE / "blocks.json").read_text())
        print(f"database: {db.name} ({added} blocks imported)\n")
        memory = MemoryManager(store)
        runner = PipelineRunner(
            blocks=blocks,
            executor=BlockExecutor(
                providers=ProviderRegistry.single(model),
                tools=ToolRunner(load_tools(HERE / "tools.py")),
                memory=store,
            ),
            memory=memory,
            checkpointer=checkpoints,
            history=history,
        )
        result = await runner.run(
            pipeline, {"question": question}, user_id=user, on_event=show, recursion_limit=40
        )
        remembered = (await memory.preferences(user)).get("conversation_summary")

    print(f"\nstatus: {result.status} after {result.supersteps} supersteps")
    print(tool_call_line())
    print("passes:")
    for number, nodes in passes(result).items():
        print(f"  pass {number}: {', '.join(nodes)}")
    replanned = [r for r in model.requests if "Planner" in (r.system or "")]
    if len(replanned) > 1:
        print("the planner's second prompt carried the verifier's feedback:")
        for line in replanned[1].messages[0].content.splitlines()[:2]:
            print(f"  | {line}")
    shared = result.state.get("shared_context", {})
    if "answer" in shared:
        print(f"\nanswer:\n  {shared['answer']}")
    print(f"remembered for {user}: {remembered}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=pathlib.Path, help="the database file (default: temp)")
    parser.add_argument("--question", default=DEFAULT_QUESTION, help="what to ask the agent")
    parser.add_argument("--user", default="ada", help="whose conversation it is")
    args = parser.parse_args()
    if args.db:
        asyncio.run(main(args.db, args.question, args.user))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(pathlib.Path(tmp) / "agent.db", args.question, args.user))
