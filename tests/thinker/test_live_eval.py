"""Spec: the evaluation's ``--live`` path talks to an OpenAI-compatible server over HTTP.

The server here is a loopback one whose answers come from the offline
Thinker model, so the spec shows the wiring (environment -> provider ->
real OpenAI SDK -> HTTP -> Thinker stages), not a model's quality.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from flowcore.llm.types import LLMRequest, Message
from flowcore.thinker import ThinkerModel
from tests.llm.loopback import LoopbackServer, Received, openai_stream

BENCH = Path(__file__).resolve().parents[2] / "bench" / "thinker_eval.py"


class ModelServer(LoopbackServer):
    """Answers every chat completion with what ``ThinkerModel`` says, streamed."""

    def __init__(self) -> None:
        super().__init__()
        self.model = ThinkerModel()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = (await reader.readline()).decode()
            if not request_line:
                return
            method, path, _ = request_line.split(" ", 2)
            headers: dict[str, str] = {}
            while (line := (await reader.readline()).decode()) not in ("\r\n", "\n", ""):
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            body: dict[str, Any] = json.loads(await reader.readexactly(length))
            self.requests.append(Received(method, path, headers, body))
            response = await self.model.complete(_as_request(body))
            usage = (response.usage.input_tokens, response.usage.output_tokens)
            await self._respond(writer, openai_stream([response.text], usage=usage))
        finally:
            writer.close()
            await writer.wait_closed()


def _as_request(body: dict[str, Any]) -> LLMRequest:
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), None)
    messages = tuple(
        Message(m["role"], m["content"]) for m in body["messages"] if m["role"] != "system"
    )
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
    return LLMRequest(messages=messages, system=system, response_schema=schema)


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("thinker_eval_live", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["thinker_eval_live"] = module
    spec.loader.exec_module(module)
    return module


async def test_live_evaluation_runs_over_an_openai_compatible_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bench = _bench()
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "FLOWCORE_PROVIDER", "FLOWCORE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    async with ModelServer() as server:
        monkeypatch.setenv("FLOWCORE_BASE_URL", f"{server.url}/v1")
        cases = [bench.CASES[0], bench.CASES[3]]
        rows = await bench.evaluate(cases, live=True)
    assert [r.problems for r in rows] == [[], []]
    assert [(r.status, r.valid, r.runs) for r in rows] == [("complete", "yes", "yes")] * 2
    stages = [
        m["content"].split("THINKER STAGE: ")[1].split()[0]
        for r in server.requests
        for m in r.body["messages"]
        if "THINKER STAGE: " in m["content"]
    ]
    assert stages == ["decompose", "wire", "decompose", "create", "wire"]
    assert all(r.path == "/v1/chat/completions" for r in server.requests)
