"""The run viewer in a real browser: Debian's Chromium, driven by Playwright, on a real server.

A ``flowcore serve`` process serves ``tests.server.viewer_graphs``; the
browser signs in, starts a ``review`` run, watches its nodes turn done over
the live stream, answers the interrupt in the answer box, sees the continued
run complete, searches the block registry, and shows a run whose output is
markup as plain text (no script runs). Every wait is on the page's DOM, never
a sleep. Screenshots go to ``tests/artifacts/viewer/`` (git-ignored).

Skips when Playwright or Chromium is missing, unless
``FLOWCORE_REQUIRE_BROWSER=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("uvicorn")

from tests.server.live import ROOT, Served, new_key
from tests.server.viewer_graphs import PAYLOAD

REQUIRED = os.environ.get("FLOWCORE_REQUIRE_BROWSER") == "1"
ARTIFACTS = ROOT / "tests" / "artifacts" / "viewer"
WAIT_MS = 60_000  # a guard for a busy machine: every wait ends as soon as the DOM is ready


def _missing(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"FLOWCORE_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


def _chromium() -> str | None:
    named = os.environ.get("FLOWCORE_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture
def browser() -> Iterator[Any]:
    """Chromium from the OS packages (Playwright downloads no browser)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed (pip install 'flowcore[browser]')")
    executable = _chromium()
    if executable is None:
        _missing(
            "no Chromium on PATH, or FLOWCORE_CHROMIUM is not executable (apt-get install chromium)"
        )
    # Chromium's own sandbox cannot start as root (CI containers): only then go without it.
    args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=args)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Served, str, Path]]:
    """A real ``flowcore serve`` with the viewer graphs, a key for ada, and the gate file."""
    gate = tmp_path / "gate"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FLOWCORE_PROVIDER": "offline",
        "FLOWCORE_VIEWER_GATE": str(gate),
        "FLOWCORE_TEST_TRACE": str(tmp_path / "trace.txt"),
    }
    db = tmp_path / "flowcore.db"
    token = new_key(env, db, "ada")
    started: list[Served] = []
    server = Served(
        db,
        env,
        tmp_path / "server.log",
        started,
        "--graphs",
        "tests.server.viewer_graphs:build",
    )
    try:
        yield server, token, gate
    finally:
        for one in started:
            one.kill()
        log = (tmp_path / "server.log").read_text()
        assert token not in log, "the API key was written to the server's log"


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")


def _node(page: Any, name: str, status: str) -> None:
    page.wait_for_selector(f'g.node[data-node="{name}"][data-status="{status}"]')


def _run_status(page: Any, status: str) -> None:
    page.wait_for_selector(f'#run-status[data-status="{status}"]')


def _sign_in(page: Any, base: str, token: str) -> None:
    page.goto(base + "/ui")
    page.fill("#api-key", "not-a-key")
    page.click("#signin-button")
    page.wait_for_selector("#signin-error:has-text('not accepted')")
    page.fill("#api-key", token)
    page.click("#signin-button")
    page.wait_for_selector('#runs[data-loaded="true"]')


def _start(page: Any, graph: str, run_input: str) -> str:
    page.goto(page.url.split("#")[0] + "#/runs")
    page.wait_for_selector(f'#start-graph option[value="{graph}"]', state="attached")
    page.select_option("#start-graph", graph)
    page.fill("#start-input", run_input)
    page.click("#start-run")
    page.wait_for_url(re.compile(r"#/runs/[0-9a-f]+$"))
    return str(page.url.rsplit("/", 1)[1])


