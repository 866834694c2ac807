"""A stub web search for the market-research example: a fixed set of pages, no network.

Every query gets the same five pages about (fictional) AI meeting-note apps,
so the example prints the same report on every run. The result also carries
the search API's remaining quota, which is not in the tool's ``allowlist``
and so never appears in events.

The ``flowcore`` CLI loads this file with ``--tools examples/market_research/tools.py``.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from flowcore.tools import Tool

__all__ = ["PAGES", "TOOLS"]

PAGES = [
    {
        "title": "NotePilot - pricing",
        "url": "https://notepilot.example/pricing",
        "snippet": "NotePilot Pro costs $18/month and transcribes meetings in 30 languages. "
        "Reviewers love the summaries but say the mobile app is slow.",
    },
    {
        "title": "Scribbly - plans",
        "url": "https://scribbly.example/plans",
        "snippet": "Scribbly Team is $12/month per seat, with unlimited recordings. "
        "Users praise how easy it is; some miss a calendar integration.",
    },
    {
        "title": "MinuteMind review",
        "url": "https://reviews.example/minutemind",
        "snippet": "MinuteMind at $25/month has the best action-item extraction we tested, "
        "but several users complain about the price.",
    },
    {
        "title": "EchoNotes launches a free tier",
        "url": "https://news.example/echonotes-free",
        "snippet": "EchoNotes now has a free tier and a $9/month Plus plan; early users are "
        "enthusiastic about the search across past meetings.",
    },
    {
        "title": "Why teams switch meeting-note apps",
        "url": "https://blog.example/switching",
        "snippet": "A survey of 400 teams: accuracy and price drive switching; privacy "
        "worries are rising.",
    },
]


class SearchArgs(BaseModel):
    query: str = Field(min_length=3)
    max_results: int = Field(default=5, ge=1, le=10)


class Page(BaseModel):
    title: str
    url: str
    snippet: str


class SearchResults(BaseModel):
    results: list[Page]
    query_used: str
    count: int
    quota_remaining: int  # internal: not in the allowlist


async def web_search(args: SearchArgs) -> SearchResults:
    pages = [Page(**page) for page in PAGES[: args.max_results]]
    return SearchResults(
        results=pages, query_used=args.query, count=len(pages), quota_remaining=997
    )


TOOLS = [
    Tool(
        "web_search",
        "Search the web and return the top pages with their snippets",
        SearchArgs,
        SearchResults,
        web_search,
        allowlist={"results", "query_used", "count"},
    ),
]
