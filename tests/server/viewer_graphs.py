"""Graphs ``flowcore serve --graphs tests.server.viewer_graphs:build`` serves for the viewer specs.

``review``: ``research`` (asks the offline model, so it reports tokens) ->
``outline`` (waits until the file ``$FLOWCORE_VIEWER_GATE`` exists, so the
spec sees it running) -> ``approve`` (``interrupt()``: asks a human) ->
``publish``. ``untrusted``: one node whose output is markup and script, as
a model might write it, for the XSS spec.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, TypedDict

from flowcore import START, Graph, interrupt
from flowcore.blocks.model_calls import CallTally, ask_model
from flowcore.checkpoint.protocol import Checkpointer
from flowcore.graph.compiled import CompiledGraph
from flowcore.llm.offline import OfflineProvider
from flowcore.llm.types import LLMRequest, Message
from flowcore.scheduler.context import NodeContext

PAYLOAD = (
    "<img src=x onerror=\"window.__xss=1;document.title='pwned'\"><script>window.__xss=2</script>"
)


class ReviewState(TypedDict, total=False):
    topic: str
    notes: str
    outline: str
    approved: Any
    published: bool


async def research(state: ReviewState, ctx: NodeContext) -> dict[str, Any]:
    request = LLMRequest((Message("user", f"Notes on {state.get('topic', 'graphs')}"),))
    answer = await ask_model(
        OfflineProvider(), request, ctx=ctx, block_id="research", tally=CallTally()
    )
    return {"notes": answer.text}


async def outline(state: ReviewState) -> dict[str, Any]:
    gate = os.environ.get("FLOWCORE_VIEWER_GATE")
    # Held open until the spec has seen this node running (the spec creates the file).
    # The spec is another process, so a file is the signal an asyncio.Event cannot be.
    while gate and not await asyncio.to_thread(Path(gate).exists):  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    return {"outline": f"1. {state.get('notes', '')}"}


async def approve(state: ReviewState) -> dict[str, Any]:
    answer = interrupt({"question": "Publish this outline?", "outline": state.get("outline")})
    return {"approved": answer}


async def publish(state: ReviewState) -> dict[str, Any]:
    return {"published": bool(state.get("approved"))}


def review_graph() -> Graph:
    """research -> outline -> approve (asks) -> publish."""
    graph = Graph(ReviewState, name="review")
    for name, node in (
        ("research", research),
        ("outline", outline),
        ("approve", approve),
        ("publish", publish),
    ):
        graph.add_node(name, node)
    graph.add_edge(START, "research").add_edge("research", "outline")
    graph.add_edge("outline", "approve").add_edge("approve", "publish")
    return graph


class UntrustedState(TypedDict, total=False):
    reply: str


async def write_reply(state: UntrustedState) -> dict[str, Any]:
    return {"reply": PAYLOAD}


def untrusted_graph() -> Graph:
    """One node whose output is HTML with an event handler and a script."""
    graph = Graph(UntrustedState, name="untrusted")
    graph.add_node("write_reply", write_reply).add_edge(START, "write_reply")
    return graph


def build(checkpointer: Checkpointer) -> dict[str, CompiledGraph]:
    """Both graphs, checkpointed in the server's database."""
    return {
        "review": review_graph().compile(checkpointer=checkpointer, version="1"),
        "untrusted": untrusted_graph().compile(checkpointer=checkpointer, version="1"),
    }
