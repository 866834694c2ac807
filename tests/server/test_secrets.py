"""No secret in any response or log line, even when a graph puts one into its state or errors."""

from __future__ import annotations

import logging
from typing import Any, TypedDict

import pytest

from flowcore import START, Graph
from flowcore.secrets import SecretRedactor
from tests.server.conftest import MakeServer

SECRET = "sk-test-Hk2Vn8Qp4Rw6Ty1Uz3Xc5"


class LeakState(TypedDict, total=False):
    text: str
    echoed: str


async def _echo(state: LeakState) -> dict[str, Any]:
    return {"echoed": f"using {SECRET} for {state.get('text', '')}"}


async def _explode(state: LeakState) -> dict[str, Any]:
    raise RuntimeError(f"the provider refused key {SECRET}")


async def test_secrets_in_state_events_and_errors_never_reach_a_response_or_a_log(
    make_server: MakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    redactor = SecretRedactor.from_environment({"OPENAI_API_KEY": SECRET})
    server = await make_server(redactor=redactor)
    checkpointer = server.manager.executor.runner.checkpointer
    leaky = Graph(LeakState, name="leaky").add_node("echo", _echo).add_edge(START, "echo")
    broken = Graph(LeakState, name="broken").add_node("boom", _explode).add_edge(START, "boom")
    server.manager.executor.register("leaky", leaky.compile(checkpointer=checkpointer))
    server.manager.executor.register("broken", broken.compile(checkpointer=checkpointer))
    caplog.set_level(logging.DEBUG)
    bodies: list[str] = []
    for graph in ("leaky", "broken"):
        started = await server.ada.post(
            "/api/runs", json={"target": {"graph": graph}, "input": {"text": "hello"}}
        )
        bodies.append(started.text)
        run_id = started.json()["run_id"]
        for path in (
            f"/api/runs/{run_id}/events",
            f"/api/runs/{run_id}",
            f"/api/runs/{run_id}/ui-stream",
            f"/api/runs/{run_id}/state",
            f"/api/executions/{run_id}",
            "/api/runs",
            "/api/executions",
        ):
            bodies.append((await server.ada.get(path)).text)
    detail = (await server.ada.get(f"/api/runs/{run_id}")).json()
    assert detail["status"] == "failed"
    assert "[REDACTED]" in detail["error"]
    # The secret sent in a request is not echoed back in the error either.
    echoed = await server.ada.post("/api/runs", json={"target": {"graph": SECRET}})
    assert echoed.status_code == 404
    bodies.append(echoed.text)
    hits = [b for b in bodies if redactor.contains_secret(b)]
    assert hits == []
    assert any("[REDACTED]" in b for b in bodies)
    assert not redactor.contains_secret(caplog.text)
