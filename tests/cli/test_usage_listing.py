"""Spec: the CLI's run listing and run view count the tokens of a failed run's calls.

The model is the real OpenAI SDK (``--provider local``) talking to a
loopback server that answers six times with text that is not JSON, 10
tokens in and 12 out each: the run fails, and ``flowcore runs list`` /
``flowcore runs show`` say 132 tokens, 60 in / 72 out (issue 19 measured
``0 in / 0 out``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest

from tests.llm.loopback import LoopbackServer, openai_stream

from .conftest import Outcome, Project


@pytest.fixture
def model_server() -> Iterator[LoopbackServer]:
    """A loopback OpenAI-compatible server on its own thread (the CLI runs its own loop)."""
    loop = asyncio.new_event_loop()
    server = LoopbackServer()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.__aenter__())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(server.__aexit__(None, None, None))
        loop.close()

    thread = threading.Thread(target=serve, name="loopback-model", daemon=True)
    thread.start()
    assert ready.wait(30)
    try:
        yield server
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)


def test_a_failed_runs_tokens_show_in_the_listing_and_the_run_view(
    cli: Callable[..., Outcome],
    project: Project,
    model_server: LoopbackServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model_server.replies.extend(openai_stream(["not ", "json"], usage=(10, 12)) for _ in range(6))
    monkeypatch.setenv("FLOWCORE_BASE_URL", f"{model_server.url}/v1")

    ran = cli("run", str(project.greeting), "--input", "name=Ada", "--blocks", str(project.blocks))
    listed = cli("runs", "list")
    run_id = listed.out.splitlines()[2].split()[0]
    shown = cli("runs", "show", run_id)

    assert ran.code == 1, ran.err
    assert len(model_server.requests) == 6
    assert "tokens 60 in / 72 out" in ran.out
    assert "6 model calls" in ran.out
    header, _, row = listed.out.splitlines()[:3]
    assert header.split()[-1] == "tokens"
    assert row.split()[4] == "failed"
    assert row.split()[-1] == "132"
    assert "tokens 60 in / 72 out" in shown.out
    hello = next(line for line in shown.out.splitlines() if line.startswith("hello "))
    assert hello.split()[1:5] == ["failed", hello.split()[2], "60", "72"]
