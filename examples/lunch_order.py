"""The seed-000 lunch order: a task plan of stored blocks, a human answer, then memory.

    python examples/lunch_order.py                 # two runs for "ada" in a fresh database
    python examples/lunch_order.py --db lunch.db --user bob --answer "Pad thai from Thai Basil"

"Order my lunch from Uber Eats every Tuesday, arriving at 1pm" is the task
plan in ``examples/lunch_order/plan.json`` (with its schedule), over the
blocks in ``examples/lunch_order/blocks.json`` and the stub tools in
``examples/lunch_order/tools.py``::

    load_memory -> recall -> open_app -> check_previous -+-has_preference---------------+
                                                         +-no_preference-> ask_order ---+
        +-------------------------------------------------------------------------------+
        +-> add_to_cart -> set_delivery -> place_order -> confirm -> save_memory

Run 1 finds no usual order, so ``check_previous`` (sandboxed Python) takes
``no_preference`` and ``ask_order`` (a human block) pauses the run. The script
answers with ``runner.resume(thread_id, {"usual_order": ...})``; the order is
placed and ``save_memory`` keeps the answer as the user's ``usual_order``
preference. Run 2 loads it, takes ``has_preference`` and runs without a
pause. Blocks, memory, checkpoints and the run history share one SQLite file.

The confirmation is written by a ScriptedProvider, so every run prints the
same text; pass a real provider (``OpenAIProvider``, ``AnthropicProvider``)
to ``ProviderRegistry.single`` and nothing else changes.

``check_previous`` runs in the bubblewrap jail. On a machine without
bubblewrap, flowcore refuses untrusted Python blocks; this demo's blocks are
its own, so it then opts into the strongest weaker jail the machine has and
says so (install bubblewrap with ``apt-get install bubblewrap``).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import pathlib
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

from flowcore import (
    BlockEndEvent,
    Event,
    InterruptEvent,
    NodeEndEvent,
    NodeSkippedEvent,
    RunResult,
)
from flowcore.blocks import BlockExecutor, SqliteBlockStore
from flowcore.checkpoint import SqliteCheckpointer
from flowcore.history import RunRecord, SqliteRunHistory
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.memory import MemoryManager, SqliteStore
from flowcore.pipeline import PipelineRunner, TaskPlan
from flowcore.sandbox import (
    PythonSandbox,
    WeakerIsolation,
    available_isolation,
    bubblewrap_available,
)
from flowcore.tools import Tool, ToolRunner

HERE = pathlib.Path(__file__).parent / "lunch_order"
DEFAULT_ANSWER = "Chicken burrito bowl, chips and guacamole from Chipotle"
# What the confirmation model "writes", one reply per run.
SCRIPT = [
    '{"message": "All set: your usual lunch is ordered and arrives by 1pm. Enjoy!"}',
    'Here you go:\n```json\n{"message": "Done again: same lunch as always, arriving by 1pm."}\n```',
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


def short(value: Any, width: int = 72) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def describe(event: Event) -> str | None:
    """One progress line for the events worth showing (no ids or timings: output is stable)."""
    node = getattr(event, "node", "")
    where = f"  step {event.superstep:>2}  {node:<15}"
    if isinstance(event, NodeEndEvent) and node == "load_memory":
        remembered = dict((event.update or {}).get("shared_context") or {})
        return f"{where} remembered: {short(remembered) if remembered else 'nothing yet'}"
    if isinstance(event, NodeEndEvent) and node == "save_memory":
        return f"{where} preferences and run summary saved"
    if isinstance(event, BlockEndEvent) and not event.ok:
        return f"{where} FAILED: {event.error}"
    if isinstance(event, BlockEndEvent):
        outputs = dict(event.outputs or {})
        if "branch" in outputs:
            return f"{where} decision -> {outputs['branch']} ({short(outputs.get('reason'), 50)})"
        if "memory_results" in outputs:
            found = [hit["key"] for hit in outputs["memory_results"]]
            return f"{where} memory search found: {', '.join(found) or 'nothing'}"
        tool = event.metadata.get("tool")
        label = f"tool {tool}" if tool else event.block_id
        return f"{where} {label} -> {short(outputs, 60)}"
    if isinstance(event, InterruptEvent):
        return f"{where} paused: waiting for the user's answer"
    if isinstance(event, NodeSkippedEvent):
        why = "branch not taken" if event.reason == "not_triggered" else event.reason
        return f"  {'':7}  {node:<15} skipped: {why}"
    return None


def show(event: Event) -> None:
    line = describe(event)
    if line:
        print(line)


@dataclass
class LunchRuns:
    """What ``main`` did, for callers that want more than the printout."""

    first: RunResult
    second: RunResult
    preferences: dict[str, Any]
    history: list[RunRecord]


def report(result: RunResult) -> None:
    shared = result.state.get("shared_context", {})
    print(f"  status: {result.status}")
    if result.status == "completed":
        items = ", ".join(shared["items"])
        print(
            f"  order:  {shared['order_id']} {shared['status']}: {items} from "
            f"{shared['restaurant']}, {shared['cart_total']:.2f} USD, "
            f"arriving {shared['delivery_window']}"
        )
        print(f"  message: {shared['message']}")


def demo_sandbox() -> PythonSandbox:
    """bubblewrap when installed; else an explicit, announced weaker jail for our own blocks."""
    if bubblewrap_available():
        return PythonSandbox()
    weaker: WeakerIsolation = "unshare" if available_isolation() == "unshare" else "rlimits"
    print(
        "note: bubblewrap is not installed (apt-get install bubblewrap); this demo's own "
        f"Python block runs in the weaker {weaker!r} jail instead"
    )
    return PythonSandbox(weaker_isolation=weaker)


async def main(db: pathlib.Path, user: str, answer: str) -> LunchRuns:
    plan = TaskPlan.from_json((HERE / "plan.json").read_text())
    schedule = plan.schedule
    assert schedule is not None
    print(f"plan: {plan.name!r}, {len(plan.steps)} steps, for user {user!r}")
    print(
        f"schedule: {schedule.human_readable} "
        f"(cron {schedule.cron_expression!r}, {schedule.timezone})"
    )
    async with (
        SqliteCheckpointer(db) as checkpoints,
        SqliteBlockStore(db) as blocks,
        SqliteStore(db) as store,
        SqliteRunHistory(db) as history,
    ):
        added = await blocks.import_json((HERE / "blocks.json").read_text())
        print(f"database: {db.name} ({added} blocks imported)")
        executor = BlockExecutor(
            providers=ProviderRegistry.single(ScriptedProvider(SCRIPT)),
            tools=ToolRunner(load_tools(HERE / "tools.py")),
            memory=store,
            sandbox=await asyncio.to_thread(demo_sandbox),  # probing runs a process
        )
        memory = MemoryManager(store)
        runner = PipelineRunner(
            blocks=blocks,
            executor=executor,
            memory=memory,
            checkpointer=checkpoints,
            history=history,
        )

        print("\nrun 1")
        first = await runner.run(plan, user_id=user, on_event=show)
        if first.status == "interrupted" and first.thread_id is not None:
            print(f"  status: {first.status}")
            print(f"  question: {first.interrupts[0].value['question']}")
            print(f"  answer:   {answer}")
            print("  resuming the thread with the answer")
            first = await runner.resume(first.thread_id, {"usual_order": answer}, on_event=show)
        report(first)
        preferences = await memory.preferences(user)
        print(f"  remembered for {user}: {preferences}")

        print("\nrun 2 (same user)")
        second = await runner.run(plan, user_id=user, on_event=show)
        report(second)

        records = list(reversed(await history.list(pipeline_id=plan.plan_id, user_id=user)))
        print("\nrun history, oldest first (a resumed run is recorded again on its thread):")
        runs: dict[str | None, int] = {}
        for record in records:
            number = runs.setdefault(record.thread_id, len(runs) + 1)
            ran = [n.node for n in record.nodes if n.status == "completed"]
            print(f"  run {number}  {record.status:<11}  {', '.join(ran)}")
        return LunchRuns(first, second, preferences, records)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=pathlib.Path, help="the database file (default: temp)")
    parser.add_argument("--user", default="ada", help="who the lunch is for")
    parser.add_argument("--answer", default=DEFAULT_ANSWER, help="what the user answers")
    args = parser.parse_args()
    if args.db:
        asyncio.run(main(args.db, args.user, args.answer))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(pathlib.Path(tmp) / "lunch.db", args.user, args.answer))
