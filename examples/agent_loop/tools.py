"""A stub documentation search for the agent-loop example: a fixed index, no network.

A page matches when it contains every word of the query, so a narrow query
(many specific words) finds nothing and a broader one finds pages: the
agent's first search comes back empty and its verifier sends it back to the
planner. The result's ``index_version`` is internal and not in the tool's
``allowlist``, so events never show it.

The ``flowcore`` CLI loads this file with ``--tools examples/agent_loop/tools.py``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from flowcore.tools import Tool

__all__ = ["PAGES", "TOOLS"]

PAGES = [
    {
        "page": "checkpoints.md",
        "text": "After every superstep the run is saved as a checkpoint; each node's writes are "
        "stored as soon as the node finishes, so after a crash a resumed run never re-runs a "
        "node whose writes were saved.",
    },
    {
        "page": "durability.md",
        "text": "Three durability modes: sync saves the checkpoint before each step, async at "
        "most one step behind, exit once at the end. After a crash, sync loses nothing.",
    },
    {
        "page": "interrupts.md",
        "text": "interrupt() pauses a run and saves it; resuming with a value re-runs the node "
        "that asked.",
    },
    {
        "page": "sandbox.md",
        "text": "Python blocks run in a jail with CPU, memory and process limits and no network.",
    },
]


class SearchArgs(BaseModel):
    query: str = Field(min_length=2)


class Hit(BaseModel):
    page: str
    text: str


class SearchHits(BaseModel):
    hits: list[Hit]
    count: int
    index_version: str  # internal: not in the allowlist


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


async def search_docs(args: SearchArgs) -> SearchHits:
    wanted = _words(args.query)
    hits = [
        Hit(**page)
        for page in PAGES
        if wanted and all(word in page["text"].lower() for word in wanted)
    ]
    return SearchHits(hits=hits, count=len(hits), index_version="2025-06-01")


TOOLS = [
    Tool(
        "search_docs",
        "Search the documentation; a page matches when it contains every word of the query",
        SearchArgs,
        SearchHits,
        search_docs,
        allowlist={"hits", "count"},
    ),
]
