"""The run viewer: ``GET /ui`` (one page, its script and style) and the graph route it draws from.

The page is plain HTML, CSS and JavaScript shipped in ``flowcore/server/static``
(no third-party code, nothing from a CDN: it works offline). It holds no
data itself: it asks for an API key once, keeps it in the tab's
``sessionStorage`` and calls the JSON API with ``Authorization: Bearer``
(the key never goes into a URL). Every page response carries a strict
Content-Security-Policy: scripts and styles only from this server, no
inline script, no plugins, no framing.

``GET /api/runs/{run_id}/graph`` gives the run's graph as nodes and edges
(plus the Mermaid text) so the page can lay it out and colour each node by
its status as the run's events arrive; ``GET /api/runs/{run_id}/nodes``
gives what each node read and wrote, from the thread's checkpoints, while
the run goes on. See docs/viewer.md.
"""

from __future__ import annotations

import asyncio
import re
from importlib import resources

from fastapi import APIRouter, Request
from fastapi.responses import Response

from flowcore.server.auth import Caller, services_of
from flowcore.server.errors import NotFoundError
from flowcore.server.graph_view import RunGraph, graph_data
from flowcore.server.models import error_responses
from flowcore.server.node_io import RunNodeIO, thread_node_io

__all__ = ["CONTENT_SECURITY_POLICY", "router"]

router = APIRouter(responses=error_responses(400, 401, 404, 413, 422, 429))

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "img-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
"""What the page may load: its own scripts, styles and API calls from this server, nothing else."""

_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # The page is small and changes with flowcore's version; revalidate rather than go stale.
    "Cache-Control": "no-cache",
}
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,40}\.(?:js|css|svg)$")
_cache: dict[str, bytes] = {}


def _read(name: str) -> bytes | None:
    path = resources.files("flowcore.server").joinpath("static", name)
    return path.read_bytes() if path.is_file() else None


async def _asset(name: str) -> bytes | None:
    if name not in _cache:
        # Package data may sit in a zip or on a slow disk: read it off the event loop, once.
        data = await asyncio.to_thread(_read, name)
        if data is None:
            return None
        _cache[name] = data
    return _cache[name]


def _page(name: str, body: bytes) -> Response:
    suffix = name[name.rfind(".") :]
    return Response(body, media_type=_TYPES[suffix], headers=dict(_HEADERS))


@router.get("/ui", include_in_schema=False)
async def viewer_page() -> Response:
    """The run viewer's page (it asks for an API key; no key is needed to load it)."""
    body = await _asset("index.html")
    if body is None:  # pragma: no cover - only a broken install lacks its package data
        raise NotFoundError("the run viewer's files are not installed with this flowcore")
    return _page("index.html", body)


@router.get("/ui/static/{name}", include_in_schema=False)
async def viewer_asset(name: str) -> Response:
    """One of the page's own scripts or stylesheets."""
    body = await _asset(name) if _NAME.match(name) else None
    if body is None:
        raise NotFoundError(f"the run viewer has no file {name!r}")
    return _page(name, body)


@router.get(
    "/api/runs/{run_id}/graph",
    response_model=RunGraph,
    tags=["runs"],
    summary="The run's graph as nodes and edges",
)
async def run_graph(run_id: str, key: Caller, request: Request) -> RunGraph:
    """Nodes (``__start__``/``__end__`` for START/END) and edges to draw, and the Mermaid text.

    Empty lists when the run's graph is no longer registered (the run still shows).
    """
    manager = services_of(request).runs
    row = await manager.get(key.user_id, run_id)
    try:
        resolved = await manager.resolve(row)
        graph = await resolved.compiled(manager.executor.runner)
        nodes, edges = await graph_data(graph)
        mermaid = await resolved.mermaid(manager.executor.runner)
    except Exception:  # the graph is gone: draw nothing rather than fail the page
        return RunGraph(run_id=row.run_id, target=row.target_name)
    return RunGraph(
        run_id=row.run_id, target=row.target_name, nodes=nodes, edges=edges, mermaid=mermaid
    )


@router.get(
    "/api/runs/{run_id}/nodes",
    response_model=RunNodeIO,
    tags=["runs"],
    summary="Each node's inputs and outputs on the run's thread",
)
async def run_node_io(run_id: str, key: Caller, request: Request) -> RunNodeIO:
    """The state each node read and the update it wrote, from the thread's checkpoints.

    Available while the run goes on; empty for a run without a thread or checkpoints.
    """
    services = services_of(request)
    manager = services.runs
    row = await manager.get(key.user_id, run_id)
    try:
        resolved = await manager.resolve(row)
        graph = await resolved.compiled(manager.executor.runner)
    except Exception:  # the graph is gone: nothing to read the thread with
        graph = None
    nodes = await thread_node_io(graph, row.thread_id, services.redactor)
    return RunNodeIO(run_id=row.run_id, thread_id=row.thread_id, nodes=nodes)