def test_watch_a_run_answer_its_interrupt_and_see_it_complete(
    browser: Any, served: tuple[Served, str, Path]
) -> None:
    server, token, gate = served
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(WAIT_MS)
    problems: list[str] = []
    urls: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: urls.append(r.url))

    _sign_in(page, server.base, token)
    assert page.evaluate("Object.keys(sessionStorage)") == ["flowcore.viewer.apiKey"]
    problems.clear()  # the wrong key's 401, tried on purpose while signing in

    # Start a run from the page; research finishes, outline is held running by the gate.
    first = _start(page, "review", '{"topic": "graph engines"}')
    _node(page, "research", "done")
    _node(page, "outline", "running")
    _run_status(page, "running")
    for pending in ("approve", "publish"):
        _node(page, pending, "pending")
    page.click('g.node[data-node="research"]')
    page.wait_for_selector("#node-outputs:has-text('offline answer')")
    assert page.text_content("#node-tokens") != "0 in / 0 out"
    _shot(page, "running")

    # Open the gate: the live stream turns outline done and approve paused.
    gate.touch()
    _node(page, "outline", "done")
    _node(page, "approve", "paused")
    _run_status(page, "interrupted")
    page.wait_for_selector(".interrupt-value:has-text('Publish this outline?')")
    _shot(page, "paused")

    # Answer in the answer box: the page follows the run that continues the thread.
    page.fill(".answer", "true")
    page.click(".answer-send")
    page.wait_for_url(re.compile(r"#/runs/(?!" + first + r")[0-9a-f]+$"))
    _node(page, "publish", "done")
    _run_status(page, "completed")
    for earlier in ("research", "outline", "approve"):
        _node(page, earlier, "done")
    page.wait_for_selector("#result-output:has-text('\"published\": true')")
    page.click('g.node[data-node="publish"]')
    page.wait_for_selector("#node-outputs:has-text('\"published\": true')")
    assert "flowchart TD" in (page.text_content("#mermaid-text") or "")
    _shot(page, "completed")

    # The run list shows both runs of the thread, refreshed.
    page.click("#nav-runs")
    page.wait_for_selector(f'#runs-body tr[data-run="{first}"][data-status="interrupted"]')
    page.wait_for_selector('#runs-body tr[data-status="completed"]')
    # A run started elsewhere (here through the API) appears without reloading the page.
    started = httpx.post(
        server.base + "/api/runs",
        json={"target": {"graph": "untrusted"}},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert started.status_code == 201, started.text
    page.wait_for_selector(f'#runs-body tr[data-run="{started.json()["run_id"]}"]')
    _shot(page, "runs")

    # The block registry: everything, then a search.
    page.click("#nav-blocks")
    page.wait_for_selector("#blocks li.block")
    page.fill("#block-query", "summarize")
    page.click("#block-search")
    page.wait_for_selector('#blocks[data-query="summarize"] li[data-block="summarize"]')
    _shot(page, "blocks")

    assert problems == [], problems
    assert not [u for u in urls if token in u], "the API key went into a URL"


def test_untrusted_output_shows_as_text_and_runs_no_script(
    browser: Any, served: tuple[Served, str, Path]
) -> None:
    server, token, _ = served
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(WAIT_MS)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    _sign_in(page, server.base, token)
    problems.clear()  # the wrong key's 401, tried on purpose while signing in
    title = page.title()

    _start(page, "untrusted", "{}")
    _run_status(page, "completed")
    page.click('g.node[data-node="write_reply"]')
    page.wait_for_selector("#node-outputs:has-text('onerror')")
    shown = json.dumps(PAYLOAD)  # the page shows values as indented JSON
    assert shown in (page.text_content("#node-outputs") or "")
    assert shown in (page.text_content("#result-output") or "")
    # Shown as text: no element was made from it and none of its script ran.
    assert page.locator("#main img").count() == 0
    assert page.locator("#main script").count() == 0
    assert page.evaluate("window.__xss") is None
    assert page.title() == title
    _shot(page, "untrusted-output")
    assert problems == [], problems


def test_the_page_refuses_inline_script_and_foreign_origins(
    browser: Any, served: tuple[Served, str, Path]
) -> None:
    """The CSP header holds even if markup got in: an inline script is blocked by the browser."""
    server, _, _ = served
    page = browser.new_page()
    page.set_default_timeout(WAIT_MS)
    response = page.goto(server.base + "/ui")
    assert response is not None
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    # Inject an inline script the way an XSS bug would; the browser must refuse to run it.
    page.evaluate(
        "() => { document.addEventListener('securitypolicyviolation',"
        " (e) => { window.__violated = e.effectiveDirective; });"
        " const s = document.createElement('script');"
        " s.textContent = 'window.__inline = 1'; document.body.append(s); }"
    )
    page.wait_for_function("() => window.__violated !== undefined")
    assert page.evaluate("window.__violated") == "script-src-elem"
    assert page.evaluate("window.__inline") is None


def test_the_layout_puts_each_node_below_what_leads_to_it(
    browser: Any, served: tuple[Served, str, Path]
) -> None:
    """The page's own layered layout (graph.js), run in the browser on joins, a router and loops."""
    server, _, _ = served
    page = browser.new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(server.base + "/ui")
    layers = page.evaluate(
        """async () => {
            const { layout } = await import("/ui/static/graph.js");
            const node = (id) => ({ id, label: id, kind: "node" });
            const edge = (source, target, loop = false) => ({ source, target, kind: "edge", loop });
            const joined = layout(
              ["__start__", "a", "b", "c", "check", "__end__"].map(node),
              [edge("__start__", "a"), edge("__start__", "b"), edge("a", "c"), edge("b", "c"),
               edge("c", "check"), edge("check", "c", true), edge("check", "__end__")],
            );
            // A drawing whose cycle is not marked as a loop still gets a layout.
            const unmarked = layout(["x", "y"].map(node), [edge("x", "y"), edge("y", "x")]);
            const layer = (drawn) =>
              Object.fromEntries(Object.entries(drawn.at).map(([id, p]) => [id, p.layer]));
            return { joined: layer(joined), unmarked: layer(unmarked) };
        }"""
    )
    assert layers["joined"] == {"__start__": 0, "a": 1, "b": 1, "c": 2, "check": 3, "__end__": 4}
    assert sorted(layers["unmarked"].values()) == [0, 1]
