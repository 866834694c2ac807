"""Small real graphs for the server tests: one that finishes, one that asks, one held open."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

from flowcore import START, Graph, interrupt
from flowcore.checkpoint.protocol import Checkpointer


class EchoState(TypedDict, total=False):
    text: str
    upper: str
    length: int


async def _upper(state: EchoState) -> dict[str, Any]:
    return {"upper": state.get("text", "").upper()}


async def _length(state: EchoState) -> dict[str, Any]:
    return {"length": len(state.get("upper", ""))}


def echo_graph(checkpointer: Checkpointer) -> Graph:
    """``upper`` then ``length``: finishes at once."""
    graph = Graph(EchoState, name="echo")
    graph.add_node("upper", _upper).add_node("length", _length)
    graph.add_edge(START, "upper").add_edge("upper", "length")
    return graph


class ApprovalState(TypedDict, total=False):
    draft: str
    approved: Any
    sent: bool


async def _draft(state: ApprovalState) -> dict[str, Any]:
    return {"draft": f"Dear team, {state.get('draft', 'hello')}"}


async def _approve(state: ApprovalState) -> dict[str, Any]:
    answer = interrupt({"question": "send this?", "draft": state["draft"]})
    return {"approved": answer}


async def _send(state: ApprovalState) -> dict[str, Any]:
    return {"sent": bool(state.get("approved"))}


def approval_graph() -> Graph:
    """``draft`` then ``approve`` (asks a human) then ``send``."""
    graph = Graph(ApprovalState, name="approval")
    graph.add_node("draft", _draft).add_node("approve", _approve).add_node("send", _send)
    graph.add_edge(START, "draft").add_edge("draft", "approve").add_edge("approve", "send")
    return graph


class Gate:
    """Holds the ``wait`` node of the gated graph until a test opens it."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.entered = asyncio.Event()


def gated_graph(gate: Gate) -> Graph:
    """``start`` then ``wait`` (blocks until ``gate`` opens) then ``finish``."""

    async def start(state: EchoState) -> dict[str, Any]:
        return {"text": "started"}

    async def wait(state: EchoState) -> dict[str, Any]:
        gate.entered.set()
        await gate.opened.wait()
        return {"upper": "WAITED"}

    async def finish(state: EchoState) -> dict[str, Any]:
        return {"length": 1}

    graph = Graph(EchoState, name="gated")
    graph.add_node("start", start).add_node("wait", wait).add_node("finish", finish)
    graph.add_edge(START, "start").add_edge("start", "wait").add_edge("wait", "finish")
    return graph


def summary_pipeline(pipeline_id: str = "digest") -> dict[str, Any]:
    """A Pipeline document: the builtin ``summarize`` block (offline model: counts tokens)."""
    return {
        "id": pipeline_id,
        "name": "Digest",
        "nodes": [{"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}}],
    }


def approval_pipeline() -> dict[str, Any]:
    """A Pipeline document that summarizes, then asks a human (builtin ``human_approval``)."""
    return {
        "id": "approve_digest",
        "name": "Approve digest",
        "nodes": [
            {"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}},
            {
                "id": "n2",
                "block_id": "human_approval",
                "inputs": {"question": "Publish <<n1.summary>>?"},
            },
        ],
    }
