"""A support agent assembled from stored blocks and run by the one block executor.

    python examples/support_agent.py                    # offline, no API key needed
    python examples/support_agent.py --message "My order A1234 is broken, I want a refund today"

The blocks live in ``examples/blocks/support_blocks.json``; the script
imports them into a SQLite block registry (a temporary file unless
``--db`` names one), shows that they can be found by search, and wires
them into a graph::

    START -+-> lookup  (tool block)     -+
           +-> urgency (python block)   -+-> triage (decision) -+-auto---> reply (llm)
                                                                +-person-> hand_over (human)

``lookup`` and ``urgency`` run in parallel; ``triage`` reads their outputs
through ``<<lookup.status>>`` and ``<<urgency.score>>`` references. The
model is a ScriptedProvider whose answers are chosen from the urgency score,
so the script prints the same thing on every run; pass a real provider
(``OpenAIProvider``, ``AnthropicProvider``) to ``ProviderRegistry`` instead
and nothing else changes.
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import tempfile
from typing import Any

from pydantic import BaseModel

from flowcore import START, Event, Graph
from flowcore.blocks import BlockExecutor, BlockState, SqliteBlockStore, add_block
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.tools import Tool, ToolRunner

BLOCKS = pathlib.Path(__file__).parent / "blocks" / "support_blocks.json"
ORDERS = {"A1234": ("shipped", 2), "A2000": ("delayed", 9)}


class Ticket(BlockState, total=False):
    message: str
    order_id: str


class OrderQuery(BaseModel):
    order_id: str


class OrderStatus(BaseModel):
    status: str
    eta_days: int | None = None


async def order_status(query: OrderQuery) -> OrderStatus:
    status, eta = ORDERS.get(query.order_id, ("unknown", None))
    return OrderStatus(status=status, eta_days=eta)


def scripted_model(message: str) -> ScriptedProvider:
    # Stands in for a real model: urgent words decide the triage answer.
    urgent = any(w in message.lower() for w in ("refund", "broken", "lawyer"))
    if urgent:
        return ScriptedProvider(['{"branch": "person"}'])
    return ScriptedProvider(
        [
            '{"branch": "auto"}',
            'Here is the reply:\n```json\n{"reply": "Good news: your order has shipped and '
            'arrives in 2 days. Thanks for your patience!"}\n```',
        ]
    )


def describe(event: Event) -> str | None:
    kind = event.type
    if kind == "block_start":
        return f"  {event.node:<10} start  {event.block_id} v{event.block_version} ({event.kind})"
    if kind == "tool_call_result":
        return f"  {event.node:<10} tool   {event.tool_name} -> {dict(event.result or {})}"
    if kind == "usage":
        return f"  {event.node:<10} usage  {event.input_tokens} in / {event.output_tokens} out"
    if kind == "block_end":
        shown = dict(event.outputs or {}) if event.ok else event.error
        how = f" [{event.metadata['isolation']}]" if "isolation" in event.metadata else ""
        return f"  {event.node:<10} end    {shown}{how}"
    if kind == "interrupt":
        return f"  {event.node:<10} paused {event.value['question']!r}"
    return None


async def main(db: pathlib.Path, message: str, order_id: str) -> dict[str, Any]:
    async with SqliteBlockStore(db) as store:
        added = await store.import_json(BLOCKS.read_text())
        print(f"registry: {db.name}, {added} blocks imported")
        found = [b.id for b in await store.search("customer order support reply")]
        print(f"search 'customer order support reply': {found}")

        executor = BlockExecutor(
            providers=ProviderRegistry.single(scripted_model(message)),
            tools=ToolRunner(
                [
                    Tool(
                        "order_status",
                        "Look up an order",
                        OrderQuery,
                        OrderStatus,
                        order_status,
                        allowlist={"status", "eta_days"},
                    ),
                ]
            ),
        )
        graph = Graph(Ticket, name="support-agent")
        add_block(
            graph,
            "lookup",
            await store.get("order_lookup"),
            executor,
            inputs={"order_id": "<<state.order_id>>"},
        )
        add_block(
            graph,
            "urgency",
            await store.get("urgency_score"),
            executor,
            inputs={"message": "<<state.message>>"},
        )
        add_block(
            graph,
            "triage",
            await store.get("support_triage"),
            executor,
            inputs={
                "message": "<<state.message>>",
                "status": "<<lookup.status>>",
                "score": "<<urgency.score>>",
                "reasons": "<<urgency.reasons>>",
            },
            branches={"auto": "reply", "person": "hand_over"},
        )
        add_block(
            graph,
            "reply",
            await store.get("support_reply"),
            executor,
            inputs={
                "message": "<<state.message>>",
                "status": "<<lookup.status>>",
                "eta_days": "<<lookup.eta_days>>",
            },
        )
        add_block(
            graph,
            "hand_over",
            await store.get("hand_over"),
            executor,
            inputs={"message": "<<state.message>>", "score": "<<urgency.score>>"},
        )
        graph.add_edge(START, "lookup").add_edge(START, "urgency")
        graph.add_edge(["lookup", "urgency"], "triage")

        print(f"message: {message!r} (order {order_id})")
        async with graph.compile().stream({"message": message, "order_id": order_id}) as events:
            async for event in events:
                line = describe(event)
                if line:
                    print(line)
            result = await events.result()
        print(f"status: {result.status}")
        if "reply" in result.state.get("shared_context", {}):
            print(f"reply: {result.state['shared_context']['reply']}")
        tokens = sum(r["input_tokens"] + r["output_tokens"] for r in result.state["block_runs"])
        print(f"blocks run: {len(result.state['block_runs'])}, tokens: {tokens}")
        return dict(result.state)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--message", default="Hi, where is my order A1234? Thanks!")
    parser.add_argument("--order", default="A1234")
    parser.add_argument("--db", type=pathlib.Path, help="block registry file (default: temp)")
    args = parser.parse_args()
    if args.db:
        asyncio.run(main(args.db, args.message, args.order))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(pathlib.Path(tmp) / "blocks.db", args.message, args.order))
