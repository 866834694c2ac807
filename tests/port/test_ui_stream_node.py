"""Spec: the `ai` npm package itself accepts flowcore's UI message streams.

Four real runs (a text answer, a tool loop, an interrupted run, a failed
run) are recorded as the bytes a client receives, then
``tests/aisdk_node/check.mjs`` reads each with the SDK's own
``parseJsonEventStream`` and ``uiMessageChunkSchema`` and assembles the
assistant message with ``readUIMessageStream``. Every chunk sent must
parse, and the messages must hold the runs' text, tool calls, interrupt
and error.

Needs ``node`` and ``npm ci`` run in ``tests/aisdk_node`` (``.ci/run`` does
both). Without them the test skips, unless ``FLOWCORE_REQUIRE_AISDK=1``
(set by ``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flowcore.port import sse_stream

from .ui_streams import (
    ANSWER,
    SECRET,
    STREAMS,
    executor,
    record_texts,
    request,
    write_streams,
)

NODE_DIR = Path(__file__).resolve().parents[1] / "aisdk_node"
GUARD = 120.0  # seconds: only reached if node hangs


def node_or_skip() -> str:
    node = shutil.which("node")
    missing = None
    if node is None:
        missing = "node is not installed (apt-get install -y nodejs npm)"
    elif not (NODE_DIR / "node_modules" / "ai" / "package.json").exists():
        missing = f"the ai package is not installed: run `npm ci` in {NODE_DIR}"
    if missing is not None:
        if os.environ.get("FLOWCORE_REQUIRE_AISDK") == "1":
            pytest.fail(f"FLOWCORE_REQUIRE_AISDK=1 but {missing}")
        pytest.skip(missing)
    assert node is not None
    return node


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, dict[str, Any]]]:
    node = node_or_skip()
    directory = tmp_path_factory.mktemp("ui_streams")
    write_streams(asyncio.run(record_texts()), directory)
    proc = subprocess.run(
        [node, str(NODE_DIR / "check.mjs"), str(directory)],
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )
    print(proc.stdout, end="")  # the figures: shown with -s (.ci/run does)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reports = {
        name: json.loads((directory / f"{name}.message.json").read_text()) for name in STREAMS
    }
    return proc.stdout, reports


def parts(report: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [p for p in report["message"]["parts"] if p["type"] == kind]


def test_every_chunk_of_every_recorded_stream_parses_with_the_sdk_schema(
    checked: tuple[str, dict[str, dict[str, Any]]],
) -> None:
    out, reports = checked
    for name in STREAMS:
        report = reports[name]
        assert report["invalid"] == []
        assert report["parsed"] == report["sent"] > 0
        assert f"{name}: {report['parsed']} / {report['sent']} chunks parsed;" in out
        assert report["endsWithDone"]
        assert report["finishChunks"] == 1
        assert report["processingErrors"] == []
    assert "4 of 4 streams valid" in out


def test_the_sdk_assembles_the_text_of_the_answer(
    checked: tuple[str, dict[str, dict[str, Any]]],
) -> None:
    report = checked[1]["text_run"]
    texts = parts(report, "text")
    assert [t["text"] for t in texts] == [json.dumps({"answer": ANSWER})]
    assert texts[0]["state"] == "done"
    assert report["message"]["id"] == "msg-text_run"
    assert report["message"]["metadata"]["status"] == "completed"


def test_the_sdk_assembles_the_tool_loop_with_inputs_outputs_and_the_refused_call(
    checked: tuple[str, dict[str, dict[str, Any]]],
) -> None:
    report = checked[1]["tool_loop"]
    tools = parts(report, "tool-lookup")
    assert [(t["toolCallId"], t["state"]) for t in tools] == [
        ("call-1", "output-available"),
        ("call-2", "output-available"),
        ("call-3", "output-error"),
    ]
    assert tools[0]["input"] == {"topic": "life"}
    assert tools[0]["output"] == {"fact": "life is 42"}  # only the allowlisted field
    assert tools[2]["errorText"].startswith("validation:")
    assert len(parts(report, "step-start")) == 3  # one step per model call
    assert report["message"]["metadata"]["usage"]["calls"] == 3


def test_the_sdk_keeps_the_interrupt_and_the_latest_state_of_each_node(
    checked: tuple[str, dict[str, dict[str, Any]]],
) -> None:
    report = checked[1]["interrupted_run"]
    (question,) = parts(report, "data-interrupt")
    assert question["data"]["value"] == {
        "question": "Approve this plan?",
        "plan": "Ship on Friday.",
    }
    nodes = {p["id"]: p["data"]["status"] for p in parts(report, "data-node")}
    assert nodes == {"draft#1": "completed", "approve#1": "running"}
    assert report["message"]["metadata"]["status"] == "interrupted"


def test_the_sdk_reports_the_failed_runs_error_without_the_secret(
    checked: tuple[str, dict[str, dict[str, Any]]],
) -> None:
    report = checked[1]["failed_run"]
    assert len(report["streamErrors"]) == 1
    assert "upstream refused key [REDACTED]" in report["streamErrors"][0]
    assert SECRET not in json.dumps(report)
    (text,) = parts(report, "text")
    assert text["state"] == "done"  # the partial answer is closed, not left streaming
    assert ANSWER.startswith(text["text"])


async def native_sse_text() -> str:
    async with executor() as runner:
        return "".join([line async for line in sse_stream(runner.run(request("tool_loop")))])


def test_the_check_fails_on_a_stream_that_is_not_the_sdk_protocol(tmp_path: Path) -> None:
    # flowcore's own SSE (event:/id:/data: AiEvents) is what issue 19 measured: 0 chunks valid.
    node = node_or_skip()
    (tmp_path / "native.sse").write_text(asyncio.run(native_sse_text()), encoding="utf-8")
    proc = subprocess.run(
        [node, str(NODE_DIR / "check.mjs"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )
    assert proc.returncode == 1
    assert "native: 0 / " in proc.stdout
    assert "0 of 1 streams valid" in proc.stdout


def test_the_example_servers_ai_sdk_stream_parses_with_the_sdk(tmp_path: Path) -> None:
    node = node_or_skip()
    example = NODE_DIR.parents[1] / "examples" / "port_app.py"
    run = subprocess.run(
        [sys.executable, "-W", "error", str(example), "--once", "--ai-sdk"],
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=True,
    )
    (tmp_path / "port_app.sse").write_text(run.stdout, encoding="utf-8")
    proc = subprocess.run(
        [node, str(NODE_DIR / "check.mjs"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "port_app.message.json").read_text())
    (tool,) = parts(report, "tool-lookup")
    assert tool["state"] == "output-available"
    assert "archive_page" not in json.dumps(tool)  # not on the tool's allowlist
