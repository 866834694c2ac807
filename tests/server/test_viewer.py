"""The run viewer's routes over ASGI: its page and files, the graph as data, node inputs/outputs.

The browser spec (test_viewer_browser.py) shows the page working; these pin
what the server promises the page: a strict Content-Security-Policy, only
its own files, no way to run markup from a value, and the run's structure.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from importlib import resources
from typing import Any

from flowcore import START, Graph
from flowcore.secrets import NO_REDACTION
from flowcore.server.node_io import thread_node_io
from tests.server.conftest import Server
from tests.server.graphs import EchoState, _upper

STATIC = resources.files("flowcore.server").joinpath("static")


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


async def test_the_page_loads_without_a_key_under_a_strict_policy(server: Server) -> None:
    page = await server.clients["anonymous"].get("/ui")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    for directive in ("default-src 'none'", "script-src 'self'", "connect-src 'self'"):
        assert directive in policy
    assert "unsafe" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    parser = _Tags()
    parser.feed(page.text)
    scripts = [attrs for tag, attrs in parser.tags if tag == "script"]
    assert scripts, "the page loads its script"
    assert all(str(a.get("src", "")).startswith("/ui/static/") for a in scripts)
    linked = [a["href"] for tag, a in parser.tags if tag == "link" and a.get("href")]
    for path in [*(str(a["src"]) for a in scripts), *(str(h) for h in linked)]:
        answer = await server.clients["anonymous"].get(path)
        assert answer.status_code == 200, path
        assert "script-src 'self'" in answer.headers["content-security-policy"]


def test_the_page_code_inserts_values_as_text_and_loads_nothing_from_elsewhere() -> None:
    """No HTML parsing of values anywhere in the page's code, and no URL off this server."""
    code = {p.name: p.read_text() for p in STATIC.iterdir() if p.name.endswith((".js", ".html"))}
    assert {"app.js", "api.js", "run.js", "graph.js", "index.html"} <= set(code)
    for name, text in code.items():
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in text, f"{name} uses {sink}"
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text), f"{name} names a URL"
        if name.endswith(".js"):
            assert len(text.splitlines()) <= 600, f"{name} is over 600 lines"
            # The key lives in sessionStorage and the Authorization header only.
            assert "localStorage" not in text
            assert "console.log" not in text


async def test_only_the_page_files_are_served(server: Server) -> None:
    anonymous = server.clients["anonymous"]
    for path in (
        "/ui/static/nothing.js",
        "/ui/static/viewer.py",
        "/ui/static/..%2Fviewer.py",
        "/ui/static/.hidden.js",
        "/ui/static/index.html",
    ):
        answer = await anonymous.get(path)
        assert answer.status_code == 404, path
        assert answer.json()["error"]["code"] == "not-found"


async def _interrupted(server: Server) -> dict[str, Any]:
    started = await server.ada.post(
        "/api/runs", json={"target": {"graph": "approval"}, "input": {"draft": "<b>hi</b>"}}
    )
    assert started.status_code == 201, started.text
    run = await server.finished(server.ada, started.json()["run_id"])
    assert run["status"] == "interrupted"
    return run


async def test_the_graph_comes_as_nodes_and_edges_with_its_mermaid_text(server: Server) -> None:
    run = await _interrupted(server)
    answer = await server.ada.get(f"/api/runs/{run['run_id']}/graph")
    assert answer.status_code == 200, answer.text
    graph = answer.json()
    assert [n["id"] for n in graph["nodes"]] == ["__start__", "draft", "approve", "send"]
    assert [n["kind"] for n in graph["nodes"]] == ["start", "node", "node", "node"]
    assert [(e["source"], e["target"], e["kind"]) for e in graph["edges"]] == [
        ("__start__", "draft", "edge"),
        ("draft", "approve", "edge"),
        ("approve", "send", "edge"),
    ]
    assert graph["mermaid"] == run["mermaid"]
    assert graph["mermaid"].startswith("flowchart TD")


async def test_each_node_shows_what_it_read_and_wrote_while_the_thread_goes_on(
    server: Server,
) -> None:
    run = await _interrupted(server)
    answer = await server.ada.get(f"/api/runs/{run['run_id']}/nodes")
    assert answer.status_code == 200, answer.text
    nodes = {n["node"]: n for n in answer.json()["nodes"]}
    assert nodes["draft"]["inputs"] == {"draft": "<b>hi</b>"}
    assert nodes["draft"]["outputs"] == {"draft": "Dear team, <b>hi</b>"}
    assert nodes["approve"]["status"] == "interrupted"
    assert "send" not in nodes

    resumed = await server.ada.post(f"/api/runs/{run['run_id']}/resume", json={"value": True})
    assert resumed.status_code == 202, resumed.text
    follow_up = await server.finished(server.ada, resumed.json()["run_id"])
    assert follow_up["status"] == "completed"
    answer = await server.ada.get(f"/api/runs/{follow_up['run_id']}/nodes")
    nodes = {n["node"]: n for n in answer.json()["nodes"]}
    assert nodes["approve"]["outputs"] == {"approved": True}
    assert nodes["send"]["inputs"]["approved"] is True
    assert nodes["send"]["outputs"] == {"sent": True}


async def test_a_pipeline_runs_nodes_show_their_block_results(server: Server) -> None:
    started = await server.ada.post(
        "/api/runs",
        json={
            "target": {
                "pipeline": {
                    "id": "digest",
                    "name": "Digest",
                    "nodes": [
                        {"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}}
                    ],
                }
            },
            "input": {"doc": "a long text"},
        },
    )
    assert started.status_code == 201, started.text
    run = await server.finished(server.ada, started.json()["run_id"])
    graph = (await server.ada.get(f"/api/runs/{run['run_id']}/graph")).json()
    assert "n1" in [n["id"] for n in graph["nodes"]]
    nodes = (await server.ada.get(f"/api/runs/{run['run_id']}/nodes")).json()
    by_node = {n["node"]: n for n in nodes["nodes"]}
    assert by_node["n1"]["inputs"]["doc"] == "a long text"
    assert by_node["n1"]["outputs"]["results"]["n1"]["summary"].startswith("offline answer")


async def test_a_graph_without_checkpoints_has_no_node_io() -> None:
    plain = Graph(EchoState).add_node("upper", _upper).add_edge(START, "upper").compile()
    assert await thread_node_io(plain, "t1", NO_REDACTION) == []
    assert await thread_node_io(object(), "t1", NO_REDACTION) == []


async def test_another_users_run_is_not_found_and_no_key_is_refused(server: Server) -> None:
    run = await _interrupted(server)
    for suffix in ("graph", "nodes"):
        path = f"/api/runs/{run['run_id']}/{suffix}"
        assert (await server.bob.get(path)).status_code == 404
        assert (await server.clients["anonymous"].get(path)).status_code == 401
        assert (await server.ada.get(f"/api/runs/nope/{suffix}")).status_code == 404
